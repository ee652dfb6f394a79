"""No shortcut in the data: can one document, read alone or by its layout beside its episode's others, tell whether
it is corrupt?

Each cue (`cues`) turns a single document, the value it asserts, or its layout relative to its episode's other
documents, into features (`features`); models learn
"corrupt or clean" from one set of episodes and are scored by ROC AUC on another set with other facts
(`scoring`), over all documents, per corruption kind, per answer type and per kind within a type (`frame`).
No claimed value is cross-referenced between documents, so a separation max(AUC, 1 - AUC) well above 0.5 is a tell an
agent could learn instead of weighing sources. Anything above `AUC_LIMIT` is a defect in the generator; the
report (`report`) names the cue, the group, its strongest features and the documents that show it.
"""

try:
    import sklearn  # noqa: F401
except ModuleNotFoundError as err:
    raise ModuleNotFoundError(
        "pipeline.audit needs scikit-learn: pip install 'contextcorruption[audit]' (or the dev extra)", name=err.name
    ) from err

from pipeline.audit.cues import CUES, Cue
from pipeline.audit.features import skeleton
from pipeline.audit.frame import MIN_FACTS, MIN_GROUP, document_frame, judged, read_split
from pipeline.audit.report import card_section, markdown
from pipeline.audit.scoring import AUC_LIMIT, AuditReport, CueResult, audit, run_cue, separation

__all__ = [
    "AUC_LIMIT",
    "CUES",
    "MIN_FACTS",
    "MIN_GROUP",
    "AuditReport",
    "Cue",
    "CueResult",
    "audit",
    "card_section",
    "document_frame",
    "judged",
    "markdown",
    "read_split",
    "run_cue",
    "separation",
    "skeleton",
]
