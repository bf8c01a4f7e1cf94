"""How kafka-configs over a server lists the keys it refuses, per tool (pure).

Kafka 4.4 rewrote ConfigCommand from Scala to Java. The checks and their wording stayed; the
collections behind them changed, and with them the order keys are named in and how a list is
printed. ``ScalaToolKeys`` is the Scala tool (3.x up to 4.3), ``JavaToolKeys`` the Java one
(4.4 on); both answer the same questions for ``bootstrap_mode``, built from the keys to add (in
command-line order), the keys to delete (joptsimple's value list) and whether the keys to add
came from a file. ``properties_order`` is the order of the tool's Properties of the keys to add.
"""

from __future__ import annotations

from typing import Callable, Sequence

from kconfigs.jvm_order import (
    AddedKeys,
    java_hash_order,
    java_hash_set_copy_bins,
    java_properties_order,
    scala_set_text,
)

Keep = Callable[[str], bool]


class ScalaToolKeys:
    """Scala ConfigCommand: the added keys are a Properties copied into an immutable Scala Map
    (``jvm_order.AddedKeys``); the deleted keys stay a buffer, duplicates and all."""

    def __init__(self, add: Sequence[str], delete: Sequence[str], from_file: bool = False) -> None:
        # A loaded file is copied into the tool's Properties as by putAll (3.9.2 and 4.3.1 too).
        self.properties_order = java_properties_order(add, copied=from_file)
        self._added = AddedKeys(self.properties_order, ordered=True)
        self._delete = list(delete)

    @property
    def value_order(self) -> list[str]:
        """The order the added values are parsed in."""
        return self._added.order

    def added_where(self, keep: Keep) -> list[str]:
        return self._added.keys_where(keep)

    def deleted_where(self, keep: Keep) -> list[str]:
        return [key for key in self._delete if keep(key)]

    def ip_unknown_text(self, keep: Keep) -> str:
        """``(configsToBeAdded.keys ++ configsToBeDeleted).filter(...)``, joined by ``,``."""
        return ",".join(self._added.keys_plus(self._delete, keep))

    @staticmethod
    def added_text(first: Sequence[str], then: Sequence[str] | None = None) -> str:
        """A key set as printed; ``then`` (for clients, even when empty) is added to it first."""
        return scala_set_text(first, then)

    @staticmethod
    def deleted_text(first: Sequence[str], then: Sequence[str] | None = None) -> str:
        return "ArrayBuffer(" + ", ".join([*first, *(then or ())]) + ")"

    @staticmethod
    def names_text(names: Sequence[str]) -> str:
        return "List(" + ", ".join(names) + ")"


class JavaToolKeys:
    """Java ConfigCommand: the added keys go from the Properties into a ``HashMap`` (copied
    once more, which keeps its order); each filtered key set is collected into a new
    ``HashSet``, and two sets are combined by copying the first (``new HashSet<>(first)``) and
    adding the second. Sets are printed with ``String.join``."""

    def __init__(self, add: Sequence[str], delete: Sequence[str], from_file: bool = False) -> None:
        # A loaded file is copied into the tool's Properties with putAll.
        self.properties_order = java_properties_order(add, copied=from_file)
        self._added = java_hash_order(self.properties_order)
        self._delete = list(delete)

    @property
    def value_order(self) -> list[str]:
        return self._added

    def added_where(self, keep: Keep) -> list[str]:
        return java_hash_order([key for key in self._added if keep(key)])

    def deleted_where(self, keep: Keep) -> list[str]:
        return java_hash_order([key for key in self._delete if keep(key)])

    def ip_unknown_text(self, keep: Keep) -> str:
        """``new HashSet<>(added keys)`` plus the deleted ones, filtered into a set, ``", "``."""
        every = java_hash_order([*self._added, *self._delete], java_hash_set_copy_bins(len(self._added)))
        return ", ".join(java_hash_order([key for key in every if keep(key)]))

    @staticmethod
    def added_text(first: Sequence[str], then: Sequence[str] | None = None) -> str:
        """A key set as printed; given ``then`` (for clients, even when empty), the set is
        copied and ``then`` added, and the copy is printed (its table may be larger)."""
        if then is None:
            return ",".join(first)
        return ",".join(java_hash_order([*first, *then], java_hash_set_copy_bins(len(first))))

    deleted_text = added_text

    @staticmethod
    def names_text(names: Sequence[str]) -> str:
        return "[" + ", ".join(names) + "]"


ToolKeys = ScalaToolKeys | JavaToolKeys


def tool_keys(java_tool: bool, add: Sequence[str], delete: Sequence[str], from_file: bool = False) -> ToolKeys:
    """``from_file``: the keys to add came from ``--add-config-file``."""
    return (JavaToolKeys if java_tool else ScalaToolKeys)(add, delete, from_file)
