"""Shortcut audit: can a single document, read alone, be told corrupt or clean? (pipeline/audit/)

    .venv/bin/python benchmarks/audit.py                          # data/episodes: 20k train episodes, all validation
    .venv/bin/python benchmarks/audit.py --train-episodes 5000 --eval-episodes 5000 --out /tmp/audit.json

Every cue is learned on the first `--train-episodes` of the train split (ids are already a random order) and
scored on the validation split: facts never cross splits, so no fact is learned by heart (a real-world fact's
wrong claims are other facts' answers from every split, train's among them: see README's Shortcut audit, which
this audit does not measure). A cue is judged by
its separation max(AUC, 1 - AUC), whichever side it ranks first. Writes the report (JSON, raw AUCs) and the
dataset-card section (markdown, same name .md); prints the section, then every cue above the limit with the
strongest features of the model that found it, and examples. Exits 1 when a cue is above the limit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `pipeline` from this checkout

from pipeline.audit import audit, card_section, read_split  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "episodes", help="dataset folder")
    parser.add_argument("--train-episodes", type=int, default=20_000)
    parser.add_argument("--eval-episodes", type=int, default=None, help="default: the whole validation split")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "audit.json")
    args = parser.parse_args()

    started = time.perf_counter()
    report = audit(
        read_split(args.data, "train", args.train_episodes), read_split(args.data, "validation", args.eval_episodes)
    )
    seconds = round(time.perf_counter() - started, 1)
    data = args.data.resolve()
    result = {"data": str(data.relative_to(ROOT) if data.is_relative_to(ROOT) else data), "seconds": seconds}
    result.update(report.model_dump())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    counts = f"{report.train_documents:,} train documents, {report.eval_documents:,} evaluated"
    print(f"{counts} {report.eval_by_kind}, {seconds} s")
    card = card_section(report)
    args.out.with_suffix(".md").write_text(card, encoding="utf-8")
    print(card)
    defects = report.defects()
    for name, group, value in defects:
        cue = next(c for c in report.cues if c.name == name)
        model = group.split("/")[-1] if group.split("/")[-1] in cue.corrupt_features else "all"
        print(f"\nDEFECT {name} on {group}: separation {value:.3f} > {report.limit} (AUC {cue.groups()[group]:.3f})")
        print(f"  towards corrupt ({model} model):", "; ".join(cue.corrupt_features[model]))
        print(f"  towards clean ({model} model):", "; ".join(cue.clean_features[model]))
        for example in cue.examples.get(group, []):
            print("  e.g.", example[:240])
    print(f"\n{len(defects)} cue(s) above {report.limit}; report in {args.out}")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
