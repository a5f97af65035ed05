"""Spark's automatic registration of the ``hudi_layout`` data source.

At the first Python data source call of a session, Spark (4.0+) imports every top-level module whose name
starts with ``pyspark_`` and registers its ``DefaultSource``; this module is that entry, so
``spark.read.format("hudi_layout")`` works in any session once the package is installed, without calling
anything of ours first. Importing it loads only the data source module (no Spark job, no JVM call).
"""

from hudi_layout.spark.datasource import HudiLayoutDataSource as DefaultSource

__all__ = ["DefaultSource"]
