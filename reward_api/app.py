"""Zero-argument app factory: `uvicorn --factory reward_api.app:create_app`, and openenv.yaml's `app:`.

Settings come from the environment, as for `python -m reward_api` (CONTEXTCORRUPTION_DATA, _REVISION, _ANSWERS,
_ANSWERS_REVISION, _CACHE_MB, _SESSION_TIMEOUT; the API token and the state-token key too): CONTEXTCORRUPTION_DATA
may be a folder or a Hub dataset repo id, downloaded at `_REVISION` here. With several uvicorn workers set
CONTEXTCORRUPTION_STATE_KEY, or each worker signs state tokens with a key of its own and refuses the others' tokens,
and pin _REVISION to a tag or commit when _DATA is a repo id: each worker downloads it when it starts, so one
restarted after a push would serve the newer build (`python -m reward_api --workers N` downloads once for all).
"""

from __future__ import annotations

from fastapi import FastAPI

from reward_api.__main__ import create_app as app_for
from reward_api.__main__ import downloaded, load_settings, skip_web_ui


def create_app() -> FastAPI:
    """The server for the dataset the environment names; a missing or broken dataset raises StoreError naming it, a
    bad variable SettingError naming it (`CONTEXTCORRUPTION_PORT: ...`)."""
    skip_web_ui()
    return app_for(downloaded(load_settings({})))
