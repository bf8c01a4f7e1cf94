"""Quota stores behind one ``Store`` protocol (``base``): ZooKeeper (``zookeeper``, ``zk_ops``,
``zk_bulk``, ``zk_watch``), SQLite (``sqlite``) and Kafka's admin API (``admin_api``); ``factory``
opens one from resolved options."""
