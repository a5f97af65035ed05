"""The read-path harness: an independent model of a table's rows and a Spark-semantics predicate evaluator,
random tables and predicates, and adapters that ask the same question through every read entry point.

Nothing here imports hudi_layout's read path (planning, skipping, its row oracle): the model is plain Python
values, maintained step by step as the harness writes, overwrites, clusters and crashes the table.
"""
