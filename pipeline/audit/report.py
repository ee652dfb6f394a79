"""The audit's figures as markdown: a table for the benchmark's output and a section for the dataset card."""

from __future__ import annotations

from pipeline.audit.frame import MIN_FACTS, MIN_GROUP
from pipeline.audit.scoring import AuditReport, separation
from pipeline.schema import CORRUPTION_LEVELS


def _cell(auc: float | None) -> str:
    return "–" if auc is None else f"{separation(auc):.3f}"


def markdown(report: AuditReport) -> str:
    """One row per cue: its separation max(AUC, 1 - AUC) overall, per kind, and in its most separated type group."""
    lines = [
        "| cue (each cell its separation, max(AUC, 1 − AUC)) | all | "
        + " | ".join(CORRUPTION_LEVELS)
        + " | most separated answer-type group |",
        "|---|---:|" + "---:|" * len(CORRUPTION_LEVELS) + "---|",
    ]
    for cue in report.cues:
        kinds = [_cell(cue.auc_by_kind.get(kind)) for kind in CORRUPTION_LEVELS]
        types = cue.auc_by_answer_type
        worst = max(types, key=lambda group: separation(types[group]), default=None)
        group = f"{worst} {_cell(types[worst])}" if worst else "–"
        lines.append(f"| {cue.name}: {cue.description} | {_cell(cue.auc)} | " + " | ".join(kinds) + f" | {group} |")
    return "\n".join(lines)


def card_section(report: AuditReport) -> str:
    """A dataset-card section: what the audit tried and what it found."""
    defects = report.defects()
    verdict = (
        f"No cue separates more than {report.limit}, overall, per corruption kind or per answer type."
        if not defects
        else "Above the limit: " + "; ".join(f"{cue} on {group} ({value:.3f})" for cue, group, value in defects) + "."
    )
    return (
        "## Shortcut audit\n\n"
        "Can one document, read alone, be told corrupt or clean, or by its layout beside its episode's other "
        "documents, leaving out the values they claim (telling a claim that differs from the others' is the skill "
        "to learn)? `benchmarks/audit.py` asks the generator, on a build "
        "at the default params (every build's documents come from the same templates and draws). Each cue below is "
        "learned (logistic regression, or boosted trees for the number pair and the combined and relative layouts) on "
        f"{report.train_documents:,} train-split documents and scored by "
        f"ROC AUC on {report.eval_documents:,} validation-split documents (other facts): one model over all of them "
        "(also scored within each answer type), and one per corruption kind, learned and scored on that kind's "
        "documents against the clean documents of the same episodes (also within each answer type). A cue is judged "
        "by its separation max(AUC, 1 − AUC), whichever side it ranks first: 0.5 is chance, and an AUC of 0.38 is as "
        f"much a tell as 0.62. The limit is {report.limit}; groups with fewer than {MIN_GROUP} corrupt or clean "
        f"documents, or whose clean documents are about fewer than {MIN_FACTS} facts, are not judged. {verdict}"
        f"\n\n{markdown(report)}\n"
    )
