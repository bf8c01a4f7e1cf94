"""Quota kinds: their Kafka quota key and the unit of their measured rate (pure, no Spark)."""

from __future__ import annotations

#: quota kind -> Kafka quota key
KIND_QUOTA_KEY: dict[str, str] = {
    "produce": "producer_byte_rate",
    "fetch": "consumer_byte_rate",
    "request": "request_percentage",
    "controller_mutation": "controller_mutation_rate",
    "connection": "connection_creation_rate",
    "producer_id": "producer_ids_rate",
}
KIND_RATE_UNIT: dict[str, str] = {
    "produce": "B/s",
    "fetch": "B/s",
    "request": "% thread",
    "controller_mutation": "mutations/s",
    "connection": "conn/s",
    "producer_id": "ids/s",
}
