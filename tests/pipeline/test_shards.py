"""The shard plan: contiguous ids in split order, whole row groups spread evenly, refusals."""

from __future__ import annotations

import pytest

from pipeline.shards import plan_shards


def test_plan_shards_contiguous_in_split_order():
    plans = plan_shards({"test": 5, "train": 10, "validation": 4}, shard_rows=4, row_group_rows=2)
    assert [(p.split, p.index, p.count, p.first_id, p.num_rows) for p in plans] == [
        ("train", 0, 3, 0, 4),
        ("train", 1, 3, 4, 4),
        ("train", 2, 3, 8, 2),
        ("validation", 0, 1, 10, 4),
        ("test", 0, 2, 14, 4),
        ("test", 1, 2, 18, 1),
    ]
    assert plans[0].path == "data/train-00000-of-00003.parquet"


def test_plan_shards_spreads_whole_row_groups_over_a_multiple_of_shards():
    plans = plan_shards({"train": 1000, "validation": 100, "test": 80}, shard_rows=512, row_group_rows=16, multiple=4)
    by_split = {split: [p.num_rows for p in plans if p.split == split] for split in ("train", "validation", "test")}
    # 1000 rows = 63 groups of 16 over 4 shards (2 needed, rounded up to 4); the last group (8 rows) is short.
    assert by_split["train"] == [256, 256, 256, 232]
    assert by_split["validation"] == [32, 32, 32, 4]
    assert by_split["test"] == [32, 16, 16, 16]
    assert [p.first_id for p in plans[:4]] == [0, 256, 512, 768]


@pytest.mark.parametrize(
    ("counts", "shard_rows", "multiple", "message"),
    [
        ({"train": 1, "validation": 1}, 4, 1, "splits"),
        ({"train": 1, "validation": 0, "test": 1}, 4, 1, "validation"),
        ({"train": 1, "validation": 1, "test": 1}, 0, 1, "shard_rows"),
        ({"train": 1, "validation": 1, "test": 1}, 4, 0, "multiple"),
        ({"train": 64, "validation": 16, "test": 8}, 16, 4, "test: 8 rows make 2 row groups of 4, too few for 4"),
    ],
)
def test_plan_shards_refuses_bad_input(counts, shard_rows, multiple, message):
    with pytest.raises(ValueError, match=message):
        plan_shards(counts, shard_rows, row_group_rows=4, multiple=multiple)
