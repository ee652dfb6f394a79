"""Temporary: a small Hub-layout episode folder written by hand with pyarrow + EPISODE_SCHEMA.

Used until `pipeline.episodes.build_episodes` is committed; then the suite's `dataset_dir` replaces it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.schema import CORRUPTION_LEVELS, EPISODE_SCHEMA, NUM_DOCS, SPLITS, TASKS

_CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
  - split: validation
    path: data/validation-*
  - split: test
    path: data/test-*
---
# Handmade episodes
"""


def _episode(episode_id: int, split: str, rng: np.random.Generator) -> dict:
    year = int(rng.integers(1700, 2000))
    town = f"Town{int(rng.integers(0, 10_000))}"
    k = int(rng.integers(1, 5))
    corrupt = sorted(int(i) for i in rng.choice(NUM_DOCS, size=k, replace=False))
    kinds, claims, docs = [], [], []
    for doc_id in range(NUM_DOCS):
        if doc_id in corrupt:
            kind = CORRUPTION_LEVELS[corrupt.index(doc_id)]
            claim = str(year + int(rng.integers(1, 60)))
        else:
            kind, claim = "none", str(year)
        kinds.append(kind)
        claims.append(claim)
        docs.append({"doc_id": doc_id, "title": f"History of {town}", "content": f"{town} was founded in {claim}."})
    return {
        "episode_id": episode_id,
        "split": split,
        "task": TASKS[k - 1],
        "question": f"In which year was {town} founded?",
        "documents": docs,
        "max_budget": 12,
        "fact_id": f"hand:{town}",
        "source": "handmade",
        "answer_type": "year",
        "answer": str(year),
        "answer_aliases": [],
        "corrupt_ids": corrupt,
        "doc_corruption": kinds,
        "doc_claims": claims,
    }


def write_handmade(out: Path, counts: dict[str, int], shards: int = 2, seed: int = 7) -> Path:
    rng = np.random.default_rng(seed)
    (out / "data").mkdir(parents=True)
    (out / "README.md").write_text(_CARD)
    first = 0
    for split in SPLITS:
        rows = [_episode(first + i, split, rng) for i in range(counts[split])]
        first += counts[split]
        for index, part in enumerate(np.array_split(np.arange(len(rows)), shards)):
            table = pa.Table.from_pylist([rows[i] for i in part], schema=EPISODE_SCHEMA)
            pq.write_table(table, out / "data" / f"{split}-{index:05d}-of-{shards:05d}.parquet")
    return out
