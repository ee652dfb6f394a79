"""The FastAPI app: OpenEnv's routes from `create_app`, plus /episodes, /score, /score/batch, /tasks, /manifest.

Nothing is kept per client between HTTP requests: the app holds only the read-only store and the token
signer (`app.state.backend`), so any replica answers any request. Bad input gets a 4xx whose `detail`
says what is wrong; no response carries a hidden column.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated

import orjson
from fastapi import Body, FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import ConcurrencyConfig, ResetResponse, StepResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Route

from reward_api.auth import BearerAuth, document_security
from reward_api.env import ENV_NAME, Backend, ContextCorruptionEnv
from reward_api.errors import body_errors, document_errors, install_error_handlers
from reward_api.game import MoveError, play
from reward_api.head import HeadAsGet
from reward_api.keys import GroundTruthMissing
from reward_api.limits import BodySizeLimit, JsonBodies, WebSocketObjects
from reward_api.mcp import rpc_call, session_refusal
from reward_api.models import (
    BatchIn,
    BatchOut,
    ContextCorruptionAction,
    ContextCorruptionObservation,
    ContextCorruptionState,
    EpisodeView,
    PathId,
    ResetBody,
    ScoreIn,
    ScoreOut,
    StepBody,
    SubmissionIn,
    TaskOut,
    TraceIn,
)
from reward_api.scoring import REWARD_VERSION, Breakdown, EpisodeKey, score_submission_key
from reward_api.tasks import BackgroundTiers
from reward_api.views import ViewCache

MAX_SESSIONS = 256
# Seconds without a message after which OpenEnv's reaper frees a session's slot (also CONTEXTCORRUPTION_SESSION_TIMEOUT
# in reward_api.__main__, which repeats the default: importing this module there would import openenv too early).
SESSION_TIMEOUT_S = 300.0
# Its nested models are referenced as OpenAPI components (added to the spec by `_batch_components`).
BATCH_SCHEMA = BatchIn.model_json_schema(ref_template="#/components/schemas/{model}")
BATCH_DEFS = BATCH_SCHEMA.pop("$defs")


def _score_one(item: SubmissionIn | TraceIn, key: EpisodeKey) -> Breakdown:
    """One submission or trace: the same state machine as /step (a one-shot is "flag each, then submit")."""
    if isinstance(item, SubmissionIn):
        return score_submission_key(item.answer, item.flagged_ids, item.confidence, key)
    return play(item.episode_id, [action.move() for action in item.actions], key).breakdown


def _scored(index: int, item: SubmissionIn | TraceIn, key: EpisodeKey) -> dict:
    """Item `index` of a batch; a refusal names the item (a batch holds up to 8,192)."""
    try:
        return _result(item.episode_id, _score_one(item, key))
    except (MoveError, GroundTruthMissing) as exc:
        raise type(exc)(f"submissions[{index}] (episode {item.episode_id}): {exc}") from exc


def _json(content) -> Response:
    """orjson-encoded JSON: the json module spends more time on a 1,024-result batch than scoring it."""
    return Response(orjson.dumps(content), media_type="application/json")


def _result(episode_id: int, breakdown: Breakdown) -> dict:
    return {
        "episode_id": episode_id,
        "reward": breakdown["total"],
        "breakdown": breakdown,
        "reward_version": REWARD_VERSION,
    }


def _replace_reset(app: FastAPI, backend: Backend) -> None:
    """OpenEnv's /reset takes episode_id only as a string; ours also takes an int, a split and a task."""
    app.router.routes[:] = [r for r in app.router.routes if not (isinstance(r, Route) and r.path == "/reset")]

    @app.post("/reset", response_model=ResetResponse, tags=["Environment Control"], summary="Start an episode")
    def reset(body: Annotated[ResetBody, Body(default_factory=ResetBody)]) -> ResetResponse:
        """Start an episode by `episode_id`, or by `seed` (deterministic per dataset) within `split`/`task`.

        The observation's `state_token` carries the game: send it back with every `/step` action.
        """
        env = ContextCorruptionEnv(backend)
        return ResetResponse(**serialize_observation(env.reset(**body.model_dump(exclude_unset=True))))


STEP_EXAMPLES = {
    "flag": {
        "summary": "Flag document 3 (HTTP: with the last state_token)",
        "value": {
            "action": {"action_type": "flag_suspicious", "doc_id": 3, "state_token": "<from the last observation>"}
        },
    },
    "read": {
        "summary": "Read document 0",
        "value": {"action": {"action_type": "read_doc", "doc_id": 0, "state_token": "<token>"}},
    },
    "submit": {
        "summary": "Submit the answer; ends the episode with reward and reward_breakdown",
        "value": {
            "action": {"action_type": "submit_answer", "answer": "Paris", "confidence": 0.8, "state_token": "<token>"}
        },
    },
}


def _replace_step(app: FastAPI) -> None:
    """OpenEnv's /step, its body closed (`StepBody`: an unknown key is a 422), documented with our actions (the
    schema is at /schema, `action`); an action's errors are located under body.action, as a body's are."""
    route = next(r for r in app.router.routes if isinstance(r, APIRoute) and r.path == "/step")
    app.router.routes.remove(route)
    forward = route.endpoint

    async def step(request: StepBody) -> StepResponse:
        try:
            return await forward(request)
        except HTTPException as exc:  # OpenEnv's 422 for an action its model refuses, located inside the action
            if exc.status_code != 422 or not isinstance(exc.detail, list):
                raise
            raise RequestValidationError(
                [{**error, "loc": ("body", "action", *error.get("loc", ()))} for error in exc.detail]
            ) from None

    app.add_api_route(
        "/step",
        step,
        methods=["POST"],
        response_model=route.response_model,
        responses=route.responses,
        tags=route.tags,
        summary=route.summary,
        description=(
            "One action of the game (read_doc, flag_suspicious, unflag_doc: doc_id 0..7; submit_answer: answer "
            "and confidence 0..1); each costs 1 budget. Over HTTP send the state_token of the last observation: "
            "403 if it was tampered with or signed elsewhere, 409 once the episode is over."
        ),
        openapi_extra={"requestBody": {"content": {"application/json": {"examples": STEP_EXAMPLES}}}},
    )


def _refuse_mcp_sessions(app: FastAPI) -> None:
    """OpenEnv's POST /mcp, its session calls refused (reward_api.mcp); other calls reach OpenEnv's handler."""
    route = next(r for r in app.router.routes if isinstance(r, APIRoute) and r.path == "/mcp")
    app.router.routes.remove(route)
    forward = route.endpoint

    async def mcp_endpoint(request: Request) -> dict:
        """OpenEnv's MCP JSON-RPC endpoint. This environment has no MCP tools (`tools/list` says so), and a call
        that opens, closes or names a session is refused (-32601, -32602): play over /ws, or /reset and /step."""
        call = rpc_call(await request.body())
        if call is None:  # answered here: what this check cannot read is never forwarded to open a session
            return JsonRpcResponse.error_response(JsonRpcErrorCode.PARSE_ERROR).model_dump()
        refusal = session_refusal(call)
        return await forward(request) if refusal is None else refusal

    app.add_api_route("/mcp", mcp_endpoint, methods=["POST"], tags=route.tags, summary="MCP JSON-RPC")


def _drop_task_api(app: FastAPI) -> None:
    """OpenEnv's optional Task API (/{env_name}/splits, /tasks, ...) answers 501 for an environment without a
    task provider; episodes are found by /manifest's id ranges and /reset's split, task and seed instead."""
    app.router.routes[:] = [
        r for r in app.router.routes if not (isinstance(r, APIRoute) and r.path.startswith("/{env_name}/"))
    ]


def _batch_components(spec: dict) -> None:
    for name, schema in BATCH_DEFS.items():
        spec["components"]["schemas"].setdefault(name, schema)


def _patch_openapi(app: FastAPI, patches: list) -> None:
    """Apply `patches` to the spec FastAPI generates, once (FastAPI caches it in `app.openapi_schema`)."""
    generate = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            spec = generate()
            for patch in patches:
                patch(spec)
        return app.openapi_schema

    app.openapi = openapi


def _add_routes(app: FastAPI, backend: Backend) -> None:
    store = backend.store
    tiers = BackgroundTiers(store)  # measured from baseline agents, off the start-up path
    views = ViewCache(store)  # opened or built in the background
    # Background work starts with the server, not with the app, and is stopped and joined when the server shuts
    # down (a start-up failure too: a port in use): a thread still inside pyarrow while the interpreter finalizes
    # aborts the process. That includes the store's answer-key preload.
    app.router.on_startup.extend([views.start, tiers.start])
    app.router.on_shutdown.extend([views.close, tiers.stop, store.key_index.stop])
    app.state.views, app.state.tiers = views, tiers
    store.view_bodies = views.body  # /reset and /step read a view from it too

    @app.get(
        "/episodes/{episode_id}", response_model=EpisodeView, tags=["Episodes"], summary="Agent view of an episode"
    )
    async def episode(episode_id: PathId) -> Response:
        """The visible columns only: never the answer, the aliases or which documents are corrupt.

        Once the views cache has the episode's shard (reward_api.views), its stored body is answered on the event
        loop. Until then a cached view is too; a row-group read goes to the thread pool, where reads (which
        release the GIL while decompressing) run in parallel on a multi-core machine.
        """
        body = views.body(episode_id)
        if body is not None:
            return Response(body, media_type="application/json")
        view = store.cached_view(episode_id)
        if view is None:
            view = await run_in_threadpool(store.view, episode_id)
        return _json(view)

    @app.post("/score", response_model=ScoreOut, tags=["Scoring"], summary="Score one submission or action trace")
    async def score(body: Annotated[ScoreIn, Body()]) -> Response:
        """The reward of a one-shot submission (the trace "flag each id, then submit") or of a whole trace."""
        return _json(_result(body.episode_id, _score_one(body, store.key(body.episode_id))))

    @app.post(
        "/score/batch",
        response_model=BatchOut,
        tags=["Scoring"],
        summary="Score many submissions",
        openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": BATCH_SCHEMA}}}},
    )
    async def score_batch(request: Request) -> Response:
        """Up to 8,192 submissions or traces in a body of at most 1 MiB (a GRPO group or more); each episode is looked
        up once.

        The body is validated straight from its bytes by pydantic's JSON parser (twice as fast as FastAPI's
        parse-then-validate at 1,024 items); the schema and the errors are the same.
        """
        try:
            body = BatchIn.model_validate_json(await request.body())
        except ValidationError as exc:
            raise body_errors(exc) from None
        keys = store.keys(item.episode_id for item in body.submissions)
        return _json(
            {"results": [_scored(index, item, keys[item.episode_id]) for index, item in enumerate(body.submissions)]}
        )

    @app.get("/tasks", response_model=list[TaskOut], tags=["Episodes"], summary="Difficulty tiers")
    async def get_tasks() -> list[TaskOut]:
        """Tier k has k corrupt documents; `success_threshold` is measured from baseline agents (`threshold_rule`)."""
        tiers.start()  # already started, unless the server runs without lifespan events
        return await asyncio.wrap_future(tiers.future)

    @app.get("/manifest", tags=["Episodes"], summary="The dataset manifest")
    async def manifest() -> dict:
        """Id ranges per split, shards, row-group size, seed and versions of the served dataset."""
        return store.manifest.model_dump(mode="json")


def build_app(backend: Backend, api_token: str | None = None, session_timeout: float = SESSION_TIMEOUT_S) -> FastAPI:
    """The whole server for one dataset; `app.state.backend` gives later routes the store and signer.

    With `api_token`, the routes that play or score need it as a bearer token (see reward_api.auth). A session
    (a /ws connection) that sends nothing for `session_timeout` seconds no longer holds one of the MAX_SESSIONS
    slots: OpenEnv's reaper frees it (the connection stays open and keeps its game).
    """
    app = create_app(
        env=functools.partial(ContextCorruptionEnv, backend),
        action_cls=ContextCorruptionAction,
        observation_cls=ContextCorruptionObservation,
        state_cls=ContextCorruptionState,
        env_name=ENV_NAME,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=MAX_SESSIONS, session_timeout=session_timeout),
    )
    app.title = "ContextCorruption reward API"
    app.state.backend = backend
    _replace_reset(app, backend)
    _replace_step(app)
    _drop_task_api(app)
    _refuse_mcp_sessions(app)
    _add_routes(app, backend)
    install_error_handlers(app)
    app.add_middleware(JsonBodies)  # inside BodySizeLimit, which hands it each body whole
    app.add_middleware(BodySizeLimit)
    app.add_middleware(WebSocketObjects)
    app.add_middleware(HeadAsGet)
    patches = [_batch_components, document_errors]
    if api_token:
        app.add_middleware(BearerAuth, token=api_token)
        patches.append(document_security)
    _patch_openapi(app, patches)
    return app
