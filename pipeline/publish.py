"""Publish stage: push the built dataset folder to the Hugging Face Hub and tag the commit that consumers pin.

Publishing is opt-in. With `hub.repo_id` empty or no token, the stage logs one line saying how to enable it and
writes a receipt that says it was skipped (DVC needs the output either way). Otherwise the Hub repo becomes an
exact mirror of data/episodes (remote files the folder lacks are deleted, `.gitattributes` aside), and the upload
is resumable: upload_folder skips files the Hub already holds, so re-running after an interruption completes it.
A folder the validate stage has not passed (its metrics missing, naming another manifest, or counting violations),
a repo that already exists with the other visibility than `hub.private`, a shard whose bytes are not the manifest's,
and a tag that already names other files are refused before anything is uploaded; a tag that already names exactly
the folder's files makes the run a no-op (a published revision never moves).
The receipt is written last, after the tag exists: a failed publish leaves no receipt at all.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Literal

from huggingface_hub import HfApi, RepoFile, get_token

# The transport's base error (httpx2 in huggingface_hub 2.x, httpx in 1.x); HfHubHTTPError derives from it.
from huggingface_hub.errors import HFValidationError, HTTPError
from huggingface_hub.utils.sha import git_hash
from pydantic import BaseModel, ConfigDict

from pipeline.atomic import write_text_atomic
from pipeline.checksums import file_sha256
from pipeline.console import log_to_console
from pipeline.filechecks import check_files, published_schemas
from pipeline.frontmatter import card_problem
from pipeline.interrupts import interruptible
from pipeline.params import HubParams, ParamsError, check_pipeline, read_params, stage_parser
from pipeline.schema import CARD_NAME, MANIFEST_NAME, ManifestError
from pipeline.writer import OutputError, output_file, read_manifest

log = logging.getLogger(__name__)

FOLDER = Path("data/episodes")
METRICS = Path("data/metrics/dataset.json")
RECEIPT = Path("data/publish/receipt.json")
# An interrupted run (Ctrl-C) may have uploaded part of the folder, or all of it untagged; the receipt is gone already.
RESUME = "no receipt was written; re-run `dvc repro publish` to resume (files already uploaded are skipped)"
# Forced: a token is no DVC dependency, so a stage that skipped for want of one is otherwise up to date for DVC.
HOW_TO_ENABLE = (
    "set hub.repo_id in params.yaml (e.g. your-org/context-corruption), export HF_TOKEN and run "
    "`dvc repro --force --single-item publish`"
)


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


def folder_files(folder: Path, metrics: Path) -> list[Path]:
    """The files to push, refused before any upload when the folder holds a file the build did not write (the
    answers folder copied in would publish the ground truth; a note or a temporary file, whatever it holds), a shard
    is not the build's (a truncated or changed file would be published as is; a hidden split's file with a hidden
    column, its ground truth, differs from the split's schema) or the validate stage has not passed this build
    (`metrics`, its output)."""
    try:
        manifest = read_manifest(folder)
    except ManifestError as err:
        raise PublishError(str(err)) from None
    built = {CARD_NAME, MANIFEST_NAME, *(shard.path for shard in manifest.shards)}
    found = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    if others := sorted(found - built) + sorted(f"{name} (missing)" for name in built - found):
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        raise PublishError(
            f"refusing to publish {folder}: the build wrote {CARD_NAME}, {MANIFEST_NAME} and the shards it lists, "
            f"not {', '.join(others[:3])}{more}; remove what is not the build's, or rebuild it (dvc repro episodes)"
        )
    problems, _ = check_files(folder, manifest.shards, published_schemas(manifest))
    if not problems and (card := card_problem(folder, manifest)):  # the shards are the build's: footers readable
        problems = [card]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PublishError(
            f"refusing to publish {folder}: {problems[0]}{more}; rebuild the dataset (dvc repro episodes)"
        )
    _check_validated(folder, metrics)
    return [folder / name for name in sorted(built)]


def _check_validated(folder: Path, metrics: Path) -> None:
    """Refuse a build the validate stage did not pass: run by hand, publish has no DVC to order the stages."""
    again = f"run `dvc repro validate` (or python -m pipeline.validate --data {folder} --metrics {metrics})"
    try:
        found = json.loads(metrics.read_text())
        bound, violations = found.get("manifest_sha256"), found["violations"]
        failed = sorted(name for name, count in violations.items() if count)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise PublishError(f"refusing to publish {folder}: {metrics} holds no validation results; {again}") from None
    if bound != file_sha256(folder / MANIFEST_NAME):
        which = "another build" if bound else "no build it names (no manifest_sha256)"
        raise PublishError(f"refusing to publish {folder}: {metrics} is the validation of {which}; {again}")
    if failed:
        raise PublishError(
            f"refusing to publish {folder}: it fails validation ({', '.join(failed)}: see {metrics}); rebuild it"
        )


def publish(folder: Path, hub: HubParams, token: str, endpoint: str | None = None, metrics: Path = METRICS) -> Receipt:
    """Push the folder and tag the commit; see `_push` for what an existing tag or repo does."""
    files = folder_files(folder, metrics)
    api = HfApi(endpoint=endpoint, token=token)
    commit = _push(api, folder, hub, files)
    return Receipt(
        status="published",
        repo_id=hub.repo_id,
        revision_tag=hub.revision_tag,
        commit=commit,
        url=f"{api.endpoint}/datasets/{hub.repo_id}/tree/{hub.revision_tag}",
        files=len(files),
        bytes=sum(path.stat().st_size for path in files),
    )


def _push(api: HfApi, folder: Path, hub: HubParams, files: list[Path]) -> str:
    """create_repo + upload_folder + create_tag, and the commit the tag names. A published tag never moves, and
    everything that could refuse runs before the upload, so a refused run leaves main as it was: an existing repo
    whose visibility is not `hub.private` is refused; an existing tag whose commit holds exactly the folder's files
    means this run is done (main is not touched, so re-publishing an older tag never rolls main back), and one
    whose commit holds other files is refused."""
    step, commit = "creating the repo", None
    try:
        api.create_repo(hub.repo_id, repo_type="dataset", exist_ok=True, private=hub.private)
        step = "reading the repo's visibility"
        _check_visibility(api, hub)
        step = f"reading tag {hub.revision_tag}"
        if tagged := _tagged_commit(api, hub):
            _check_tagged_files(api, hub, tagged, folder, files)
            return tagged
        step = "uploading"
        commit = api.upload_folder(
            repo_id=hub.repo_id,
            folder_path=folder,
            repo_type="dataset",
            commit_message=f"Dataset {hub.revision_tag}: {len(files)} files",
            allow_patterns=[path.relative_to(folder).as_posix() for path in files],  # what folder_files checked
            delete_patterns=["*"],
        ).oid
        step = f"tagging {hub.revision_tag}"
        # exist_ok=False: a tag made by someone else since it was read is an error here, not silently kept
        api.create_tag(hub.repo_id, tag=hub.revision_tag, revision=commit, repo_type="dataset", exist_ok=False)
        return commit
    except (HTTPError, HFValidationError, OSError) as err:
        raise PublishError(_failure(api, folder, hub, step, err, commit)) from err


def _failure(api: HfApi, folder: Path, hub: HubParams, step: str, err: Exception, commit: str | None) -> str:
    """One line: which step failed, the Hub's error (its text spans lines), and what the re-run will do."""
    where = f"publishing {folder} to {api.endpoint} dataset {hub.repo_id!r} failed while {step}"
    done = (
        "Nothing was tagged by this run"
        if commit is None
        else f"The upload completed as commit {commit}; the Hub may or may not hold tag {hub.revision_tag}"
    )
    return (
        f"{where}: {' '.join(str(err).split())}. {done}; re-run `dvc repro publish` to resume "
        "(files already uploaded are skipped, a tag already on these files is kept)"
    )


def _tagged_commit(api: HfApi, hub: HubParams) -> str | None:
    """The commit `hub.revision_tag` names, or None when the repo has no such tag yet."""
    refs = api.list_repo_refs(hub.repo_id, repo_type="dataset")
    return next((tag.target_commit for tag in refs.tags if tag.name == hub.revision_tag), None)


def _check_tagged_files(api: HfApi, hub: HubParams, commit: str, folder: Path, files: list[Path]) -> None:
    """Refuse a tag whose commit holds other files than the folder: a published revision never moves."""
    remote = {
        entry.path: entry
        for entry in api.list_repo_tree(hub.repo_id, revision=commit, repo_type="dataset", recursive=True)
        if isinstance(entry, RepoFile)
    }
    local = {path.relative_to(folder).as_posix(): path for path in files}
    if ".gitattributes" not in local:
        remote.pop(".gitattributes", None)  # the Hub's own file, never deleted by upload_folder
    for name in sorted(remote.keys() | local.keys()):
        if name not in remote or name not in local or not _same_content(local[name], remote[name]):
            raise PublishError(
                f"tag {hub.revision_tag!r} of {hub.repo_id} already names commit {commit}, whose files differ from "
                f"{folder} (first: {name}); nothing was uploaded. A published revision never moves: set a new "
                "hub.revision_tag in params.yaml (e.g. v2)"
            )


def _same_content(path: Path, entry: RepoFile) -> bool:
    """The Hub knows an LFS (or Xet) file by its sha256 and any other by its git blob sha1."""
    if entry.size != path.stat().st_size:
        return False
    if entry.lfs is not None:
        return file_sha256(path) == entry.lfs.sha256
    return git_hash(path.read_bytes()) == entry.blob_id


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
    parser = stage_parser("pipeline.publish", __doc__)
    default = " (default: %(default)s)"
    parser.add_argument("--folder", type=Path, default=FOLDER, help="the dataset folder to push" + default)
    parser.add_argument("--receipt", type=Path, default=RECEIPT, help="what was pushed, or why not" + default)
    parser.add_argument("--metrics", type=Path, default=METRICS, help="validate's metrics of the folder" + default)
    args = parser.parse_args(argv)
    with interruptible("publish", RESUME):
        try:
            output_file(args.receipt).unlink(missing_ok=True)  # a stale receipt must never vouch for this run
            hub = check_pipeline(read_params(args.params), args.params)["hub"]
            token = get_token()
            reason = skip_reason(hub, token)
            if reason:
                log.warning("Publishing skipped: %s. To publish, %s.", reason, HOW_TO_ENABLE)
                receipt = Receipt(status="skipped", reason=reason)
            else:
                receipt = publish(args.folder, hub, token, metrics=args.metrics)
                log.info(
                    "Published %d files (%d bytes): %s (commit %s)",
                    receipt.files,
                    receipt.bytes,
                    receipt.url,
                    receipt.commit,
                )
        except (ParamsError, PublishError, OutputError) as err:
            log.error("publish: %s", err)
            return 1
        try:
            write_receipt(receipt, args.receipt)
        except OSError as err:  # published (or skipped) already: say so, and that no receipt vouches for it
            log.error("publish: %s, but writing %s failed: %s", receipt.status, args.receipt, err)
            return 1
    return 0


if __name__ == "__main__":
    log_to_console()
    sys.exit(main())
