"""A loopback stand-in for the Hugging Face Hub, so publishing and loading by repo id + revision are tested end to end.

It speaks the endpoints huggingface_hub 2.4 uses to create a repo, upload a folder (both the hf_xet pipelined
uploader and the plain `create_commit` path), tag a commit, and `snapshot_download` / `hf_hub_download` it back.
Files are kept in memory per commit, so any revision (branch, tag, commit sha) can be read back.

    with hub_standin(token="hf_test") as hub:
        HfApi(endpoint=hub.endpoint, token="hf_test")             # in process: pass endpoint=
        env = {"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_test"}  # a subprocess: HF_ENDPOINT before import
        hub.files("org/name", "v1")    # {path: bytes} at a branch, tag or commit sha
        hub.fail("commit", status=400)  # the next commit request answers 400

What a client needs: HF_ENDPOINT (huggingface_hub reads it once, at import) or `endpoint=`; HF_HOME pointing to
an empty temporary folder, so no stored token or download cache leaks in. hf_xet may stay installed and
HF_HUB_DISABLE_XET is not needed: every preupload answers uploadMode "regular" (content travels base64 in the
commit NDJSON) and downloads carry no X-Xet-* headers, so the library never talks to a xet backend.
Limits: repo ids must be `namespace/name`; writes need the token when one is given, reads only for private repos;
no LFS, pull requests or pagination. A new repo starts, like on the Hub, with one commit holding `.gitattributes`.

Routes ({t} is models, datasets or spaces; model files resolve at /{repo}/resolve/...):
    POST /api/repos/create, POST /api/validate-yaml
    GET  /api/{t}/{repo}[/revision/{rev}]      GET /api/{t}/{repo}/tree/{rev}[/{path}]   GET /api/{t}/{repo}/refs
    POST /api/{t}/{repo}/preupload/{rev}       POST /api/{t}/{repo}/commit/{rev}         POST /api/{t}/{repo}/tag/{rev}
    HEAD|GET /{t}/{repo}/resolve/{rev}/{path}  (Range supported)
Route names for `fail()`: create, validate-yaml, info, tree, refs, preupload, commit, tag, resolve.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from huggingface_hub import HfApi

TIMESTAMP = "2026-01-01T00:00:00.000Z"
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
_API = re.compile(r"^/api/(?P<t>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)(?:/(?P<op>[^/]+)(?:/(?P<rest>.*))?)?$")
_RESOLVE = re.compile(r"^/(?:(?P<t>datasets|spaces)/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
_ROUTE_OF_OP = {
    None: "info",
    "revision": "info",
    "tree": "tree",
    "refs": "refs",
    "preupload": "preupload",
    "commit": "commit",
    "tag": "tag",
}


class HubError(Exception):
    """An error reply in the Hub's shape: status, X-Error-Code (which the client maps to its exceptions), message."""

    def __init__(self, status: int, message: str, code: str | None = None, **extra: str):
        super().__init__(message)
        self.status, self.code, self.extra = status, code, extra


def git_blob_sha(content: bytes) -> str:
    """The object id the Hub reports for a regular file, and compares with the client's to skip unchanged files."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class _Repo:
    private: bool
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> {path: content}
    history: list[str] = field(default_factory=list)  # commit shas on main, oldest first
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> str:
        if revision == "main":
            return self.history[-1]
        if revision in self.tags:
            return self.tags[revision]
        if revision in self.commits:
            return revision
        raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")

    def add_commit(self, tree: dict[str, bytes], summary: str) -> str:
        parent = self.history[-1] if self.history else ""
        listing = sorted((path, git_blob_sha(content)) for path, content in tree.items())
        sha = hashlib.sha1(json.dumps([parent, summary, listing]).encode()).hexdigest()
        self.commits[sha] = tree
        self.history.append(sha)
        return sha


class HubStandin:
    """The Hub's state (repos, commits, tags) plus the query and fault-injection helpers tests use."""

    def __init__(self, token: str | None):
        self.token = token
        self.endpoint = ""
        self._repos: dict[tuple[str, str], _Repo] = {}
        self._failures: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    # -- helpers for tests -------------------------------------------------------------------------------------

    def files(self, repo_id: str, revision: str = "main", repo_type: str = "dataset") -> dict[str, bytes]:
        with self._lock:
            repo = self._repo(repo_type + "s", repo_id)
            return dict(repo.commits[repo.resolve(revision)])

    def resolve(self, repo_id: str, revision: str = "main", repo_type: str = "dataset") -> str:
        with self._lock:
            return self._repo(repo_type + "s", repo_id).resolve(revision)

    def tags(self, repo_id: str, repo_type: str = "dataset") -> dict[str, str]:
        with self._lock:
            return dict(self._repo(repo_type + "s", repo_id).tags)

    def history(self, repo_id: str, repo_type: str = "dataset") -> list[str]:
        with self._lock:
            return list(self._repo(repo_type + "s", repo_id).history)

    def is_private(self, repo_id: str, repo_type: str = "dataset") -> bool:
        with self._lock:
            return self._repo(repo_type + "s", repo_id).private

    def fail(self, route: str, status: int = 500, times: int = 1) -> None:
        """The next `times` requests to `route` (see the module docstring) answer `status` and change nothing."""
        with self._lock:
            self._failures.setdefault(route, []).extend([status] * times)

    # -- request handling --------------------------------------------------------------------------------------

    def handle(self, method: str, url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
        try:
            return self._dispatch(method, url, headers, body)
        except HubError as err:
            reply_headers = {"X-Error-Message": str(err), **({"X-Error-Code": err.code} if err.code else {})}
            return err.status, reply_headers, json.dumps({"error": str(err), **err.extra}).encode()

    def _dispatch(self, method: str, url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
        parts = urlsplit(url)
        path, query = parts.path, parse_qs(parts.query)
        authorized = self.token is None or headers.get("authorization") == f"Bearer {self.token}"
        if path == "/api/repos/create" and method == "POST":
            self._check("create", authorized, write=True)
            return self._create(json.loads(body))
        if path == "/api/validate-yaml" and method == "POST":
            self._check("validate-yaml", authorized, write=False)
            return _json({"errors": [], "warnings": []})
        if match := _API.match(path):
            kind, repo_id, op = match["t"], match["repo"], match["op"]
            route = _ROUTE_OF_OP.get(op)
            if route is None:
                raise HubError(404, f"unsupported route {method} {path}")
            write = method == "POST"
            self._check(route, authorized, write=write)
            with self._lock:
                repo = self._repo(kind, repo_id)
                if repo.private and not authorized:
                    raise HubError(404, f"Repository Not Found for url: {path}", "RepoNotFound")
                rev, _, sub = (match["rest"] or "main").partition("/")
                handler = getattr(self, f"_{route}")
                return handler(kind, repo_id, repo, unquote(rev), unquote(sub), query, body)
        if (match := _RESOLVE.match(path)) and method in ("GET", "HEAD"):
            self._check("resolve", authorized, write=False)
            with self._lock:
                repo = self._repo(match["t"] or "models", match["repo"])
                if repo.private and not authorized:
                    raise HubError(404, f"Repository Not Found for url: {path}", "RepoNotFound")
                return _resolve(repo, unquote(match["rev"]), unquote(match["path"]), headers, method == "HEAD")
        raise HubError(404, f"unsupported route {method} {path}")

    def _check(self, route: str, authorized: bool, write: bool) -> None:
        with self._lock:
            pending = self._failures.get(route)
            if pending:
                raise HubError(pending.pop(0), f"stand-in: {route} failed on purpose")
        if write and not authorized:
            raise HubError(401, "Invalid credentials in Authorization header")

    def _repo(self, kind: str, repo_id: str) -> _Repo:
        repo = self._repos.get((kind, repo_id))
        if repo is None:
            raise HubError(404, f"Repository not found: {kind}/{repo_id}", "RepoNotFound")
        return repo

    def _create(self, payload: dict) -> tuple[int, dict, bytes]:
        kind = payload.get("type") or "model"
        if not payload.get("organization"):
            raise HubError(400, "the stand-in needs repo ids of the form namespace/name")
        repo_id = f"{payload['organization']}/{payload['name']}"
        url = f"{self.endpoint}/{'' if kind == 'model' else kind + 's/'}{repo_id}"
        with self._lock:
            if (kind + "s", repo_id) in self._repos:
                raise HubError(409, "You already created this repo", url=url)
            repo = _Repo(private=payload.get("visibility", "public") == "private")
            repo.add_commit({".gitattributes": GITATTRIBUTES}, "initial commit")
            self._repos[(kind + "s", repo_id)] = repo
        return _json({"url": url, "name": repo_id})

    def _info(self, kind, repo_id, repo, rev, sub, query, body):
        sha = repo.resolve(rev)
        siblings = [{"rfilename": path} for path in sorted(repo.commits[sha])]
        return _json(
            {
                "_id": sha[:24],
                "id": repo_id,
                "author": repo_id.split("/")[0],
                "sha": sha,
                "private": repo.private,
                "disabled": False,
                "gated": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "createdAt": TIMESTAMP,
                "lastModified": TIMESTAMP,
                "siblings": siblings,
            }
        )

    def _tree(self, kind, repo_id, repo, rev, sub, query, body):
        tree = repo.commits[repo.resolve(rev)]
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        prefix = sub.strip("/") + "/" if sub.strip("/") else ""
        entries: dict[str, dict] = {}
        for path, content in sorted(tree.items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            for depth in range(1, len(parts)):
                folder = prefix + "/".join(parts[:depth])
                if recursive or depth == 1:
                    entries[folder] = {
                        "type": "directory",
                        "path": folder,
                        "size": 0,
                        "oid": git_blob_sha(folder.encode()),
                    }
                if not recursive:
                    break
            if recursive or len(parts) == 1:
                entries[path] = {"type": "file", "path": path, "size": len(content), "oid": git_blob_sha(content)}
        if prefix and not entries:
            raise HubError(404, f"Entry not found: {sub}", "EntryNotFound")
        return _json(list(entries.values()))

    def _refs(self, kind, repo_id, repo, rev, sub, query, body):
        def ref(name, kind_, sha):
            return {"name": name, "ref": f"refs/{kind_}/{name}", "targetCommit": sha}

        return _json(
            {
                "branches": [ref("main", "heads", repo.history[-1])],
                "converts": [],
                "pullRequests": [],
                "tags": [ref(name, "tags", sha) for name, sha in sorted(repo.tags.items())],
            }
        )

    def _preupload(self, kind, repo_id, repo, rev, sub, query, body):
        tree = repo.commits[repo.resolve(rev)]
        files = []
        for item in json.loads(body)["files"]:
            existing = tree.get(item["path"])
            oid = git_blob_sha(existing) if existing is not None else None
            files.append({"path": item["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": oid})
        return _json({"files": files, "commitOid": repo.resolve(rev)})

    def _commit(self, kind, repo_id, repo, rev, sub, query, body):
        if rev != "main":
            raise HubError(404, f"the stand-in commits to main only, not {rev}", "RevisionNotFound")
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        if header.get("parentCommit") not in (None, repo.history[-1]):
            raise HubError(412, f"parent commit {header['parentCommit']} is not the head of main")
        tree = dict(repo.commits[repo.history[-1]])
        for line in lines:
            key, value = line["key"], line["value"]
            if key == "file":
                tree[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                tree.pop(value["path"], None)
            elif key == "deletedFolder":
                folder = value["path"].rstrip("/") + "/"
                tree = {path: content for path, content in tree.items() if not path.startswith(folder)}
            elif key != "header":
                raise HubError(422, f"the stand-in does not support '{key}' commit entries")
        sha = repo.add_commit(tree, header.get("summary", ""))
        url = f"{self.endpoint}/{'' if kind == 'models' else kind + '/'}{repo_id}/commit/{sha}"
        return _json({"success": True, "commitOid": sha, "commitUrl": url, "hookOutput": "", "pullRequestUrl": None})

    def _tag(self, kind, repo_id, repo, rev, sub, query, body):
        name = json.loads(body)["tag"]
        if name in repo.tags:
            raise HubError(409, f"Tag {name} already exists")
        repo.tags[name] = repo.resolve(rev)
        return _json({"name": name})


def _resolve(repo: _Repo, rev: str, path: str, headers: dict[str, str], head: bool) -> tuple[int, dict, bytes]:
    sha = repo.resolve(rev)
    content = repo.commits[sha].get(path)
    if content is None:
        raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
    reply = {
        "X-Repo-Commit": sha,
        "ETag": f'"{git_blob_sha(content)}"',
        "Accept-Ranges": "bytes",
        "Content-Type": "application/octet-stream",
    }
    status, body = 200, content
    if (spec := re.fullmatch(r"bytes=(\d*)-(\d*)", headers.get("range", ""))) and not head:
        start = int(spec[1]) if spec[1] else max(0, len(content) - int(spec[2]))
        end = min(int(spec[2]), len(content) - 1) if spec[1] and spec[2] else len(content) - 1
        status, body = 206, content[start : end + 1]
        reply["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
    reply["Content-Length"] = str(len(body))
    return status, reply, b"" if head else body


def _json(data: object) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()


def _handler_for(hub: HubStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {key.lower(): value for key, value in self.headers.items()}
            status, reply, payload = hub.handle(self.command, self.path, headers, body)
            self.send_response(status)
            for key, value in reply.items():
                self.send_header(key, value)
            if "Content-Length" not in reply:
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_HEAD = do_DELETE = do_PUT = _serve

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            """Quiet: pytest output should show test failures, not one line per request."""

    return Handler


@contextlib.contextmanager
def hub_standin(token: str | None = None) -> Iterator[HubStandin]:
    """Serve a fresh, empty stand-in on 127.0.0.1 and a free port for the duration of the block."""
    hub = HubStandin(token)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(hub))
    server.daemon_threads = True
    hub.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="hub-standin", daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def publish(hub: HubStandin, folder: Path, repo_id: str, tag: str | None = "v1", private: bool = False) -> HfApi:
    """Push `folder` to a new dataset repo of the stand-in as a user would (huggingface_hub), tagged when asked."""
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    api.create_repo(repo_id, repo_type="dataset", private=private)
    api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="dataset")
    if tag:
        api.create_tag(repo_id, tag=tag, repo_type="dataset")
    return api
