"""Hudi's on-disk grammar, bytes <-> values, no directory walking: ``hoodie.properties``, instant file names,
base / log file names and partition paths, commit metadata (JSON / Avro) and its Avro schemas, schema
conversion, log-file blocks, atomic file writes, and what hudi_layout can do with a table (capabilities)."""
