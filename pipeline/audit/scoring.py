"""The scoring of a cue: models learned on train documents, ROC AUC on held-out documents, judged by separation.

A cue is judged by how well it separates corrupt from clean documents whatever the direction: an AUC of 0.38
(clean documents ranked first) is as much a tell as 0.62, so the judged figure is max(AUC, 1 - AUC).
One model learns from every document (scored overall and per answer type), and one per corruption kind learns
from that kind's documents against the clean ones of the same episodes (scored on that kind, and on it within
each answer type): a tell of one kind is found even where the other kinds hide it overall.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from pydantic import BaseModel, Field
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import Pipeline

from pipeline.audit.cues import CUES, Cue
from pipeline.audit.frame import document_frame, judged, kind_groups, type_groups
from pipeline.schema import CORRUPTION_LEVELS

AUC_LIMIT = 0.6  # the most separation (max(AUC, 1 - AUC)) a cue may reach in any judged group


def separation(auc: float) -> float:
    """How far a ranking tells the two sides apart, whichever it ranks first: max(AUC, 1 - AUC)."""
    return max(auc, 1.0 - auc)


class CueResult(BaseModel):
    name: str
    description: str
    auc: float = Field(description="ROC AUC of corrupt vs clean over every evaluated document")
    auc_by_kind: dict[str, float] = Field(description="ROC AUC of one kind's documents vs the clean ones")
    auc_by_answer_type: dict[str, float] = Field(
        description="ROC AUC within one answer type (`year`), and of one kind within it (`year/inversion`)"
    )
    corrupt_features: dict[str, list[str]] = Field(
        description="Per model (`all` or a kind): features weighted most towards corrupt, strongest first"
    )
    clean_features: dict[str, list[str]] = Field(
        description="Per model (`all` or a kind): features weighted most towards clean, strongest first"
    )
    examples: dict[str, list[str]] = Field(
        description="Per group above the limit: distinct inputs of the corrupt documents that show the tell most"
    )

    def groups(self) -> dict[str, float]:
        """Every judged group's ROC AUC, `all` first."""
        return {"all": self.auc, **self.auc_by_kind, **self.auc_by_answer_type}


class AuditReport(BaseModel):
    limit: float = AUC_LIMIT
    train_documents: int
    eval_documents: int
    eval_by_kind: dict[str, int]
    cues: list[CueResult]

    def defects(self) -> list[tuple[str, str, float]]:
        """(cue, group, separation) for every group whose separation max(AUC, 1 - AUC) is above the limit."""
        return [
            (cue.name, group, round(separation(auc), 4))
            for cue in self.cues
            for group, auc in cue.groups().items()
            if separation(auc) > self.limit
        ]


def _take(inputs, rows: np.ndarray):
    """The cue inputs of documents `rows`."""
    if isinstance(inputs, list):
        return [inputs[i] for i in rows]
    return inputs[rows]


def _shown(inputs, i: int) -> str:
    """Document `i`'s cue inputs as text."""
    if isinstance(inputs, pl.DataFrame):
        return ", ".join(f"{name}={value}" for name, value in inputs.row(i, named=True).items())
    return " | ".join(map(str, inputs[i])) if isinstance(inputs[i], (list, np.ndarray)) else str(inputs[i])


def _features(model: Pipeline, top: int) -> tuple[list[str], list[str]]:
    """Features of a linear model weighted most towards corrupt and towards clean (none for the boosted one)."""
    if not hasattr(model[-1], "coef_"):
        return [], []
    names, weights = model[0].get_feature_names_out(), model[-1].coef_[0]
    order = np.argsort(weights)
    shown = [f"{names[i]} ({weights[i]:+.2f})" for i in order]
    return shown[::-1][:top], shown[:top]


def _examples(inputs, score: np.ndarray, corrupt: np.ndarray, auc: float, top: int) -> list[str]:
    """Distinct inputs of the corrupt documents at the telling end of the ranking (the lowest when AUC < 0.5)."""
    ranked = np.argsort(-np.where(corrupt, score if auc >= 0.5 else -score, -np.inf))[: 50 * top]
    return list(dict.fromkeys(_shown(inputs, i) for i in ranked.tolist() if corrupt[i]))[:top]


def run_cue(cue: Cue, train: pl.DataFrame, evaluation: pl.DataFrame, top: int = 5) -> CueResult:
    """Fit `cue`'s models on `train` documents (corrupt vs clean) and score them on `evaluation`'s groups."""
    fit_inputs, inputs = cue.inputs(train), cue.inputs(evaluation)
    fit_corrupt, corrupt = train["corrupt"].to_numpy(), evaluation["corrupt"].to_numpy()
    facts = evaluation["fact_id"].to_numpy()
    fit_picks = {"all": np.ones(train.height, dtype=bool), **kind_groups(train)}
    picks = {"all": np.ones(evaluation.height, dtype=bool), **kind_groups(evaluation)}
    corrupt_features, clean_features, auc, examples = {}, {}, {}, {}
    for name, pick in picks.items():
        model, rows, held = cue.model(), np.flatnonzero(fit_picks[name]), np.flatnonzero(pick)
        model.fit(_take(fit_inputs, rows), fit_corrupt[rows])
        score = np.zeros(evaluation.height)
        score[held] = model.decision_function(_take(inputs, held))
        corrupt_features[name], clean_features[name] = _features(model, top)
        for group, within in judged({name: pick} | type_groups(evaluation, name, pick), corrupt, facts).items():
            auc[group] = round(float(roc_auc_score(corrupt[within], score[within])), 4)
            if separation(auc[group]) > AUC_LIMIT:
                examples[group] = _examples(
                    _take(inputs, np.flatnonzero(within)), score[within], corrupt[within], auc[group], top
                )
    return CueResult(
        name=cue.name,
        description=cue.description,
        auc=auc.pop("all"),
        auc_by_kind={name: auc.pop(name) for name in CORRUPTION_LEVELS if name in auc},
        auc_by_answer_type=auc,
        corrupt_features=corrupt_features,
        clean_features=clean_features,
        examples=examples,
    )


def audit(train, evaluation, cues: tuple[Cue, ...] = CUES) -> AuditReport:
    """Every cue learned on the episodes `train` and scored on the (disjoint) episodes `evaluation` (Arrow tables)."""
    fit, held = document_frame(train), document_frame(evaluation)
    if set(fit["episode_id"].to_list()) & set(held["episode_id"].to_list()):
        raise ValueError("train and evaluation episodes overlap: an audit needs disjoint episodes")
    for name, frame in (("train", fit), ("evaluation", held)):
        if frame["corrupt"].all() or not frame["corrupt"].any():
            raise ValueError(f"the {name} episodes need both corrupt and clean documents")
    return AuditReport(
        train_documents=fit.height,
        eval_documents=held.height,
        eval_by_kind=dict(sorted(held["kind"].value_counts().iter_rows())),
        cues=[run_cue(cue, fit, held) for cue in cues],
    )
