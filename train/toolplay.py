"""Tool-mode evaluation: agents play episodes multi-turn through the training environment (`train.tools`).

The loop is TRL's GRPO tool loop (`GRPOTrainer._tool_call_loop`) with greedy decoding: the prompt is
`tools_prompt()` with the environment's `reset` observation appended to the user turn, rendered with the
environment's tools; each reply is parsed with TRL's `parse_response`; its tool calls run on the
environment (a failing call answers `{'error': ...}` and costs nothing); the tool results are appended
as token ids (no re-tokenisation) and the agent continues. A rollout ends when a reply has no tool
call, after `max_tool_calling_iterations` rounds of tools, or when the next tool results would overrun
`max_completion_length` tokens. The reward is the environment's: an episode left without a submission
counts as the empty, confidence-0 submission made then, that action charged.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from reward_api.game import ACTION_TYPES, DOC_ACTIONS, Move
from reward_api.scoring import Breakdown
from train.metrics import Scored
from train.prompts import tools_prompt
from train.rewards import Submission
from train.tools import ContextCorruptionEnv

_NOT_TOOLS = ("reset", "get_reward")


class ToolAgent(Protocol):
    """Next reply (token ids, ending with the end-of-turn token) for each episode's context so far."""

    def __call__(
        self, rows: Sequence[dict[str, Any]], contexts: Sequence[list[int]], turn: int, max_new_tokens: int
    ) -> list[list[int]]: ...


@dataclass(frozen=True)
class Rollout:
    """One episode as played: the actions the environment accepted, in order, and the reward it gave."""

    row: dict[str, Any]
    moves: tuple[Move, ...]
    breakdown: Breakdown
    turns: int
    tool_calls: int
    failed_calls: int

    @property
    def submitted(self) -> bool:
        return bool(self.moves) and self.moves[-1].action_type == "submit_answer"

    def scored(self) -> Scored:
        """As the metrics see a one-shot episode: the submission is the submitted answer with the final flags
        (no submission: the empty answer at confidence 0, flags as left)."""
        flagged: set[int] = set()
        for move in self.moves:
            if move.action_type == "flag_suspicious":
                flagged.add(move.doc_id)
            elif move.action_type == "unflag_doc":
                flagged.discard(move.doc_id)
        last = self.moves[-1] if self.submitted else Move("submit_answer", None, "", 0.0)
        submission = Submission(last.answer, tuple(sorted(flagged)), last.confidence)
        return Scored(self.row, submission, self.submitted, self.breakdown)


def action_stats(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """Actions the environment accepted per episode (in all and by type), turns, tool calls refused, and how
    episodes ended: submitted, budget used up (empty submission forced), or stopped without a submission."""
    n = len(rollouts)
    exhausted = sum(1 for r in rollouts if not r.submitted and len(r.moves) >= r.row["max_budget"])
    calls = sum(r.tool_calls for r in rollouts)
    return {
        "actions_per_episode": round(sum(len(r.moves) for r in rollouts) / n, 4),
        "by_type": {
            kind: round(sum(m.action_type == kind for r in rollouts for m in r.moves) / n, 4) for kind in ACTION_TYPES
        },
        "turns_per_episode": round(sum(r.turns for r in rollouts) / n, 4),
        "tool_calls_per_episode": round(calls / n, 4),
        "failed_call_rate": round(sum(r.failed_calls for r in rollouts) / calls, 4) if calls else 0.0,
        "submitted_rate": round(sum(r.submitted for r in rollouts) / n, 4),
        "budget_exhausted_rate": round(exhausted / n, 4),
        "unfinished_rate": round((n - exhausted - sum(r.submitted for r in rollouts)) / n, 4),
    }


def env_tools(env: ContextCorruptionEnv) -> list[Callable[..., str]]:
    """The environment's tools as TRL lists them: public methods other than reset/get_reward, by name."""
    return [
        getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in _NOT_TOOLS
    ]


def with_response_parser(tokenizer: Any) -> Any:
    """As TRL's trainer: the tokenizer's own response template or schema, else TRL's for its known chat template."""
    from trl.chat_template_utils import add_response_schema

    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        add_response_schema(tokenizer)
    return tokenizer


def training_template(tokenizer: Any) -> str | None:
    """The template TRL renders tool-mode rollouts with: the tokenizer's own (None) where appending a tool result
    extends its tokens, else TRL's training version of it (Qwen3's drops earlier turns' reasoning)."""
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

    return None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)


def tool_suffix_ids(tokenizer: Any, tool_messages: list[dict[str, str]], template: str | None) -> list[int]:
    """The tokens the chat template puts after an assistant turn for these tool results, up to the next reply
    (TRL's `_get_tool_suffix_ids`: the difference between a dummy conversation with and without them)."""
    call = {"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}
    dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    render = partial(tokenizer.apply_chat_template, chat_template=template, tokenize=True, return_dict=False)
    prefix = render(dummy, add_generation_prompt=False)
    full = render(dummy + tool_messages, add_generation_prompt=True)
    ends = [i for i, token in enumerate(prefix) if token == tokenizer.eos_token_id]
    prefix = prefix[: ends[-1] + 1] if ends else prefix
    if full[: len(prefix)] != prefix:
        raise ValueError("chat template: the tool results do not extend the conversation's tokens")
    return full[len(prefix) :]


@dataclass
class _Episode:
    row: dict[str, Any]
    env: ContextCorruptionEnv
    tools: list[Callable[..., str]]
    ids: list[int]
    prompt_len: int
    moves: list[Move] = field(default_factory=list)
    turns: int = 0
    calls: int = 0
    failed: int = 0

    @property
    def completion_len(self) -> int:
        return len(self.ids) - self.prompt_len

    def call(self, tool_call: dict[str, Any]) -> dict[str, str]:
        """Run one parsed tool call on the environment; a refused call answers with the error, as in training."""
        self.calls += 1
        function = tool_call.get("function") or {}
        name = str(function.get("name", "unknown"))
        try:
            if tool_call.get("type") != "function":
                raise ValueError(f"Unsupported tool call type: {tool_call.get('type')}")
            tool = next((t for t in self.tools if t.__name__ == name), None)
            if tool is None:
                raise ValueError(f"Tool {name} not found.")
            arguments = function.get("arguments") or {}
            result: Any = tool(**arguments)
            self.moves.append(_move(name, arguments))
        except Exception as exc:  # noqa: BLE001  (any failure goes back to the model, as TRL does)
            self.failed += 1
            result = {"error": str(exc)}
        return {"role": "tool", "name": name, "content": str(result)}


def _move(name: str, arguments: dict[str, Any]) -> Move:
    if name in DOC_ACTIONS:
        return Move(name, arguments["doc_id"])
    return Move(name, None, arguments["answer"], float(arguments["confidence"]))


def _start(row: dict[str, Any], tokenizer: Any, template: str | None) -> _Episode:
    env = ContextCorruptionEnv()
    observation = env.reset(**row)
    prompt = tools_prompt()
    prompt[-1] = {**prompt[-1], "content": prompt[-1]["content"] + observation}
    tools = env_tools(env)
    ids = tokenizer.apply_chat_template(
        prompt, tools=tools, chat_template=template, add_generation_prompt=True, tokenize=True
    )["input_ids"]
    return _Episode(row, env, tools, list(ids), len(ids))


def play(
    agent: ToolAgent,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    max_completion_length: int,
    max_tool_calling_iterations: int,
) -> list[Rollout]:
    """Play every row to its end, all episodes advancing one turn at a time (a batch per turn)."""
    from trl.chat_template_utils import parse_response

    # Tool-call arguments typed by the tools' schemas where TRL can (1.16); Unsloth's pin, TRL 1.15, cannot.
    typed = "tools" in inspect.signature(parse_response).parameters
    tokenizer = with_response_parser(tokenizer)
    template = training_template(tokenizer)
    episodes = [_start(row, tokenizer, template) for row in rows]
    active = episodes
    for turn in range(max_tool_calling_iterations + 1):
        room = max(max_completion_length - e.completion_len for e in active)
        # A tool result may fill the budget exactly (TRL keeps it): the next reply is then empty, asked of no model.
        replies = agent([e.row for e in active], [e.ids for e in active], turn, room) if room else [[]] * len(active)
        still = []
        for episode, reply in zip(active, replies, strict=True):
            reply = list(reply[: max_completion_length - episode.completion_len])
            typing = {"tools": episode.tools} if typed else {}
            parsed = parse_response(tokenizer, reply, prefix=episode.ids, **typing) if reply else {}
            episode.ids += reply
            episode.turns += 1
            calls = parsed.get("tool_calls")
            if not calls or turn == max_tool_calling_iterations:
                continue
            suffix = tool_suffix_ids(tokenizer, [episode.call(c) for c in calls], template)
            if episode.completion_len + len(suffix) <= max_completion_length:
                episode.ids += suffix
                still.append(episode)
        active = still
        if not active:
            break
    return [Rollout(e.row, tuple(e.moves), e.env.breakdown, e.turns, e.calls, e.failed) for e in episodes]
