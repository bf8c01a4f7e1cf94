"""kconfigs: manage and enforce Apache Kafka client quotas.

This package is the bottom layer: the pure core (``model``, ``keys``, ``sanitize``,
``config_grammar``, ``javafmt``, ``errors``), the kafka-configs grammar and texts, the stores
(``stores/``: ZooKeeper, SQLite, Kafka's admin API over ``kafka_admin/``), the service and the
``kconfigs`` command group (``cli``, ``commands/``). It imports neither the enforcement package
(the gateway, ``serve``/``simulate``/``resolve``) nor the Spark analysis (``analyze``): those sit
above it and are registered into the command group by module name. See docs/ARCHITECTURE.md.
"""

__version__ = "0.1.0"
