"""PySpark quota analysis behind ``kconfigs analyze`` (``commands/analyze``).

Uses ``kconfigs``' model and quota files and ``enforcement``'s replay (the what-if), never the
other way round. Nothing here imports pyspark at module import time except the modules that
build or transform DataFrames (session, readers, transforms, whatif, jobs); the pure parsers
(``metric_names``, ``sizing``) and the HTML renderer are importable without Spark.
"""
