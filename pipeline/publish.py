"""Publish stage: push the built dataset folder to the Hugging Face Hub and tag the commit that consumers pin.

Publishing is opt-in. With `hub.repo_id` empty or no token, the stage logs one line saying how to enable it and
writes a receipt that says it was skipped (DVC needs the output either way). Otherwise the Hub repo becomes an
exact mirror of data/episodes (remote files the folder lacks are deleted, `.gitattributes` aside), and the upload
is resumable: upload_folder skips files the Hub already holds, so re-running after an interruption completes it.
A repo that already exists with the other visibility than `hub.private` is refused before anything is uploaded.
The receipt is written last, after the tag exists: a failed publish leaves no receipt at all.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Literal

from huggingface_hub import HfApi, get_token

# The transport's base error (httpx2 in huggingface_hub 2.x, httpx in 1.x); HfHubHTTPError derives from it.
from huggingface_hub.errors import HFValidationError, HTTPError
from pydantic import BaseModel, ConfigDict

from pipeline.filechecks import published_hidden_columns
from pipeline.params import DEFAULT_PARAMS, HubParams, ParamsError, read_params, section
from pipeline.schema import ManifestError
from pipeline.writer import read_manifest, write_text_atomic

log = logging.getLogger(__name__)

FOLDER = Path("data/episodes")
RECEIPT = Path("data/publish/receipt.json")
HOW_TO_ENABLE = "set hub.repo_id in params.yaml (e.g. your-org/context-corruption) and export HF_TOKEN"


class PublishError(RuntimeError):
    """A publish step failed; the message names the step and how to resume."""


class Receipt(BaseModel):
    """`data/publish/receipt.json`: what was pushed where, or why nothing was."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: Literal["published", "skipped"]
    reason: str | None = None
    repo_id: str | None = None
    revision_tag: str | None = None
    commit: str | None = None
    url: str | None = None
    files: int = 0
    bytes: int = 0


def skip_reason(hub: HubParams, token: str | None) -> str | None:
    """Why publishing must be skipped, or None when it can go ahead."""
    if not hub.repo_id:
        return "hub.repo_id is empty"
    if not token:
        return "no Hugging Face token (HF_TOKEN is unset and there is no stored login)"
    return None


def folder_files(folder: Path) -> list[Path]:
    """The files to push; a hidden split's file holding a hidden column is never pushed (the answers folder, its
    ground truth, lies beside the folder and is never part of it)."""
    try:
        manifest = read_manifest(folder)
    except ManifestError as err:
        raise PublishError(str(err)) from None
    if leaks := published_hidden_columns(folder, manifest):
        raise PublishError(f"refusing to publish the ground truth of a hidden split: {'; '.join(leaks)}")
    return sorted(path for path in folder.rglob("*") if path.is_file())


def publish(folder: Path, hub: HubParams, token: str, endpoint: str | None = None) -> Receipt:
    """create_repo + upload_folder + create_tag; a tag that already names another commit is an error, and so is
    an existing repo whose visibility is not `hub.private` (it is never changed here, nor is anything uploaded)."""
    files = folder_files(folder)
    api = HfApi(endpoint=endpoint, token=token)
    step = "creating the repo"
    try:
        api.create_repo(hub.repo_id, repo_type="dataset", exist_ok=True, private=hub.private)
        step = "reading the repo's visibility"
        _check_visibility(api, hub)
        step = "uploading"
        commit = api.upload_folder(
            repo_id=hub.repo_id,
            folder_path=folder,
            repo_type="dataset",
            commit_message=f"Dataset {hub.revision_tag}: {len(files)} files",
            delete_patterns=["*"],
        ).oid
        step = f"tagging {hub.revision_tag}"
        api.create_tag(hub.repo_id, tag=hub.revision_tag, revision=commit, repo_type="dataset", exist_ok=True)
        tagged = api.repo_info(hub.repo_id, repo_type="dataset", revision=hub.revision_tag).sha
    except (HTTPError, HFValidationError, OSError) as err:
        raise PublishError(
            f"publishing {folder} to {api.endpoint} dataset {hub.repo_id!r} failed while {step}: {err}. "
            "Nothing was tagged by this run; re-run `dvc repro publish` to resume (files already uploaded are skipped)"
        ) from err
    if tagged != commit:
        raise PublishError(
            f"tag {hub.revision_tag!r} of {hub.repo_id} already names commit {tagged}, not the uploaded {commit}: "
            "a published revision never moves; set a new hub.revision_tag in params.yaml (e.g. v2)"
        )
    return Receipt(
        status="published",
        repo_id=hub.repo_id,
        revision_tag=hub.revision_tag,
        commit=commit,
        url=f"{api.endpoint}/datasets/{hub.repo_id}/tree/{hub.revision_tag}",
        files=len(files),
        bytes=sum(path.stat().st_size for path in files),
    )


def _check_visibility(api: HfApi, hub: HubParams) -> None:
    """Refuse a repo that already exists with the other visibility: create_repo(exist_ok=True) keeps it as it is."""
    private = api.repo_info(hub.repo_id, repo_type="dataset").private
    if private != hub.private:
        raise PublishError(
            f"{api.endpoint} dataset {hub.repo_id!r} exists and is {'private' if private else 'public'}, but "
            f"params.yaml has hub.private: {str(hub.private).lower()}; nothing was uploaded. Change the repo's "
            f"visibility on the Hub, or set hub.private: {str(bool(private)).lower()}"
        )


def write_receipt(receipt: Receipt, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(receipt.model_dump(mode="json"), sort_keys=True, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    parser.add_argument("--folder", type=Path, default=FOLDER, help="the dataset folder to push")
    parser.add_argument("--receipt", type=Path, default=RECEIPT)
    args = parser.parse_args(argv)
    args.receipt.unlink(missing_ok=True)  # a stale receipt must never vouch for this run
    try:
        hub = section(read_params(args.params), "hub", HubParams, args.params)
        token = get_token()
        reason = skip_reason(hub, token)
        if reason:
            log.warning("Publishing skipped: %s. To publish, %s.", reason, HOW_TO_ENABLE)
            receipt = Receipt(status="skipped", reason=reason)
        else:
            receipt = publish(args.folder, hub, token)
            log.info(
                "Published %d files (%d bytes): %s (commit %s)",
                receipt.files,
                receipt.bytes,
                receipt.url,
                receipt.commit,
            )
    except (ParamsError, PublishError) as err:
        log.error("publish: %s", err)
        return 1
    write_receipt(receipt, args.receipt)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per HTTP request otherwise
    sys.exit(main())
