"""Shortcut audit: can a single document, read alone, be told corrupt or clean? (pipeline/audit/)

    .venv/bin/python benchmarks/audit.py                          # data/episodes: 20k train episodes, all validation
    .venv/bin/python benchmarks/audit.py --train-episodes 5000 --eval-episodes 5000 --out /tmp/audit.json

Every cue is learned on the first `--train-episodes` of the train split (ids are already a random order) and
scored on the validation split: facts never cross splits, so no fact is learned by heart (a real-world fact's
wrong claims are other facts' answers from every split, train's among them: see README's Shortcut audit, which
this audit does not measure). A cue is judged by
its separation max(AUC, 1 - AUC), whichever side it ranks first. Writes the report (JSON, raw AUCs) and the
dataset-card section (markdown, same name .md) and a chart of every cue's separations (same name .png); prints the
section, then every cue above the limit with the strongest features of the model that found it, and examples. Exits 1
when a cue is above the limit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `pipeline` from this checkout

from pipeline.audit import AuditReport, audit, card_section, read_split, separation  # noqa: E402
from pipeline.schema import CORRUPTION_LEVELS  # noqa: E402


def chart(report: AuditReport, path: Path) -> None:
    """One row per cue: its separation over all documents, per corruption kind, and in every answer-type group
    (judged groups only), beside chance (0.5) and the limit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.32 * len(report.cues) + 1.2))
    rows = range(len(report.cues))[::-1]
    for row, cue in zip(rows, report.cues, strict=True):
        label = (lambda name: name) if row == rows[0] else (lambda name: None)  # each legend entry once
        groups = [separation(auc) for auc in cue.auc_by_answer_type.values()]
        ax.scatter(groups, [row] * len(groups), s=9, color="0.7", label=label("an answer-type group"))
        for i, kind in enumerate(CORRUPTION_LEVELS):
            if kind in cue.auc_by_kind:
                ax.scatter(separation(cue.auc_by_kind[kind]), row, s=16, color=f"C{i + 1}", label=label(kind))
        ax.scatter(separation(cue.auc), row, s=40, marker="D", color="C0", label=label("all documents"))
    ax.axvline(0.5, color="0.5", linewidth=0.8)
    ax.axvline(report.limit, color="C3", linestyle="--", linewidth=1, label=f"limit {report.limit}")
    names = [f"{cue.name} (baseline)" if cue.description.startswith("baseline") else cue.name for cue in report.cues]
    ax.set_yticks(list(rows), names, fontsize=8)
    ax.set_xlim(0.49, max(report.limit + 0.03, *(separation(a) for c in report.cues for a in c.groups().values())))
    ax.set_xlabel("separation of corrupt from clean documents, max(AUC, 1 − AUC)")
    ax.set_title(f"Shortcut audit: {report.eval_documents:,} validation documents, one read at a time", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


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
    chart(report, args.out.with_suffix(".png"))
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
