"""benchmarks/audit.py charts the audit report it writes."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image

from benchmarks.audit import chart
from pipeline.audit import AuditReport

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "audit.json"


def test_the_chart_has_a_row_for_every_cue(tmp_path):
    """The committed report's cues, all of them and the first two: a PNG at least 20 pixels taller a cue."""
    stored = json.loads(RESULTS.read_text(encoding="utf-8"))
    report = AuditReport.model_validate({key: stored[key] for key in AuditReport.model_fields})
    heights = []
    for cues in (report.cues, report.cues[:2]):
        path = tmp_path / f"{len(cues)}.png"
        chart(report.model_copy(update={"cues": cues}), path)
        heights.append(matplotlib.image.imread(path).shape[0])
    assert heights[0] - heights[1] >= 20 * (len(report.cues) - 2) > 0
