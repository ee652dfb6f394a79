"""Where the served dataset comes from: a local folder, or a Hub dataset repo downloaded at start-up."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from reward_api.store import StoreError

log = logging.getLogger(__name__)

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def dataset_folder(
    source: str, revision: str | None = None, endpoint: str | None = None, cache_dir: Path | None = None
) -> Path:
    """A local folder as is (`revision` ignored, as training does); otherwise `source` is a Hub repo id fetched with
    snapshot_download at `revision`."""
    local = Path(source)
    try:
        is_folder = local.is_dir()
    except OSError as err:  # a folder on the way that may not be searched (Python 3.11 raises here)
        raise StoreError(f"{source}: cannot be read ({err.strerror or err})") from None
    if is_folder:
        if revision is not None:
            log.warning("--revision %s ignored: %s is a local folder", revision, source)
        return local
    if not _REPO_ID.match(source):
        raise StoreError(f"{source}: no such dataset folder, and not a Hub repo id (namespace/name)")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    log.info("downloading dataset %s at revision %s from the Hub", source, revision or "main")
    try:
        path = snapshot_download(
            source, repo_type="dataset", revision=revision, endpoint=endpoint, cache_dir=cache_dir
        )
    except (HfHubHTTPError, OSError, ValueError) as exc:
        hint = "" if local.exists() else f" (and there is no local folder {source})"
        raise StoreError(f"{source}@{revision or 'main'}: Hub download failed{hint}: {exc}") from exc
    return Path(path)
