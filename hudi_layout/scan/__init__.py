"""Scan planning without Spark: which base files a filtered read must open (:mod:`hudi_layout.scan.plan`)."""
