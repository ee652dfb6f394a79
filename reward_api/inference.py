"""Inference: an OpenAI-compatible model plays ContextCorruption episodes through the reward server.

`python -m reward_api.inference [--url URL] [--tasks easy,hard] [--episodes 1] [--split test] [--seed 0] [--heuristic]`

The model is reached with the `openai` client: API_BASE_URL (default the Hugging Face router), MODEL_NAME and
HF_TOKEN (the API key); a server started with CONTEXTCORRUPTION_API_TOKEN gets it from the same variable as a
bearer token (environment only, like the server's, so it never shows on a command line). `--heuristic` plays the
majority-vote reader instead (`heuristics.read`: flag the documents that do not state the majority answer, then
submit it) and needs no key. Each episode starts with POST /reset (a seed, the split and the task) and every action
goes to POST /step with the state token.
Stdout carries exactly the lines OpenEnv evaluators read, one [START], a [STEP] per action, one [END]:

    [START] task=<task> env=<env name> model=<model>
    [STEP] step=<n> action=<action> reward=<0.00> done=<true|false> error=<msg|null>
    [END] success=<true|false> steps=<n> score=<score> rewards=<r1,r2,...>

`score` is the episode's reward (4 places, as the reward is rounded); `success` means it ended and reached the
task's threshold from GET /tasks. A reply that is not a valid action (a value JSON has not, NaN, included), or an
action the server refuses as invalid (422), is a [STEP] with its error and no budget spent; a model that has not
submitted after the budget plus a few retries submits an empty answer, once. Any other refusal (403 when the server
holds no answers for the split, 404, 409), and a model whose API fails after its client's retries or answers no
reply (`action=none`, `error=model: ...`), is a [STEP] with its error followed by the episode's [END]
with success=false; the run goes on with the next episode.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

import httpx

from pipeline.schema import SPLITS
from reward_api.auth import client_headers
from reward_api.heuristics import read
from reward_api.models import MAX_SEED
from reward_api.scoring import reward_rules
from reward_api.submission import JSON_OBJECT_START

_DECODER = json.JSONDecoder()

DEFAULT_API_BASE_URL = "https://router.huggingface.co/v1"
DEFAULT_MODEL = "Qwen/Qwen2.5-72B-Instruct"
EXTRA_TURNS = 3  # invalid replies tolerated beyond the budget before the episode is closed
GIVE_UP = {"action_type": "submit_answer", "answer": "", "confidence": 0.0}  # what the budget rule would submit
SYSTEM_PROMPT = (
    """You answer a question from 8 retrieved documents; some documents are deliberately corrupted.
Reply with exactly one JSON action per turn, nothing else:
  {"action_type": "flag_suspicious", "doc_id": <0-7>}   mark a document as corrupted
  {"action_type": "unflag_doc", "doc_id": <0-7>}        take a flag back
  {"action_type": "read_doc", "doc_id": <0-7>}          look at a document again
  {"action_type": "submit_answer", "answer": "<short answer>", "confidence": <0.0-1.0>}   ends the episode

"""
    + reward_rules()
    + """

Flag the corrupted documents first, then submit."""
)

# (observation, why the last reply or action was refused or None) -> the reply text of the next action
Policy = Callable[[dict, str | None], str]


def describe(observation: dict) -> str:
    """The observation as the model reads it: question, documents, flags and budget."""
    docs = "\n".join(
        f"[{d['doc_id']}]{' (flagged)' if d['is_flagged'] else ''} {d['title']}\n{d['content']}"
        for d in observation["documents"]
    )
    return (
        f"Question: {observation['question']}\n\nDocuments:\n{docs}\n\n"
        f"Flagged: {observation['flagged_ids']}. Budget left: {observation['budget_remaining']}. "
        f"Last: {observation['message']}"
    )


def _too_big() -> str:
    """What json cannot read, in this interpreter: a limit of 0 reads integers of any length."""
    limit = sys.get_int_max_str_digits()
    return f"an integer of over {limit:,} digits, or nested too deep" if limit else "nested too deep"


def parse_action(reply: str) -> dict:
    """The first JSON object in a reply that names an action_type; ValueError saying what is wrong otherwise (about
    the first object when none names one). Braces in prose ("{doc 3}") are passed over."""
    problem = None
    for start in JSON_OBJECT_START.finditer(reply):
        try:
            action, _ = _DECODER.raw_decode(reply, start.start())
        except json.JSONDecodeError as exc:
            problem = problem or f"unreadable JSON action: {exc.msg}"
            continue
        # An integer longer than int() reads; nesting past the interpreter's limit.
        except (ValueError, RecursionError):
            problem = problem or f"unreadable JSON action: {_too_big()}"
            continue
        if isinstance(action, dict) and "action_type" in action:
            try:  # as the request will carry it: json reads NaN, Infinity, 1e400 and lone surrogates, JSON has none
                json.dumps(action, ensure_ascii=False, allow_nan=False).encode()
            except ValueError:  # UnicodeEncodeError (a lone surrogate) is one
                raise ValueError("the JSON action holds NaN, an infinity or a lone surrogate: no JSON value") from None
            return action
        problem = problem or "the JSON action has no action_type"
    raise ValueError(problem or "no JSON action in the reply")


def show(action: dict) -> str:
    """One-line action for the [STEP] line: name(arguments)."""
    args = ",".join(f"{k}={json.dumps(v)}" for k, v in action.items() if k not in ("action_type", "state_token"))
    return f"{action.get('action_type')}({args})"


def heuristic_policy() -> Policy:
    """Flag each document that does not state the majority answer, then submit it with its vote share."""

    def next_reply(observation: dict, refused: str | None) -> str:
        docs = observation["documents"]
        reading = read(observation["question"], [d["content"] for d in docs])
        pending = [i for i in reading.dissenting if i not in observation["flagged_ids"]]
        if pending and observation["budget_remaining"] > 1:
            return json.dumps({"action_type": "flag_suspicious", "doc_id": pending[0]})
        confidence = round(reading.votes / len(docs), 2)
        return json.dumps({"action_type": "submit_answer", "answer": reading.answer, "confidence": confidence})

    return next_reply


class ModelError(RuntimeError):
    """The model gave no reply: its API failed (a timeout, a rate limit) or answered no choice."""


def model_policy(client, model: str) -> Policy:
    """A chat with the model: the documents once, then what each action did, or why it was refused."""
    from openai import OpenAIError

    messages = [{"role": "system", "content": SYSTEM_PROMPT}]

    def next_reply(observation: dict, refused: str | None) -> str:
        first = len(messages) == 1
        what = f"Your last reply was refused: {refused}" if refused else observation["message"]
        status = f"{what}. Flagged: {observation['flagged_ids']}. Budget left: {observation['budget_remaining']}."
        messages.append({"role": "user", "content": describe(observation) if first else status})
        try:
            response = client.chat.completions.create(model=model, messages=messages, temperature=0.0, max_tokens=200)
        except OpenAIError as exc:  # after the client's own retries
            raise ModelError(_one_line(f"{type(exc).__name__}: {exc}")) from None
        try:  # a 200 that is no chat completion: no choices, an error object, a proxy's page
            reply = response.choices[0].message.content or ""
        except (IndexError, TypeError, AttributeError):
            raise ModelError(_one_line(f"the API's answer holds no reply: {response!r}")) from None
        if not isinstance(reply, str):
            raise ModelError(_one_line(f"the reply is no text: {reply!r}"))
        messages.append({"role": "assistant", "content": reply})
        return reply

    return next_reply


def _observed(response: httpx.Response) -> dict:
    """OpenEnv's reset/step answer as one observation: its fields, plus the episode's reward and done; ValueError
    when the body is none (a proxy's page)."""
    try:
        result = response.json()
        return {**result["observation"], "reward": result["reward"], "done": result["done"]}
    except (ValueError, KeyError, TypeError):
        raise ValueError(_one_line(f"the server's reply is no observation: {response.text}")) from None


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def _refusal(response: httpx.Response) -> str:
    """Why the server refused a step, on one line: its `detail`, or the status and body when that is not JSON (a
    proxy's error page)."""
    try:
        detail = response.json()["detail"]
    except (ValueError, KeyError, TypeError):
        detail = f"HTTP {response.status_code}: {response.text}"
    return _one_line(str(detail))


def _step(env: httpx.Client, action: dict, token: str) -> tuple[dict | None, str | None, bool]:
    """POST /step: the new observation, or why there is none and whether asking again could change that (a 422
    could: the action was invalid; a lost connection, 403, 404 or 409 could not)."""
    try:
        response = env.post("/step", json={"action": {**action, "state_token": token}})
    except httpx.HTTPError as exc:  # the connection dropped, a timeout
        return None, _one_line(f"{type(exc).__name__}: {exc}"), True
    if response.status_code == 200:
        try:
            return _observed(response), None, False
        except ValueError as exc:
            return None, str(exc), True
    return None, _refusal(response), response.status_code != 422


def _end(rewards: list[float], done: bool, threshold: float) -> float:
    """Print the [END] line; returns the episode's score (its last reward)."""
    score = rewards[-1] if rewards else 0.0
    listed = ",".join(f"{r:.2f}" for r in rewards)
    success = _flag(done and score >= threshold)
    # The score at the reward's precision: rounded to the thresholds' two places, 0.8875 read as 0.89, unsuccessful.
    print(f"[END] success={success} steps={len(rewards)} score={score:.4f} rewards={listed}", flush=True)
    return score


def play_episode(env: httpx.Client, policy: Policy, reset: dict, threshold: float, label: dict) -> float:
    """One episode, printing [START], a [STEP] per action and [END]; returns the episode's reward.

    The policy gets at most the budget plus EXTRA_TURNS turns, then the empty answer is submitted, once, whatever
    the server says. A refused action (422) costs a turn and the policy is told why; any other refusal (403 for a
    split the server cannot score, 404, 409, 401), a lost connection or a failed model ends the episode
    unsuccessfully at once: asking again gets the same answer. A refused reset ends it with no step (the reason on
    stderr).
    """
    print(f"[START] task={label['task']} env={label['env']} model={label['model']}", flush=True)
    try:
        response = env.post("/reset", json=reset)
        observation = _observed(response.raise_for_status())
    except (httpx.HTTPError, ValueError) as exc:
        reason = _refusal(exc.response) if isinstance(exc, httpx.HTTPStatusError) else _one_line(str(exc))
        print(f"POST /reset {json.dumps(reset)} failed: {reason}", file=sys.stderr, flush=True)
        return _end([], False, threshold)
    rewards: list[float] = []
    turns = observation["budget_remaining"] + EXTRA_TURNS
    fatal, error = False, None
    while not (observation["done"] or fatal or len(rewards) > turns):
        try:
            action = parse_action(policy(observation, error)) if len(rewards) < turns else GIVE_UP
        except ModelError as exc:  # asking again gets the client's retries again: the episode ends, the run goes on
            rewards.append(0.0)
            print(f"[STEP] step={len(rewards)} action=none reward=0.00 done=false error=model: {exc}", flush=True)
            break
        except ValueError as exc:
            error = _one_line(str(exc))
            rewards.append(0.0)
            print(f"[STEP] step={len(rewards)} action=invalid reward=0.00 done=false error={error}", flush=True)
            continue
        result, error, fatal = _step(env, action, observation["state_token"])
        observation = result or observation
        rewards.append(float(observation["reward"] or 0.0) if error is None else 0.0)
        done = error is None and observation["done"]
        print(
            f"[STEP] step={len(rewards)} action={show(action)} reward={rewards[-1]:.2f} done={_flag(done)} "
            f"error={error or 'null'}",
            flush=True,
        )
    return _end(rewards, observation["done"], threshold)


def _server(env: httpx.Client, url: str) -> tuple[dict[str, float], str]:
    """Each task's success threshold (GET /tasks) and the environment's name (GET /metadata); SystemExit saying what
    is wrong: no server, a refusal (a 401 without the token, a 500), or something else answering."""
    try:
        thresholds = {t["name"]: t["success_threshold"] for t in env.get("/tasks").raise_for_status().json()}
        return thresholds, env.get("/metadata").raise_for_status().json()["name"]
    except httpx.HTTPStatusError as exc:
        where = f"GET {exc.request.url.path}"
        raise SystemExit(f"the reward server at {url} refused {where}: {_refusal(exc.response)}") from None
    except httpx.HTTPError as exc:
        raise SystemExit(
            f"no reward server at {url} ({_one_line(str(exc))}); start one with python -m reward_api"
        ) from None
    except (ValueError, KeyError, TypeError):  # JSON of another shape, or none (another service's page)
        raise SystemExit(f"{url} is no reward server: GET /tasks and /metadata do not answer as one does") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reward_api.inference", description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("ENV_URL", "http://127.0.0.1:7860"), help="reward server")
    parser.add_argument("--tasks", help="comma-separated tasks (default: every task GET /tasks lists)")
    parser.add_argument("--episodes", type=int, default=1, help="episodes per task")
    parser.add_argument("--split", default="test", choices=SPLITS)
    parser.add_argument("--seed", type=int, default=0, help="episode i of a task is POST /reset with seed + i")
    parser.add_argument("--heuristic", action="store_true", help="play the majority-vote reader; no model needed")
    args = parser.parse_args(argv)
    if args.episodes < 1 or not 0 <= args.seed <= MAX_SEED - args.episodes + 1:
        parser.error(f"--episodes must be >= 1 and --seed + --episodes - 1 in 0..{MAX_SEED} (got {args.seed})")
    model = "heuristic" if args.heuristic else os.environ.get("MODEL_NAME", DEFAULT_MODEL)
    with httpx.Client(base_url=args.url.rstrip("/"), timeout=120, headers=client_headers()) as env:
        thresholds, env_name = _server(env, args.url)
        tasks = args.tasks.split(",") if args.tasks else list(thresholds)
        unknown = sorted(set(tasks) - set(thresholds))
        if unknown:
            raise SystemExit(f"--tasks: unknown {unknown}; the server has {list(thresholds)}")
        client = None
        if not args.heuristic:
            from openai import OpenAI

            token = os.environ.get("HF_TOKEN") or os.environ.get("API_KEY")
            if not token:
                raise SystemExit("set HF_TOKEN (the API key of API_BASE_URL), or use --heuristic")
            client = OpenAI(base_url=os.environ.get("API_BASE_URL", DEFAULT_API_BASE_URL), api_key=token)
        for task in tasks:
            for i in range(args.episodes):
                policy = heuristic_policy() if client is None else model_policy(client, model)
                reset = {"seed": args.seed + i, "split": args.split, "task": task}
                play_episode(env, policy, reset, thresholds[task], {"task": task, "env": env_name, "model": model})
    return 0


if __name__ == "__main__":
    sys.exit(main())
