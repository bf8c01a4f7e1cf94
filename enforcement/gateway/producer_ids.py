"""Producer ids of a Produce request, read from record-batch headers without decoding records.

A magic-v2 record batch starts with a fixed 61-byte header: baseOffset int64 (0), batchLength
int32 (8), partitionLeaderEpoch int32 (12), magic int8 (16), crc uint32 (17), attributes int16
(21), lastOffsetDelta int32 (23), baseTimestamp int64 (27), maxTimestamp int64 (35), producerId
int64 (43), producerEpoch int16 (51), baseSequence int32 (53), records count int32 (57).
Several batches may be concatenated; each occupies ``12 + batchLength`` bytes. Non-idempotent
producers write producerId -1, which is not counted.
"""

from __future__ import annotations

import struct

from kconfigs_enforcement.gateway import codec
from kconfigs_enforcement.gateway.versions import PRODUCE

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_LENGTH_OFFSET, _MAGIC_OFFSET, _PRODUCER_ID_OFFSET = 8, 16, 43
_BATCH_OVERHEAD = 12  # baseOffset + batchLength precede the counted bytes
_MIN_BATCH_BYTES = 61


def batch_producer_ids(records: bytes | memoryview | None) -> set[int]:
    """Producer ids (>= 0) of the magic-v2 batches in a partition's ``records`` bytes."""
    ids: set[int] = set()
    if not records:
        return ids
    view = memoryview(records)
    pos = 0
    while pos + _MIN_BATCH_BYTES <= len(view):
        batch_length = _INT32.unpack_from(view, pos + _LENGTH_OFFSET)[0]
        if batch_length < _MIN_BATCH_BYTES - _BATCH_OVERHEAD:
            break
        if view[pos + _MAGIC_OFFSET] == 2:
            producer_id = _INT64.unpack_from(view, pos + _PRODUCER_ID_OFFSET)[0]
            if producer_id >= 0:
                ids.add(producer_id)
        pos += _BATCH_OVERHEAD + batch_length
    return ids


def produce_request_producer_ids(version: int, frame: bytes) -> set[int]:
    """Producer ids in every partition of a Produce request (header + body, no prefix).

    :raises ValueError and kafka-python decode errors on malformed bytes:
    """
    request = codec.decode_request(PRODUCE, version, frame)
    ids: set[int] = set()
    for topic in request.topic_data:
        for partition in topic.partition_data:
            ids |= batch_producer_ids(partition.records)
    return ids
