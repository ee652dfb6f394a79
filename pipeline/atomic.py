"""Files written beside their target and renamed into place: a reader finds the old file or the new one, never half
of one. Its own module, free of the table libraries, so the reward server image can write with it too."""

from __future__ import annotations

import os
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    """Write beside the target and rename, so readers never see a half-written file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
