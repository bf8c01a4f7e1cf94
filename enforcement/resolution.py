"""Quota precedence and sensor tags: an immutable snapshot of the store's quota configs.

Follows ``ClientQuotaManager.DefaultQuotaCallback`` (apache/kafka trunk 1eb7644). Per quota key,
independently (each broker quota manager has its own overrides and its own ``quotaTypesEnabled``):

1. /config/users/<user>/clients/<client-id>     5. /config/users/<default>/clients/<default>
2. /config/users/<user>/clients/<default>       6. /config/users/<default>
3. /config/users/<user>                         7. /config/clients/<client-id>
4. /config/users/<default>/clients/<client-id>  8. /config/clients/<default>

The sensor a request is charged to is named by its metric tags ``{"user": U, "client-id": C}``
(U sanitized, C raw, "" for a level that does not apply), chosen from the bitmask of levels that
have quotas (ClientId=1, User=2, UserClientId=4); the limit is then looked up from the tags.
IP quotas (``connection_creation_rate``): the ip, then ``<default>``. ``producer_ids_rate``
(KIP-936, not merged in Kafka) is per user only: levels 3 then 6, tags ``{"user": U}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kconfigs.ip_names import address_key
from kconfigs.keys import CLIENT_KEYS, QUOTA_KINDS
from kconfigs.sanitize import DEFAULT_NAME, sanitize

PRODUCER_IDS_KEY = QUOTA_KINDS["producer_id"].name
IP_KEY = QUOTA_KINDS["connection"].name

CLIENT_ID_ENABLED, USER_ENABLED, USER_CLIENT_ID_ENABLED = 1, 2, 4  # Kafka QuotaTypes bits
_MAX_CACHED_PAIRS = 1_000_000  # bounded memory with millions of client-ids: cleared when full


@dataclass(frozen=True)
class Resolved:
    """The effective quota of one key for one client.

    ``value`` None = unlimited; ``level`` 1..8 (ip: 1 = the ip, 2 = ``<default>``), 0 = none;
    ``path`` the znode path it came from; ``metric_tags`` the tags of the shared Kafka sensor.
    """

    value: float | None
    level: int
    path: str | None
    metric_tags: dict = field(default_factory=dict, compare=False)


def _san(name: str | None) -> str:
    return DEFAULT_NAME if name is None else sanitize(name)


@dataclass
class _KeyQuotas:
    """Overrides of one quota key, by level. User keys are raw names, None = <default>."""

    user_client: dict = field(default_factory=dict)  # (user|None, client|None) -> value: levels 1,2,4,5
    user: dict = field(default_factory=dict)  # user|None -> value: levels 3,6
    client: dict = field(default_factory=dict)  # client|None -> value: levels 7,8
    mask: int = 0


def _entity_kind(entity: Mapping[str, str | None]) -> str:
    keys = frozenset(entity)
    kinds = {
        frozenset({"user", "client-id"}): "user_client",
        frozenset({"user"}): "user",
        frozenset({"client-id"}): "client",
        frozenset({"ip"}): "ip",
    }
    kind = kinds.get(keys)
    if kind is None:
        raise ValueError(f"Invalid quota entity {dict(entity)!r}")
    return kind


class QuotaSnapshot:
    """Immutable quota configs plus a bounded cache of resolutions per (user, client-id).

    Build with :meth:`from_records`. ``zookeeper_masks=True`` reproduces ZooKeeper-mode brokers,
    where any config change on an entity calls ``updateQuota`` for all four client quota types, so
    an entity enables its level for every key (KRaft enables a level only for the keys it sets).
    """

    def __init__(self, keys: dict[str, _KeyQuotas], ips: dict, extra_masks: Mapping[str, int] | None = None):
        self._keys = keys
        self._ips = ips  # address_key(ip)|None -> (connection_creation_rate, entity name)
        for key, mask in (extra_masks or {}).items():
            keys[key].mask |= mask
        self._cache: dict = {}
        self._san_cache: dict = {}

    def forget_resolutions(self) -> None:
        """Drop the cached resolutions (they are recomputed on demand): after a sensor expiry run,
        so that the client-ids gone idle do not stay in memory until the cache fills."""
        self._cache.clear()
        self._san_cache.clear()

    @classmethod
    def from_records(cls, records: Iterable, zookeeper_masks: bool = False) -> "QuotaSnapshot":
        """``records``: ``(entity, quotas)`` pairs (``entity`` as ``QuotaEntity.to_json()``) or
        ``kconfigs.model.QuotaRecord`` objects. Unknown quota keys are ignored, like Kafka.

        :raises ValueError: for an invalid entity or a non-numeric value
        """
        keys = {key: _KeyQuotas() for key in CLIENT_KEYS + (PRODUCER_IDS_KEY,)}
        ips: dict = {}
        for entity, quotas in map(_as_pair, records):
            kind = _entity_kind(entity)
            bit = {"user_client": USER_CLIENT_ID_ENABLED, "user": USER_ENABLED, "client": CLIENT_ID_ENABLED}.get(
                kind, 0
            )
            if zookeeper_masks and bit:
                for key in CLIENT_KEYS:
                    keys[key].mask |= bit
            for key, raw in quotas.items():
                if kind == "ip":
                    if key == IP_KEY:  # two names of one address: the later one, as a broker applies them
                        name = entity["ip"]
                        ips[None if name is None else address_key(name)] = (float(raw), name)
                    continue
                if key not in keys:
                    continue
                _store(keys[key], kind, entity, float(raw), bit)
        return cls(keys, ips)

    def with_sticky_masks(self, previous: "QuotaSnapshot | None") -> "QuotaSnapshot":
        """A copy whose enabled levels also include ``previous``'s: Kafka <= 4.0 only ever ORs
        ``quotaTypesEnabled`` (later versions also clear it), so deleting every quota of a
        level keeps the tag shape until the broker restarts."""
        if previous is None:
            return self
        keys = {k: _KeyQuotas(q.user_client, q.user, q.client, q.mask) for k, q in self._keys.items()}
        return QuotaSnapshot(keys, self._ips, {k: q.mask for k, q in previous._keys.items()})

    def enabled_mask(self, key: str) -> int:
        """Kafka's ``quotaTypesEnabled`` for ``key`` (0 = the quota type is off: nothing is recorded)."""
        return self._keys[key].mask

    def sanitized(self, user: str) -> str:
        cached = self._san_cache.get(user)
        if cached is None:
            if len(self._san_cache) >= _MAX_CACHED_PAIRS:
                self._san_cache.clear()
            cached = self._san_cache[user] = sanitize(user)
        return cached

    # -- client quotas -------------------------------------------------------------------

    def metric_tags(self, user: str, client_id: str, key: str) -> tuple[str, str]:
        """``quotaMetricTags``: (user tag, client-id tag) of the sensor charged for this client."""
        quotas = self._keys[key]
        san_user = self.sanitized(user)
        mask = quotas.mask
        if mask in (0, CLIENT_ID_ENABLED):
            return "", client_id
        if mask == USER_ENABLED:
            return san_user, ""
        if mask == USER_CLIENT_ID_ENABLED:
            return san_user, client_id
        uc, u = quotas.user_client, quotas.user
        if (user, client_id) in uc or (user, None) in uc:  # levels 1, 2
            return san_user, client_id
        if user in u:  # level 3
            return san_user, ""
        if (None, client_id) in uc or (None, None) in uc:  # levels 4, 5
            return san_user, client_id
        if None in u:  # level 6
            return san_user, ""
        return "", client_id  # levels 7, 8 or nothing

    def limit_for_tags(
        self, key: str, user: str, client_id: str, user_tag: str, client_tag: str
    ) -> tuple[float | None, int]:
        """``quotaLimit``: (value, level) for a sensor with these tags; (None, 0) = unlimited.

        ``user``/``client_id`` are the raw names behind the non-empty tags.
        """
        quotas = self._keys[key]
        if user_tag and client_tag:
            uc = quotas.user_client
            for level, probe in ((1, (user, client_id)), (2, (user, None)), (4, (None, client_id)), (5, (None, None))):
                if probe in uc:
                    return uc[probe], level
        elif user_tag:
            for level, probe in ((3, user), (6, None)):
                if probe in quotas.user:
                    return quotas.user[probe], level
        elif client_tag:
            for level, probe in ((7, client_id), (8, None)):
                if probe in quotas.client:
                    return quotas.client[probe], level
        return None, 0

    def resolve(self, user: str, client_id: str, key: str) -> Resolved:
        """Effective quota of ``key`` for a client, as the broker computes it.

        :raises KeyError: for an unknown key (use :meth:`resolve_ip` for connection_creation_rate)
        """
        cache_key = (user, client_id, key)
        hit = self._cache.get(cache_key)
        if hit is not None:
            return hit
        if key == PRODUCER_IDS_KEY:
            resolved = self._resolve_producer_ids(user)
        elif key in CLIENT_KEYS:
            user_tag, client_tag = self.metric_tags(user, client_id, key)
            value, level = self.limit_for_tags(key, user, client_id, user_tag, client_tag)
            resolved = Resolved(
                value, level, self.znode_path(level, user, client_id), {"user": user_tag, "client-id": client_tag}
            )
        else:
            raise KeyError(f"Unknown client quota key: {key}")
        if len(self._cache) >= _MAX_CACHED_PAIRS:
            self._cache.clear()
        self._cache[cache_key] = resolved
        return resolved

    def _resolve_producer_ids(self, user: str) -> Resolved:
        user_quotas = self._keys[PRODUCER_IDS_KEY].user
        tags = {"user": self.sanitized(user)}
        for level, probe in ((3, user), (6, None)):
            if probe in user_quotas:
                return Resolved(user_quotas[probe], level, self.znode_path(level, user, ""), tags)
        return Resolved(None, 0, None, tags)

    @staticmethod
    def znode_path(level: int, user: str, client_id: str) -> str | None:
        u, c, d = _san(user), _san(client_id), DEFAULT_NAME
        paths = {
            1: f"users/{u}/clients/{c}",
            2: f"users/{u}/clients/{d}",
            3: f"users/{u}",
            4: f"users/{d}/clients/{c}",
            5: f"users/{d}/clients/{d}",
            6: f"users/{d}",
            7: f"clients/{c}",
            8: f"clients/{d}",
        }
        return "/config/" + paths[level] if level else None

    # -- ip quotas -------------------------------------------------------------------

    def resolve_ip(self, ip: str, key: str = IP_KEY) -> Resolved:
        """``connectionRateForIp``: the quota of the ip's address (under any name of it: ``127.1``
        is 127.0.0.1), else ``<default>``, else unlimited."""
        if key != IP_KEY:
            raise KeyError(f"Unknown ip quota key: {key}")
        tags = {"ip": ip}
        own = self._ips.get(address_key(ip)) if ip else None
        if own is not None:
            value, name = own
            return Resolved(value, 1, f"/config/ips/{name}", tags)
        if None in self._ips:
            return Resolved(self._ips[None][0], 2, f"/config/ips/{DEFAULT_NAME}", tags)
        return Resolved(None, 0, None, tags)


def _as_pair(record) -> tuple[Mapping, Mapping]:
    if hasattr(record, "entity") and hasattr(record, "configs"):  # kconfigs.model.QuotaRecord
        return record.entity.to_json(), record.configs
    entity, quotas = record
    return entity, quotas


def _store(quotas: _KeyQuotas, kind: str, entity: Mapping, value: float, bit: int) -> None:
    if kind == "user_client":
        quotas.user_client[(entity["user"], entity["client-id"])] = value
    elif kind == "user":
        quotas.user[entity["user"]] = value
    else:
        quotas.client[entity["client-id"]] = value
    quotas.mask |= bit
