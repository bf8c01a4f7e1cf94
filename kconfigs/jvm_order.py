"""The orders in which the JVM collections kafka-configs builds iterate, so that the messages
listing several keys name them in the order Kafka prints (pure functions over strings)."""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

_MASK = 0xFFFFFFFF
T = TypeVar("T")


def java_string_hash(text: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as an unsigned 32-bit value."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & _MASK
    return h


def _spread(key: str) -> int:
    """``ConcurrentHashMap.spread``: the hash a key is binned by (also HashMap's, minus the sign)."""
    h = java_string_hash(key)
    return (h ^ (h >> 16)) & 0x7FFFFFFF


def _transfer(table: list[list[str]]) -> list[list[str]]:
    """``ConcurrentHashMap.transfer``: each bin splits in two by one more hash bit. The nodes
    from the last run of equal bits on keep their order; the ones before it are prepended one
    by one to their half, so they come out reversed, in front of that run."""
    n = len(table)
    doubled: list[list[str]] = [[] for _ in range(2 * n)]
    for i, nodes in enumerate(table):
        if not nodes:
            continue
        bits = [bool(_spread(key) & n) for key in nodes]
        last_run = len(nodes) - 1
        while last_run > 0 and bits[last_run - 1] == bits[-1]:
            last_run -= 1
        for half, bit in ((i, False), (i + n, True)):
            prefix = [key for key, b in zip(nodes[:last_run], bits[:last_run]) if b == bit]
            doubled[half] = prefix[::-1] + (nodes[last_run:] if bits[-1] == bit else [])
    return doubled


def java_properties_order(keys: Sequence[str], copied: bool = False) -> list[str]:
    """Iteration order of a ``java.util.Properties`` (JDK 9+: a ConcurrentHashMap) into which
    ``keys`` were put in order; ``copied``: of a new Properties given them by ``putAll`` from such
    a one (as kafka-configs 3.x and 4.x copy a loaded file), whose table is sized for them up front.

    A new Properties has 16 bins and doubles once it holds 3/4 of them (``transfer``); a key
    sits in bin ``spread(hashCode) & (bins - 1)``, appended to the bin's list. A bin of 8 keys
    would grow the table or turn into a tree; kafka-configs' key sets never get near that."""
    distinct = list(dict.fromkeys(keys))
    bins = 16
    if copied:
        distinct = java_properties_order(distinct)
        wanted = _table_size_for(len(distinct) + (len(distinct) >> 1) + 1)  # tryPresize
        bins = max(bins, wanted)
        while wanted > bins - (bins >> 2):
            bins *= 2
    table: list[list[str]] = [[] for _ in range(bins)]
    for count, key in enumerate(distinct, start=1):
        table[_spread(key) & (len(table) - 1)].append(key)
        if count >= len(table) - (len(table) >> 2):
            table = _transfer(table)
    return [key for nodes in table for key in nodes]


def _table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two at least ``capacity``."""
    size = 1
    while size < capacity:
        size *= 2
    return size


def java_hash_set_copy_bins(size: int) -> int:
    """Bins of ``new HashSet<>(c)`` for a collection of ``size`` (JDK 17:
    ``max((int) (size / .75f) + 1, 16)``, rounded up to a power of two)."""
    return _table_size_for(max(int(size / 0.75) + 1, 16))


def java_hash_order(keys: Sequence[str], bins: int = 16) -> list[str]:
    """Iteration order of a ``java.util.HashMap`` / ``HashSet`` (JDK 8+) after adding ``keys`` in
    order, starting with ``bins`` bins (see :func:`java_hash_map_order`)."""
    return java_hash_map_order(list(dict.fromkeys(keys)), java_string_hash, bins)


def java_hash_map_order(items: Sequence[T], hash_code: Callable[[T], int], capacity: int = 16) -> list[T]:
    """Iteration order of a ``java.util.HashMap`` made with ``new HashMap<>(capacity)`` into
    which the distinct ``items`` were put in order; ``hash_code`` is their ``hashCode()``.

    The table starts at ``tableSizeFor(capacity)`` bins and doubles once it holds more than 3/4
    of them; an item sits in bin ``(h ^ h >>> 16) & (bins - 1)``, each bin keeps its items in
    insertion order (a resize splits a bin without reordering it). A bin of 8 items turns into a
    tree or grows a small table; kafka-configs' key and entity sets never get near that."""
    bins = _table_size_for(max(capacity, 1))
    while len(items) > int(bins * 0.75):
        bins *= 2

    def bin_of(item: T) -> int:
        h = hash_code(item) & _MASK
        return (h ^ (h >> 16)) & (bins - 1)

    return sorted(items, key=bin_of)  # stable: insertion order within a bin


def scala_hash_set_order(names: list[str]) -> list[str]:
    """The order in which Kafka 2.8 (Scala 2.13) prints a ``mutable.HashSet`` of strings, so the
    unknown-key message matches kafka-configs for several keys too (checked against 2.8.2).

    The set's table starts at 16 slots and doubles once it holds 0.75 x its size; an element
    sits in slot ``h & (size - 1)`` with ``h = hashCode ^ (hashCode >>> 16)``, and each slot's
    chain is sorted by ``h`` (as a signed int). Iteration walks the slots in order.
    """
    unique = list(dict.fromkeys(names))
    size = 16
    while len(unique) >= int(size * 0.75):
        size *= 2

    def slot(name: str) -> tuple[int, int]:
        h = java_string_hash(name)
        improved = h ^ (h >> 16)
        signed = improved - (1 << 32) if improved & 0x80000000 else improved
        return improved & (size - 1), signed

    return sorted(unique, key=slot)


def _scala_improve(hash_code: int) -> int:
    """Scala 2.13 ``Hashing.improve``: the hash its immutable HashMap and HashSet (CHAMP tries)
    are keyed by."""
    h = (hash_code + (~(hash_code << 9) & _MASK)) & _MASK
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK
    return h ^ (h >> 10)


def scala_champ_order(names: Sequence[str], _shift: int = 0) -> list[str]:
    """Iteration order of a Scala 2.13 immutable ``HashMap``/``HashSet`` of ``names`` (distinct).

    A trie node sorts its entries by 5 bits of the improved hash (lowest first); entries alone
    in their slot are the node's payload, iterated before the sub-nodes that hold slots shared
    by several entries, each sub-node the same way on the next 5 bits.
    """
    if _shift >= 32:  # a collision node: insertion order
        return list(names)
    slots: dict[int, list[str]] = {}
    for name in names:
        slots.setdefault((_scala_improve(java_string_hash(name)) >> _shift) & 31, []).append(name)
    ordered = sorted(slots.items())
    payload = [group[0] for _, group in ordered if len(group) == 1]
    nested = [scala_champ_order(group, _shift + 5) for _, group in ordered if len(group) > 1]
    return payload + [name for node in nested for name in node]


def scala_set_order(names: Sequence[str]) -> list[str]:
    """Iteration order of a Scala 2.13 immutable ``Set`` built by adding ``names`` in order: up
    to 4 elements it keeps them in order (Set1..Set4), beyond that it is a CHAMP HashSet."""
    distinct = list(dict.fromkeys(names))
    return distinct if len(distinct) <= 4 else scala_champ_order(distinct)


class AddedKeys:
    """kafka-configs' map of the keys to add (``configsToBeAdded``), as far as the order of its
    keys goes: parsed into a ``java.util.Properties``, then copied into an immutable Scala Map,
    which keeps the Properties' order up to 4 keys (Map1..Map4) and is a CHAMP HashMap beyond.
    Filtering a HashMap's keys gives the key set of a smaller HashMap (CHAMP order again);
    filtering a small map's keys keeps their order."""

    def __init__(self, keys: Sequence[str], ordered: bool = False) -> None:
        """``keys`` in command-line order, or (``ordered``) already in the Properties' order."""
        distinct = list(dict.fromkeys(keys))
        properties = distinct if ordered else java_properties_order(distinct)
        self.hashed = len(distinct) > 4
        self.order = scala_champ_order(properties) if self.hashed else properties

    def keys_where(self, keep) -> list[str]:
        """``configsToBeAdded.keys.filter(keep)``, in its iteration order."""
        kept = [key for key in self.order if keep(key)]
        return scala_champ_order(kept) if self.hashed else kept

    def keys_plus(self, extra: Sequence[str], keep) -> list[str]:
        """``(configsToBeAdded.keys ++ extra).filter(keep)``: adding an absent key rebuilds the
        key set as a plain Set (Set1..Set4 in order, a CHAMP HashSet beyond); a HashSet filtered
        stays one."""
        new = [key for key in dict.fromkeys(extra) if key not in self.order]
        if not new:
            return self.keys_where(keep)
        combined = scala_set_order(self.order + new)
        kept = [key for key in combined if keep(key)]
        return scala_champ_order(kept) if len(combined) > 4 else kept


def scala_set_text(first: Sequence[str], then: Sequence[str] | None = None) -> str:
    """How Scala prints a key set kafka-configs builds (``first`` in its iteration order): as
    ``Set``; given ``then`` (even empty), ``first ++ then``, a plain Set rebuilt from ``first``,
    which prints as ``HashSet`` once it holds more than 4 keys."""
    if then is None:
        return "Set(" + ", ".join(first) + ")"
    names = scala_set_order([*first, *then])
    return ("HashSet(" if len(names) > 4 else "Set(") + ", ".join(names) + ")"
