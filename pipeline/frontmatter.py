"""The dataset card's front matter as the manifest and the shards give it: `configs:` maps each split to its files, so
`load_dataset` reads a local folder exactly as it reads the Hub repo, and `dataset_info:` records each split's sizes,
by which `datasets` tells builds apart. Publishing checks a card against them (`card_problem`) without the card's
other inputs (pipeline.card)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from pipeline.schema import CARD_NAME, MANIFEST_NAME, SPLITS, Manifest, hidden_config


def split_bytes(root: Path, manifest: Manifest) -> dict[str, int]:
    """Each split's uncompressed Parquet bytes, from the shards' footers (`push_to_hub` would record Arrow's
    in-memory size, ~3% more for these columns, which only reading every shard would tell)."""
    sizes = dict.fromkeys(SPLITS, 0)
    for shard in manifest.shards:
        meta = pq.read_metadata(Path(root) / shard.path)
        sizes[shard.split] += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return sizes


def configs(hidden: list[str]) -> list[dict]:
    """The `configs:` of the front matter: the public splits in `default`; each hidden split, whose files lack the
    hidden columns, in a config of its own (one config's files must share their columns)."""
    public = [{"split": split, "path": f"data/{split}-*.parquet"} for split in SPLITS if split not in hidden]
    return [{"config_name": "default", "data_files": public}] + [
        {"config_name": hidden_config(split), "data_files": [{"split": split, "path": f"data/{split}-*.parquet"}]}
        for split in SPLITS
        if split in hidden
    ]


def dataset_info(manifest: Manifest, sizes: Mapping[str, int]) -> list[dict]:
    """The `dataset_info:` of the front matter, per config as `push_to_hub` writes it: each split's rows and
    uncompressed bytes (`split_bytes`), and its files' bytes. `datasets` keys its cache of a local folder by these
    and the `configs:` patterns, not by the files: without them a folder rebuilt with other params loaded as the
    build cached first. It also checks the row counts."""
    infos = []
    for config in configs(manifest.hidden_splits):
        names = [entry["split"] for entry in config["data_files"]]
        splits = [{"name": n, "num_bytes": sizes[n], "num_examples": manifest.splits[n].num_rows} for n in names]
        download = sum(shard.bytes for shard in manifest.shards if shard.split in names)
        dataset = sum(split["num_bytes"] for split in splits)
        infos.append(
            {
                "config_name": config["config_name"],
                "splits": splits,
                "download_size": download,
                "dataset_size": dataset,
            }
        )
    return infos


def card_problem(root: Path, manifest: Manifest) -> str | None:
    """What in the folder's card contradicts its manifest, or None: the front matter's `configs:` and
    `dataset_info:`, which `load_dataset` reads (another build's row counts fail its split check)."""
    try:
        before, head, _ = (Path(root) / CARD_NAME).read_text(encoding="utf-8").split("---\n", 2)
        meta = None if before else yaml.safe_load(head)
    except (ValueError, yaml.YAMLError):  # no front matter, not UTF-8 (UnicodeDecodeError), not YAML
        meta = None
    if not isinstance(meta, dict):
        return f"{CARD_NAME} has no readable YAML front matter"
    expected = {
        "configs": configs(manifest.hidden_splits),
        "dataset_info": dataset_info(manifest, split_bytes(root, manifest)),
    }
    if differ := [key for key, value in expected.items() if meta.get(key) != value]:
        return f"{CARD_NAME}'s {' and '.join(differ)} differ from what {MANIFEST_NAME} gives (another build's card?)"
    return None
