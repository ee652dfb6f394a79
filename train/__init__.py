"""GRPO training on the episodes, streamed from their Parquet files (README: Train)."""

# Before `datasets` imports pyarrow: the pipeline package chooses pyarrow's allocator (`pipeline/__init__.py`).
# Streaming the default build's train split through jemalloc rather than mimalloc: 10.9-11.5k raw rows per CPU-second
# against 8.2-8.6k, GRPO prompts 5.9-6.2k against 4.2-4.7k, peak RSS 815 MB against 870-890 (benchmarks/stream.py,
# three runs each in turns).
import pipeline  # noqa: F401
