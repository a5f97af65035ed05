"""Reading tables without Spark: scan planning (:mod:`hudi_layout.scan.plan`: which base files a filtered read must
open) and the Merge-on-Read file-slice merge (:mod:`hudi_layout.scan.merge`, run inside executors)."""
