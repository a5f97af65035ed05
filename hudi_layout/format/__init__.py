"""Hudi on-disk grammar: bytes <-> values (log block content, names, metadata), no directory walking."""
