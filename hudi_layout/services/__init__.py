"""Orchestration: write with inline clustering, cluster / execute pending plans, the clustering service,
building the column_stats index. Services combine the pure engines with the Spark jobs."""
