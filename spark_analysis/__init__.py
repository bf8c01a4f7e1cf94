"""PySpark quota analysis behind ``kconfigs analyze``.

Nothing here imports pyspark at module import time except the modules that build or transform
DataFrames (session, readers, transforms, whatif, jobs); the pure parsers (``metric_names``,
``sizing``) and the HTML renderer are importable without Spark.
"""
