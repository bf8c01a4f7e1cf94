"""DescribeClientQuotas / AlterClientQuotas (api keys 48/49) answered from the gateway's store.

Upstreams such as tansu lack these APIs; answering them here lets ``kafka-configs.sh
--bootstrap-server``, Terraform's kafka_quota or any admin client manage the quotas the gateway
enforces. Mode ``auto`` owns them only when the upstream's ApiVersions does not list them;
``gateway`` always owns them; ``passthrough`` never does. Alters are authorised like Kafka's
ALTER_CONFIGS on CLUSTER, by principal (``quota_admin_principals``; ``*`` = anyone).
Store calls block, so they run in the default executor.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Iterable, Mapping

from kconfigs.errors import KconfigsError, ValidationError
from kconfigs.keys import keys_for, quota_configs, validate_configs
from kconfigs.model import DEFAULT, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity
from kconfigs_enforcement.gateway import codec
from kconfigs_enforcement.gateway.headers import RequestPrefix
from kconfigs_enforcement.gateway.versions import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS, VersionRange

log = logging.getLogger("kconfigs.gateway")
ADMIN_APIS = (DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS)
INVALID_REQUEST, CLUSTER_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR = 42, 31, -1
_MATCH_FROM_WIRE = {0: Match.EXACT, 1: Match.DEFAULT, 2: Match.ANY}


class QuotaAdmin:
    def __init__(self, store: Any, mode: str = "auto", admin_principals: Iterable[str] = (), where: str = "its store"):
        """``where``: the store, as a refused alter names it (kind and address, no secrets)."""
        self._store = store
        self._where = where
        self._mode = mode
        #: principal names; Kafka's "User:" prefix (as in super.users) is accepted and dropped,
        #: since the gateway's principals are bare names (SASL user, TLS distinguished name)
        self._admin_principals = frozenset(p.removeprefix("User:") for p in admin_principals)
        self._owned: frozenset[int] = frozenset(ADMIN_APIS) if mode == "gateway" else frozenset()

    def owned_apis(self) -> frozenset[int]:
        return self._owned

    def owned_version_ranges(self, upstream_keys: set[int]) -> Mapping[int, VersionRange]:
        """Called with each upstream ApiVersions answer; decides ``auto`` ownership."""
        if self._mode == "auto":
            self._owned = frozenset(k for k in ADMIN_APIS if k not in upstream_keys)
        return {k: VersionRange(k, 0, codec.max_decodable_version(k)) for k in self._owned}

    async def answer(self, prefix: RequestPrefix, frame: bytes, principal: str) -> bytes:
        """The response frame (header + body) for a 48/49 request."""
        return await asyncio.get_running_loop().run_in_executor(None, self.answer_blocking, prefix, frame, principal)

    def answer_blocking(self, prefix: RequestPrefix, frame: bytes, principal: str) -> bytes:
        """:meth:`answer` on the calling thread (the native data plane calls it off its workers)."""
        request = codec.decode_request(prefix.api_key, prefix.api_version, frame)
        if prefix.api_key == DESCRIBE_CLIENT_QUOTAS:
            fields = self._describe(request)
        else:
            fields = self._alter(request, principal)
        return codec.build_response(
            prefix.api_key, prefix.api_version, prefix.correlation_id, throttle_time_ms=0, **fields
        )

    def _describe(self, request: Any) -> dict:
        response_class = codec.response_class(DESCRIBE_CLIENT_QUOTAS)
        try:
            entity_filter = EntityFilter(tuple(_component(c) for c in request.components or ()), strict=request.strict)
            records = self._store.describe(entity_filter)
        except (KconfigsError, ValueError) as err:
            code = INVALID_REQUEST if isinstance(err, (ValidationError, ValueError)) else UNKNOWN_SERVER_ERROR
            return {"error_code": code, "error_message": str(err), "entries": None}
        entries = []
        for record in records:
            quotas = quota_configs(record.configs)  # quota keys only, as Kafka's brokers answer
            if not quotas:
                continue
            try:
                values = [response_class.EntryData.ValueData(key=k, value=float(v)) for k, v in quotas.items()]
            except ValueError:  # a hand-edited value: the request fails, not the connection
                message = f"{record.entity.path} holds a quota value that is not a number: {quotas}"
                return {"error_code": UNKNOWN_SERVER_ERROR, "error_message": message, "entries": None}
            entity = _entity_to_wire(record.entity, response_class.EntryData.EntityData)
            entries.append(response_class.EntryData(entity=entity, values=values))
        return {"error_code": 0, "error_message": None, "entries": entries}

    def _alter(self, request: Any, principal: str) -> dict:
        response_class = codec.response_class(ALTER_CLIENT_QUOTAS)
        allowed = "*" in self._admin_principals or principal in self._admin_principals
        entries = []
        for entry in request.entries or ():  # a null array from a hostile client
            code, message = (CLUSTER_AUTHORIZATION_FAILED, self._refusal(principal)) if not allowed else (0, None)
            if allowed:
                code, message = self._alter_entry(entry, request.validate_only)
            entries.append(
                response_class.EntryData(
                    error_code=code,
                    error_message=message,
                    entity=[
                        response_class.EntryData.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                        for e in entry.entity or ()
                    ],
                )
            )
        return {"entries": entries}

    def _refusal(self, principal: str) -> str:
        return (
            f"{principal} may not alter quotas through the gateway: the quotas it enforces are in {self._where}; "
            "change them there, or list the principal in quota_admin_principals"
        )

    def _alter_entry(self, entry: Any, validate_only: bool) -> tuple[int, str | None]:
        try:
            entity = QuotaEntity.from_json({e.entity_type: e.entity_name for e in entry.entity or ()})
            ops = [(op.key, None if op.remove else op.value) for op in entry.ops or ()]
            self._store.alter(entity, lambda current: altered_quotas(entity, current, ops), validate_only=validate_only)
            return 0, None
        except ValidationError as err:
            return INVALID_REQUEST, str(err)
        except KconfigsError as err:
            log.warning("quota alter through the gateway failed: %s", err)
            return UNKNOWN_SERVER_ERROR, str(err)


def altered_quotas(
    entity: QuotaEntity, current: Mapping[str, str], ops: Iterable[tuple[str | None, float | None]]
) -> dict[str, str]:
    """An entity's configs after AlterClientQuotas ``ops`` ((key, value); None removes), as a KRaft
    controller applies them: setting a key the entity cannot hold as a quota is refused with
    Kafka's ``Invalid configuration key K`` (a ZooKeeper-mode broker's text too), and removing one
    changes nothing. So the quota API never writes or deletes a user's SCRAM credentials, which
    share the user's entry in a ZooKeeper or embedded store (a ZooKeeper-mode broker deletes them
    on such a remove; the quota permission must not reach credentials).

    :raises ValidationError: a null or invalid key (the first in the controller's order), or a
        value the key cannot take.
    """
    from kconfigs.jvm_order import java_hash_map_order, java_string_hash
    from kconfigs.kafka_admin.quota_values import format_stored_value

    quota_keys = set(keys_for(entity))
    new = dict(current)
    ops = list(ops)
    # the controller puts the ops in a HashMap and stops at the first bad key in its order
    for key, value in java_hash_map_order(ops, lambda op: java_string_hash(op[0] or ""), len(ops)):
        if key is None:  # a null key from a hostile client: Kafka answers INVALID_REQUEST
            raise ValidationError("Invalid empty configuration key")
        if key not in quota_keys:
            if value is not None:
                raise ValidationError(f"Invalid configuration key {key}")
        elif value is None:
            new.pop(key, None)
        else:
            new[key] = format_stored_value(key, value)
    validate_configs(entity, new)
    return new


def _component(wire: Any) -> FilterComponent:
    try:
        entity_type, match = EntityType(wire.entity_type), _MATCH_FROM_WIRE[wire.match_type]
    except (ValueError, KeyError):
        raise ValidationError(f"Invalid filter component: {wire.entity_type}/{wire.match_type}") from None
    return FilterComponent(entity_type, match, wire.match if match is Match.EXACT else None)


def _entity_to_wire(entity: QuotaEntity, entity_class: Any) -> list:
    return [
        entity_class(entity_type=t.value, entity_name=None if name is DEFAULT else name)
        for t, name in entity.components().items()
    ]
