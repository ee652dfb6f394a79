"""The shard plan: which rows of which split each Parquet file holds (README: Build the dataset).

Pure arithmetic on the split counts, kept apart from the writer so that reading and checking params (training
machines among them) needs no dataframe library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.schema import SPLITS


@dataclass(frozen=True)
class ShardPlan:
    """One shard to write: rows first_id .. first_id + num_rows - 1 of `split`, file `index` of `count`."""

    split: str
    index: int
    count: int
    first_id: int
    num_rows: int

    @property
    def path(self) -> str:
        return f"data/{self.split}-{self.index:05d}-of-{self.count:05d}.parquet"


def plan_shards(counts: Mapping[str, int], shard_rows: int, row_group_rows: int, multiple: int = 1) -> list[ShardPlan]:
    """Shards of at most `shard_rows` rows, their count per split a multiple of `multiple`; ids are global and
    contiguous in SPLITS order.

    A split's row groups are spread over its shards as evenly as possible, so every shard holds whole row groups
    (only the split's last group is shorter) and ranks streaming whole shards (`split_dataset_by_node` with a
    shard count divisible by the world size) get equal work.
    """
    if set(counts) != set(SPLITS):
        raise ValueError(f"counts needs exactly the splits {list(SPLITS)}, got {sorted(counts)}")
    for name, value in (("shard_rows", shard_rows), ("row_group_rows", row_group_rows), ("multiple", multiple)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    plans: list[ShardPlan] = []
    first_id = 0
    for split in SPLITS:
        rows = counts[split]
        if rows < 1:
            raise ValueError(f"counts[{split!r}] must be >= 1, got {rows}")
        count = shard_count(rows, shard_rows, multiple)
        groups = row_groups(rows, row_group_rows)
        if groups < count:
            raise ValueError(
                f"{split}: {rows} rows make {groups} row groups of {row_group_rows}, too few for {count} shards "
                f"(a multiple of {multiple})"
            )
        base, extra = divmod(groups, count)
        left = rows
        for index in range(count):
            size = min((base + (index < extra)) * row_group_rows, left)
            plans.append(ShardPlan(split, index, count, first_id, size))
            first_id += size
            left -= size
    return plans


# A shard's file is written whole by one worker; a dataset's shards all lie in its data/ folder, and the Hub
# recommends under 10,000 entries per folder.
MAX_SHARD_ROWS = 2**20
MAX_SHARDS = 10_000


def shard_count(rows: int, shard_rows: int, multiple: int) -> int:
    """Shards needed for `rows` rows of at most `shard_rows` each, rounded up to a multiple of `multiple`."""
    needed = -(-rows // shard_rows)
    return -(-needed // multiple) * multiple


def row_groups(rows: int, row_group_rows: int) -> int:
    """Row groups of `row_group_rows` that hold `rows` rows (the last may be shorter)."""
    return -(-rows // row_group_rows)
