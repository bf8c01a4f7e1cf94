"""The quota file: client quotas as code (TOML, JSON or YAML; documented in docs/quota-file.md).

One document shape in every format: a list ``quota`` of tables, each with an ``entity`` table and
``key = number`` pairs::

    [[quota]]
    entity = { user = "alice", client-id = { default = true } }
    producer_byte_rate = 1048576
    request_percentage = 200.0

An entity component is a name (a string) or ``{ default = true }`` for the default entity (Kafka's
API uses null, which TOML lacks; JSON/YAML may also write null). A bare ``"<default>"`` is refused
as ambiguous: the default is ``{ default = true }``, a principal literally named ``<default>`` is
``{ name = "<default>" }``. Pure: text in, values out; errors are one line naming the origin
(file), the entry, the entity and the key.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import tomllib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kconfigs.errors import CorruptData, UsageError, ValidationError
from kconfigs.ip_names import is_valid_ip_entity
from kconfigs.keys import QUOTA_KEYS, ValueType, keys_for, numeric_quotas, parse_value
from kconfigs.model import DEFAULT, EntityType, QuotaEntity, QuotaRecord
from kconfigs.render import zk_entity_text
from kconfigs.sanitize import DEFAULT_NAME

FORMATS = ("toml", "json", "yaml")
FORMAT_BY_SUFFIX = {".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}
_COMPONENT_ORDER = tuple(t.value for t in EntityType)  # user, client-id, ip

Number = int | float


@dataclass(frozen=True)
class DesiredQuota:
    """One ``[[quota]]`` entry: an entity and its quotas as numbers (ints for LONG/INT keys)."""

    entity: QuotaEntity
    quotas: Mapping[str, Number]


# ---- reading ---------------------------------------------------------------------------------


def format_for_path(path: str, explicit: str | None = None) -> str:
    """The file format: ``explicit`` if given, else from the suffix (TOML when unknown)."""
    if explicit:
        return explicit
    suffix = path[path.rfind(".") :].lower() if "." in path else ""
    return FORMAT_BY_SUFFIX.get(suffix, "toml")


def read_quota_file(path: str, fmt: str | None = None) -> list[DesiredQuota]:
    """The entries of the quota file at ``path`` ("-" = standard input), in ``fmt`` or the format
    its suffix names (TOML by default): the one reader of quota files for ``apply``, ``diff``,
    ``resolve``, ``simulate`` and ``analyze`` (``kconfigs.quota_records`` makes records of them).
    :raises UsageError: unreadable; :raises ValidationError: not UTF-8, bad content"""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as err:
        raise UsageError(f"Cannot read quota file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{path}: not UTF-8 text") from None
    return parse_quota_text(text, format_for_path(path, fmt), path)


def snapshot_records(desired: Iterable[DesiredQuota]) -> list[tuple[dict, dict[str, float]]]:
    """Quota-file entries as ``(entity JSON, {key: float})`` records, what
    ``kconfigs_enforcement.QuotaSnapshot.from_records`` and the analysis take."""
    return [(d.entity.to_json(), {k: float(v) for k, v in d.quotas.items()}) for d in desired]


def parse_quota_text(text: str, fmt: str = "toml", origin: str = "quota file") -> list[DesiredQuota]:
    """Parse and fully validate a quota file's text.

    :raises ValidationError: one line naming ``origin``, the entry, the entity and the key.
    """
    document = _load_document(text, fmt, origin)
    if not isinstance(document, Mapping) or set(document) - {"quota"}:
        raise ValidationError(f"{origin}: expected only a 'quota' list of tables at the top level")
    entries = document.get("quota", [])
    if not isinstance(entries, list):
        raise ValidationError(f"{origin}: 'quota' must be a list of tables ([[quota]])")
    desired: list[DesiredQuota] = []
    seen: dict[QuotaEntity, int] = {}
    for index, entry in enumerate(entries, start=1):
        item = _parse_entry(entry, f"{origin}: [[quota]] #{index}")
        if item.entity in seen:
            raise ValidationError(
                f"{origin}: [[quota]] #{index} ({zk_entity_text(item.entity)}) repeats [[quota]] #{seen[item.entity]}"
            )
        seen[item.entity] = index
        desired.append(item)
    return desired


def _load_document(text: str, fmt: str, origin: str) -> Any:
    if fmt == "toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ValidationError(f"{origin}: not valid TOML: {err}") from None
    # TOML refuses a key given twice in one table; JSON and YAML parsers keep the last in silence,
    # so a quota written twice (or an entity's user twice) would apply one of them unannounced
    if fmt == "json":
        try:
            return json.loads(text, object_pairs_hook=_unique_json_keys) if text.strip() else {}
        except json.JSONDecodeError as err:
            raise ValidationError(f"{origin}: not valid JSON: {err}") from None
        except _RepeatedKey as repeated:
            raise ValidationError(f"{origin}: not valid JSON: key {repeated.key!r} given twice in one object") from None
    if fmt == "yaml":
        yaml = _yaml_module()
        try:
            return yaml.load(text, Loader=_unique_key_yaml_loader(yaml)) or {}
        except yaml.YAMLError as err:
            raise ValidationError(f"{origin}: not valid YAML: {' '.join(str(err).split())}") from None
    raise UsageError(f"Unknown quota file format {fmt!r} (choose from {', '.join(FORMATS)})")


class _RepeatedKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_json_keys(pairs: list[tuple[str, Any]]) -> dict:
    document: dict = {}
    for key, value in pairs:
        if key in document:
            raise _RepeatedKey(key)
        document[key] = value
    return document


@functools.cache
def _unique_key_yaml_loader(yaml) -> type:
    """PyYAML's safe loader, refusing a key given twice in one mapping."""

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} given twice in one mapping", key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def _yaml_module():
    try:
        import yaml  # PyYAML (a kconfigs dependency), imported only when YAML is used
    except ImportError:
        raise UsageError("YAML quota files need PyYAML (pip install pyyaml); use TOML or JSON") from None
    return yaml


def _parse_entry(entry: object, where: str) -> DesiredQuota:
    if not isinstance(entry, Mapping):
        raise ValidationError(f"{where}: must be a table")
    entity = _parse_entity(entry.get("entity"), where)
    where = f"{where} ({zk_entity_text(entity)})"
    quotas = {key: _parse_number(entity, key, value, where) for key, value in entry.items() if key != "entity"}
    if not quotas:
        raise ValidationError(f"{where}: no quota keys (leave the entity out, and use --prune, to remove its quotas)")
    return DesiredQuota(entity, quotas)


def _parse_entity(raw: object, where: str) -> QuotaEntity:
    if not isinstance(raw, Mapping) or not raw:
        raise ValidationError(f"{where}: needs entity = {{ user = ..., client-id = ... }} or {{ ip = ... }}")
    unknown = sorted(set(raw) - set(_COMPONENT_ORDER))
    if unknown:
        raise ValidationError(f"{where}: unknown entity type(s) {', '.join(unknown)} (use user, client-id, ip)")
    names = {key: _parse_component(key, value, where) for key, value in raw.items()}
    try:
        entity = QuotaEntity(user=names.get("user"), client_id=names.get("client-id"), ip=names.get("ip"))
    except ValidationError as err:
        raise ValidationError(f"{where}: {err}") from None
    if isinstance(entity.ip, str) and not is_valid_ip_entity(entity.ip):
        raise ValidationError(f"{where}: {entity.ip} is not a valid IP address literal")
    return entity


def _parse_component(key: str, value: object, where: str):
    if value is None or value == {"default": True}:
        return DEFAULT
    if isinstance(value, Mapping) and set(value) == {"name"} and isinstance(value["name"], str):
        return value["name"]
    if value == DEFAULT_NAME:
        raise ValidationError(
            f'{where}: {key} = "<default>" is ambiguous: write {{ default = true }} for the default '
            f'{key}, or {{ name = "<default>" }} for one literally named <default>'
        )
    if not isinstance(value, str):
        raise ValidationError(f'{where}: {key} must be a name, {{ default = true }} or {{ name = "..." }}')
    return value


def _parse_number(entity: QuotaEntity, key: str, value: object, where: str) -> Number:
    if key not in keys_for(entity):
        valid = ", ".join(keys_for(entity))
        raise ValidationError(f"{where}: {key} is not a quota key of this entity (valid: {valid})")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{where}: {key} must be a number, not {value!r}")
    if QUOTA_KEYS[key].value_type is ValueType.DOUBLE:
        value = float(value)  # canonical: request_percentage = 200 reads (and exports) as 200.0
    elif isinstance(value, float) and value.is_integer():
        value = int(value)  # 1e6 is a TOML float; a whole one is fine for a LONG key
    try:
        parse_value(key, store_value(key, value))  # the store's own check, before anything is written
    except ValidationError as err:
        raise ValidationError(f"{where}: {key}: {err}") from None
    return value


def store_value(key: str, value: Number) -> str:
    """The raw string a store holds for a number: ``1048576`` for LONG/INT, repr for DOUBLE."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if QUOTA_KEYS[key].value_type is ValueType.DOUBLE:
        return repr(float(value))
    return str(value) if isinstance(value, int) else repr(value)


# ---- writing ---------------------------------------------------------------------------------


def desired_from_records(records: Iterable[QuotaRecord]) -> list[DesiredQuota]:
    """Quota keys of store records as file entries (SCRAM credentials and empty entities left out).

    :raises CorruptData: a stored quota value that is not a number.
    """
    out = []
    for record in records:
        quotas = {
            key: number_from_store(record.entity, key, raw) for key, raw in record.configs.items() if key in QUOTA_KEYS
        }
        if quotas:
            out.append(DesiredQuota(record.entity, quotas))
    return out


def number_from_store(entity: QuotaEntity, key: str, raw: str) -> Number:
    """A stored quota string as a number, exactly (``keys.numeric_quotas`` goes through float,
    which would round LONG values above 2**53). Odd but numeric strings that an older tool wrote,
    e.g. ``1048576.0`` for a LONG key, are read leniently."""
    try:
        return parse_value(key, raw)
    except ValidationError:
        pass
    try:
        number = numeric_quotas({key: raw})[key]
    except (ValueError, OverflowError):
        number = math.nan
    if not math.isfinite(number):  # a cluster holds request_percentage=Infinity; no file or store takes it back
        raise CorruptData(f"Stored value {raw!r} of {key} for {zk_entity_text(entity)} is not a number")
    return number


def entity_sort_key(entity: QuotaEntity) -> tuple:
    """Stable order: users, (user, client-id), client-ids, ips; defaults first, then by name."""
    shape = tuple(t.value for t in entity.components())
    rank = {("user",): 0, ("user", "client-id"): 1, ("client-id",): 2, ("ip",): 3}[shape]
    names = tuple((0, "") if v is DEFAULT else (1, v) for v in entity.components().values())
    return rank, names


def _document(desired: Iterable[DesiredQuota]) -> dict:
    entries = []
    for item in sorted(desired, key=lambda d: entity_sort_key(d.entity)):
        entity = {t.value: _component_doc(v) for t, v in item.entity.components().items()}
        entries.append({"entity": entity, **{k: item.quotas[k] for k in sorted(item.quotas)}})
    return {"quota": entries}


def _component_doc(value) -> object:
    if value is DEFAULT:
        return {"default": True}
    return {"name": value} if value == DEFAULT_NAME else value


def render_quota_text(desired: Iterable[DesiredQuota], fmt: str = "toml", header_lines: Iterable[str] = ()) -> str:
    """The file text; entries sorted by :func:`entity_sort_key`, keys by name, so the output of an
    export is stable and ``parse(render(x)) == x``."""
    document = _document(desired)
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        # allow_unicode=False: PyYAML would write some code points raw (U+0085 NEL) that YAML reads
        # back as a line break; escaped non-ASCII names round-trip exactly.
        return _yaml_module().safe_dump(document, sort_keys=False, allow_unicode=False)
    if fmt != "toml":
        raise UsageError(f"Unknown quota file format {fmt!r} (choose from {', '.join(FORMATS)})")
    lines = [f"# {line}" for line in header_lines]
    for entry in document["quota"]:
        lines += ["", "[[quota]]", f"entity = {_toml_inline(entry['entity'])}"]
        lines += [f"{key} = {_toml_scalar(value)}" for key, value in entry.items() if key != "entity"]
    text = "\n".join(lines).lstrip("\n")
    return text + "\n" if text else ""


def _toml_scalar(value: object) -> str:
    import tomli_w

    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def _toml_inline(table: Mapping[str, object]) -> str:
    # tomli-w has no way to ask for inline tables (it writes [quota.entity] sub-tables), and one
    # line per entity is what makes the file readable and diff-friendly in git; the scalars are
    # still escaped by tomli-w. Keys are user / client-id / ip / default / name: all bare keys.
    parts = []
    for key, value in table.items():
        text = _toml_inline(value) if isinstance(value, Mapping) else _toml_scalar(value)
        parts.append(f"{key} = {text}")
    return "{ " + ", ".join(parts) + " }"
