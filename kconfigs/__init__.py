"""kconfigs: manage and enforce Apache Kafka client quotas."""

__version__ = "0.1.0"
