"""How often a clean document denies a value a corrupt document of its episode claims (README, Results).

    .venv/bin/python benchmarks/denials.py                      # data/episodes, the validation split
    .venv/bin/python benchmarks/denials.py --split train --episodes 60000

Every document asserts its claim and denies another value; for a number, a clean document denies a neighbour of the
truth, which an inversion claims too. The denied number is read back from the text: the numbers of a document are
its claim, the value it denies and the year of the report it cites, which is never before either (a year answer's
document: its smallest other number is the denied one; a quantity's: its first that is not a 19xx or 20xx year).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"(?<![\d.,])\d[\d,]*(?:\.\d+)?(?!\d)")
YEAR = re.compile(r"(?:19|20)\d\d")


def denied(content: str, claim: str, answer_type: str) -> str | None:
    numbers = {n.rstrip(",") for n in NUMBER.findall(content)} - {claim}
    others = sorted(numbers, key=lambda n: float(n.replace(",", "")))  # by value: as text, "2015" < "476"
    if answer_type == "year":
        return others[0] if others else None
    return next((n for n in others if not YEAR.fullmatch(n)), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "episodes", help="dataset folder")
    parser.add_argument("--split", default="validation")
    parser.add_argument(
        "--episodes", type=int, default=None, help="the first N episodes of numeric facts (default: all)"
    )
    args = parser.parse_args()
    episodes = pl.scan_parquet(args.data / "data" / f"{args.split}-*.parquet").filter(
        pl.col("answer_type").is_in(["year", "quantity"])
    )
    if args.episodes is not None:
        episodes = episodes.head(args.episodes)
    docs = (
        episodes.select("episode_id", "answer_type", "documents", "doc_claims", "doc_corruption")
        .explode("documents", "doc_claims", "doc_corruption")
        .collect()
        .with_columns(
            denied=pl.struct("documents", "doc_claims", "answer_type").map_elements(
                lambda d: denied(d["documents"]["content"], d["doc_claims"], d["answer_type"]), return_dtype=pl.String
            )
        )
    )
    corrupt = docs.filter(pl.col("doc_corruption") != "none")
    claimed = corrupt.group_by("episode_id").agg(corrupt_claims=pl.col("doc_claims"))
    inverted = corrupt.filter(pl.col("doc_corruption") == "inversion").select("episode_id", inversion="doc_claims")
    clean = docs.filter(pl.col("doc_corruption") == "none")
    clean = clean.join(claimed, on="episode_id", how="left").join(inverted, on="episode_id", how="left")
    clean = clean.with_columns(
        corrupt=pl.col("corrupt_claims").list.contains(pl.col("denied")).fill_null(False),
        inversion=(pl.col("denied") == pl.col("inversion")).fill_null(False),
    )
    share = {"percent": (100 * pl.col("corrupt").mean()).round(1), "documents": pl.len()}
    by_type = clean.group_by("answer_type").agg(**share).sort("answer_type")
    result = {
        "split": args.split,
        "unread": clean["denied"].null_count(),
        "clean_documents_denying_a_corrupt_claim": {
            **{kind: {"percent": percent, "documents": n} for kind, percent, n in by_type.iter_rows()},
            "all": clean.select(**share).row(0, named=True),
        },
        "clean_documents_denying_the_inversions_claim_percent": round(100 * clean["inversion"].mean(), 1),
        "quantities_denied_past_3x_the_claim": far_denials(docs.filter(pl.col("answer_type") == "quantity")),
    }
    json.dump(result, sys.stdout, indent=2)
    print()


def far_denials(docs: pl.DataFrame) -> dict:
    """The documents whose denied value lies more than 3x above or below their claim (corruption's
    NEIGHBOUR_MAX_RATIO), and the farthest."""
    value = {name: pl.col(name).str.replace_all(",", "").cast(pl.Float64) for name in ("doc_claims", "denied")}
    ratio = pl.max_horizontal(value["doc_claims"] / value["denied"], value["denied"] / value["doc_claims"])
    far = docs.with_columns(ratio=ratio).filter(pl.col("ratio") > 3).sort("ratio", descending=True)
    farthest = far.select("doc_claims", "denied", pl.col("ratio").round(1)).head(1).to_dicts()
    return {"documents": len(far), "of": len(docs), "farthest": farthest[0] if farthest else None}


if __name__ == "__main__":
    main()
