"""kconfigs model <-> kafka-python protocol objects for DescribeClientQuotas / AlterClientQuotas.

Pure: builds request objects and reads response objects; the bytes come from kafka-python's
classes (generated from Kafka's message JSON), checked by golden tests in tests/unit/kafka_admin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    AlterUserScramCredentialsRequest,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeUserScramCredentialsRequest,
)

from kconfigs.errors import CorruptData, KconfigsError
from kconfigs.kafka_admin.error_codes import error_for_code
from kconfigs.kafka_admin.quota_values import format_stored_value
from kconfigs.model import DEFAULT, EntityFilter, EntityType, Match, QuotaEntity, QuotaRecord

# ClientQuotaFilterComponent match types on the wire (DescribeClientQuotasRequest.json).
MATCH_TYPE = {Match.EXACT: 0, Match.DEFAULT: 1, Match.ANY: 2}
SUPPORTED_VERSIONS = {
    48: (DescribeClientQuotasRequest.min_version, DescribeClientQuotasRequest.max_version),
    49: (AlterClientQuotasRequest.min_version, AlterClientQuotasRequest.max_version),
    50: (DescribeUserScramCredentialsRequest.min_version, DescribeUserScramCredentialsRequest.max_version),
    51: (AlterUserScramCredentialsRequest.min_version, AlterUserScramCredentialsRequest.max_version),
}


@dataclass(frozen=True)
class QuotaOp:
    """One AlterClientQuotas op: set ``key`` to ``value``, or remove it when ``value`` is None."""

    key: str
    value: float | None


def build_describe_request(entity_filter: EntityFilter, version: int) -> DescribeClientQuotasRequest:
    """``ClientQuotaFilter.containsOnly``/``contains`` as the Java admin client encodes it."""
    components = [
        DescribeClientQuotasRequest.ComponentData(
            entity_type=comp.entity_type.value,
            match_type=MATCH_TYPE[comp.match],
            match=comp.name if comp.match is Match.EXACT else None,
        )
        for comp in entity_filter.components
    ]
    return DescribeClientQuotasRequest(components=components, strict=entity_filter.strict, version=version)


def _entity_from_wire(entity_data: Iterable) -> QuotaEntity:
    parts: dict[str, object] = {}
    for item in entity_data:
        try:
            entity_type = EntityType(item.entity_type)
        except ValueError:
            raise CorruptData(f"Unknown quota entity type from broker: {item.entity_type}") from None
        parts[entity_type.value] = DEFAULT if item.entity_name is None else item.entity_name
    return QuotaEntity(user=parts.get("user"), client_id=parts.get("client-id"), ip=parts.get("ip"))


def read_describe_response(response: DescribeClientQuotasResponse) -> list[QuotaRecord]:
    """Records from a response. :raises KconfigsError: the response's top-level error."""
    error = error_for_code(response.error_code, response.error_message)
    if error is not None:
        raise error
    records = []
    for entry in response.entries or ():
        configs = {value.key: format_stored_value(value.key, value.value) for value in entry.values}
        records.append(QuotaRecord(entity=_entity_from_wire(entry.entity), configs=configs))
    return records


def _entity_to_wire(entity: QuotaEntity, entity_class) -> list:
    return [
        entity_class(entity_type=entity_type.value, entity_name=None if name is DEFAULT else name)
        for entity_type, name in entity.components().items()
    ]


def build_alter_request(
    changes: Sequence[tuple[QuotaEntity, Sequence[QuotaOp]]], validate_only: bool, version: int
) -> AlterClientQuotasRequest:
    """One entry per entity; a removal is ``remove=True`` with value 0.0 (as the Java client sends)."""
    entry_class = AlterClientQuotasRequest.EntryData
    entries = [
        entry_class(
            entity=_entity_to_wire(entity, entry_class.EntityData),
            ops=[
                entry_class.OpData(key=op.key, value=0.0 if op.value is None else op.value, remove=op.value is None)
                for op in ops
            ],
        )
        for entity, ops in changes
    ]
    return AlterClientQuotasRequest(entries=entries, validate_only=validate_only, version=version)


def read_alter_response(response: AlterClientQuotasResponse) -> list[tuple[QuotaEntity, KconfigsError | None]]:
    """Per-entity outcome: (entity, None) on success, else the mapped error naming the entity."""
    outcomes = []
    for entry in response.entries:
        entity = _entity_from_wire(entry.entity)
        outcomes.append((entity, error_for_code(entry.error_code, entry.error_message)))
    return outcomes
