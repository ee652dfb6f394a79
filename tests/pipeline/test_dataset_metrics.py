"""Dataset metrics: document length statistics use nearest-rank percentiles and survive an empty histogram."""

from __future__ import annotations

from pipeline.dataset_metrics import length_stats


def test_length_stats_use_nearest_rank():
    assert length_stats({n: 1 for n in range(1, 101)}) == {
        "count": 100,
        "mean": 50.5,
        "p50": 50,
        "p95": 95,
        "max": 100,
    }
    assert length_stats({7: 3, 300: 1}) == {"count": 4, "mean": 80.25, "p50": 7, "p95": 300, "max": 300}
    assert length_stats({}) == {"count": 0, "mean": None, "p50": None, "p95": None, "max": None}
