"""File checksums recorded in the manifests and checked by validate, publish and the server (which ships this
module)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def files_sha256(paths: Iterable[Path]) -> list[str]:
    """The checksums of many files, on every core: hashlib releases the GIL while it hashes."""
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        return list(pool.map(file_sha256, paths))
