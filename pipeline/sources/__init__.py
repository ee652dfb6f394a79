"""Fact sources. Each returns a polars DataFrame with `common.FACT_COLUMNS` (every fact column but `split`).

Sources only produce facts; dedup, split assignment and the Arrow schema are the facts stage's job.
"""
