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
from kconfigs.model import DEFAULT, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity
from kconfigs_enforcement.gateway import codec
from kconfigs_enforcement.gateway.headers import RequestPrefix
from kconfigs_enforcement.gateway.versions import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS, VersionRange

log = logging.getLogger("kconfigs.gateway")
ADMIN_APIS = (DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS)
INVALID_REQUEST, CLUSTER_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR = 42, 31, -1
_MATCH_FROM_WIRE = {0: Match.EXACT, 1: Match.DEFAULT, 2: Match.ANY}


class QuotaAdmin:
    def __init__(self, store: Any, mode: str = "auto", admin_principals: Iterable[str] = ()):
        self._store = store
        self._mode = mode
        self._admin_principals = frozenset(admin_principals)
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
        entries = [
            response_class.EntryData(
                entity=_entity_to_wire(r.entity, response_class.EntryData.EntityData),
                values=[response_class.EntryData.ValueData(key=k, value=float(v)) for k, v in r.configs.items()],
            )
            for r in records
            if r.configs
        ]
        return {"error_code": 0, "error_message": None, "entries": entries}

    def _alter(self, request: Any, principal: str) -> dict:
        response_class = codec.response_class(ALTER_CLIENT_QUOTAS)
        allowed = "*" in self._admin_principals or principal in self._admin_principals
        entries = []
        for entry in request.entries or ():  # a null array from a hostile client
            code, message = (
                (CLUSTER_AUTHORIZATION_FAILED, f"{principal} may not alter quotas through the gateway")
                if not allowed
                else (0, None)
            )
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

    def _alter_entry(self, entry: Any, validate_only: bool) -> tuple[int, str | None]:
        from kconfigs.kafka_admin.quota_values import format_stored_value
        from kconfigs.keys import validate_configs

        try:
            entity = QuotaEntity.from_json({e.entity_type: e.entity_name for e in entry.entity or ()})

            def update(current: Mapping[str, str]) -> Mapping[str, str]:
                new = dict(current)
                for op in entry.ops or ():
                    if op.key is None:  # a null key from a hostile client: Kafka answers INVALID_REQUEST
                        raise ValidationError("Invalid empty configuration key")
                    if op.remove:
                        new.pop(op.key, None)
                    else:
                        new[op.key] = format_stored_value(op.key, op.value)
                validate_configs(entity, new)
                return new

            self._store.alter(entity, update, validate_only=validate_only)
            return 0, None
        except ValidationError as err:
            return INVALID_REQUEST, str(err)
        except KconfigsError as err:
            log.warning("quota alter through the gateway failed: %s", err)
            return UNKNOWN_SERVER_ERROR, str(err)


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
