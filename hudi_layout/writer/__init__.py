"""Writes without Spark: the executor-side base-file writer, the metadata-table glue, and the driver-side
transaction (:class:`hudi_layout.writer.transaction.WriteSession`)."""
