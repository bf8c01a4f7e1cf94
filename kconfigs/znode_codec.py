"""Kafka's config znode and change-notification JSON, byte for byte. Pure.

Config znode: ``{"version":1,"config":{"producer_byte_rate":"1024"}}`` (Jackson, compact, all
values strings). Notification: ``{"version":2,"entity_path":"users/u1"}``; version 1
(``entity_type`` + ``entity_name``, topics/clients only) is still read.
"""

from __future__ import annotations

import json
from typing import Mapping

from kconfigs.errors import CorruptData, ValidationError

CONFIG_ROOT = "/config"
CHANGES_PATH = "/config/changes"
CHANGE_PREFIX = "config_change_"


def config_znode(entity_path: str) -> str:
    """``/config/<entity_path>``. ZooKeeper refuses ``.`` and ``..`` as path components (a user or
    client-id named ``.`` sanitizes to itself); fail as kafka-configs does, with ZooKeeper's
    PathUtils message. :raises ValidationError:"""
    path = f"{CONFIG_ROOT}/{entity_path}"
    offset = len(CONFIG_ROOT) + 1
    for part in entity_path.split("/"):
        if part in (".", ".."):
            at = offset + len(part) - 1  # PathUtils reports the index of the last dot
            raise ValidationError(f'Invalid path string "{path}" caused by relative paths not allowed @{at}')
        offset += len(part) + 1
    return path


def encode_config(configs: Mapping[str, str]) -> bytes:
    doc = {"version": 1, "config": dict(configs)}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_config(data: bytes | None, where: str) -> dict[str, str]:
    """Configs of a config znode; null or empty data reads as no configs (Kafka parents).

    :raises CorruptData: naming ``where`` when the bytes are not Kafka's config JSON.
    """
    if not data:
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorruptData(
            f"Corrupt config znode {where}: not JSON ({err.msg if hasattr(err, 'msg') else err})"
        ) from None
    if not isinstance(doc, dict):
        raise CorruptData(f"Corrupt config znode {where}: expected a JSON object")
    config = doc.get("config", {})
    if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
        raise CorruptData(f'Corrupt config znode {where}: "config" must map keys to string values')
    return dict(config)


def encode_notification(entity_path: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode("utf-8")


def decode_notification(data: bytes | None) -> str | None:
    """The entity path a notification names, or None when a broker would ignore it."""
    try:
        doc = json.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    if doc.get("version") == 2 and isinstance(doc.get("entity_path"), str):
        return doc["entity_path"]
    if doc.get("version") == 1 and doc.get("entity_type") in ("clients", "topics"):
        name = doc.get("entity_name")
        return f"{doc['entity_type']}/{name}" if isinstance(name, str) else None
    return None
