"""Tool-mode play: scripted agents whose traces are known, and the tiny model, through the training environment.

Every reply is real token ids parsed by TRL's `parse_response`; the reward is checked against the
server's own game (`reward_api.game`) replaying the recorded actions.
"""

from __future__ import annotations

import pytest

from reward_api.game import GameState, Move, apply, forfeit
from reward_api.scoring import EpisodeKey, score_key
from train.agents import BASELINES, model_tool_agent, scripted_tool_agent, tool_call_text, tool_tokenizer
from train.toolplay import action_stats, play


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    return tool_tokenizer(str(tiny_model))


def _key(row) -> EpisodeKey:
    return EpisodeKey.from_row(row["answer"], row["answer_aliases"], row["corrupt_ids"], row["max_budget"])


def replay(row, moves) -> dict:
    """The server game's reward for a recorded trace (an unfinished one is forfeited)."""
    state = GameState(row["episode_id"])
    breakdown = None
    for move in moves:
        outcome = apply(state, move, _key(row))
        state, breakdown = outcome.state, outcome.breakdown
    return breakdown if state.done else forfeit(state, _key(row)).breakdown


def planned(tokenizer, plan):
    """A tool agent whose reply at each turn is `plan(row, turn)`: a list of (tool name, arguments)."""

    def agent(rows, contexts, turn, max_new_tokens):
        texts = ["\n".join(tool_call_text(name, **args) for name, args in plan(row, turn)) for row in rows]
        return [tokenizer(t + tokenizer.eos_token, add_special_tokens=False)["input_ids"] for t in texts]

    return agent


def test_oracle_through_the_tools_earns_its_one_shot_reward(tokenizer, episode_rows):
    rows = episode_rows[:8]
    rollouts = play(scripted_tool_agent(BASELINES["oracle"], tokenizer), tokenizer, rows, 4096, 12)
    for rollout, row in zip(rollouts, rows, strict=True):
        flags = [Move("flag_suspicious", i) for i in sorted(row["corrupt_ids"])]
        assert rollout.moves == (*flags, Move("submit_answer", None, row["answer"], 1.0))
        assert rollout.breakdown == replay(row, rollout.moves)
        assert rollout.breakdown == score_key(row["answer"], set(row["corrupt_ids"]), 1.0, len(flags) + 1, _key(row))
        assert rollout.turns == 2 and rollout.failed_calls == 0
    stats = action_stats(rollouts)
    assert stats["submitted_rate"] == 1.0 and stats["unfinished_rate"] == 0.0
    assert stats["by_type"]["submit_answer"] == 1.0 and stats["by_type"]["read_doc"] == 0.0


def test_budget_exhaustion_forces_the_empty_submission(tokenizer, episode_rows):
    """Flag a corrupt document, read until the budget is gone, then try to submit the right answer: too late."""

    def plan(row, turn):
        if turn == 0:
            return [("flag_suspicious", {"doc_id": row["corrupt_ids"][0]})]
        if turn < 12:
            return [("read_doc", {"doc_id": turn % 8})]
        return [("submit_answer", {"answer": row["answer"], "confidence": 1.0})]

    rows = episode_rows[:3]
    rollouts = play(planned(tokenizer, plan), tokenizer, rows, 100_000, 14)
    for rollout, row in zip(rollouts, rows, strict=True):
        assert len(rollout.moves) == row["max_budget"] == 12
        assert rollout.turns == 15 and rollout.tool_calls == 14 and rollout.failed_calls == 2
        forced = score_key("", {row["corrupt_ids"][0]}, 0.0, 12, _key(row))
        assert rollout.breakdown == forced == replay(row, rollout.moves)
        assert rollout.breakdown["answer_correctness"] == 0 and rollout.breakdown["corruption_detection"] > 0
        scored = rollout.scored()
        assert scored.submission.answer == "" and scored.submission.flagged_ids == (row["corrupt_ids"][0],)
        assert not scored.well_formed
    stats = action_stats(rollouts)
    assert stats["budget_exhausted_rate"] == 1.0 and stats["submitted_rate"] == 0.0
    assert stats["failed_call_rate"] == pytest.approx(2 / 14, abs=1e-4)


def test_refused_calls_cost_nothing_and_unflag_counts(tokenizer, episode_rows):
    def plan(row, turn):
        if turn == 0:
            return [("flag_suspicious", {"doc_id": 9}), ("flag_suspicious", {"doc_id": 1}), ("no_such_tool", {})]
        if turn == 1:
            return [("unflag_doc", {"doc_id": 1}), ("submit_answer", {"answer": "nowhere", "confidence": 0.25})]
        return []

    row = episode_rows[0]
    (rollout,) = play(planned(tokenizer, plan), tokenizer, [row], 4096, 12)
    assert [m.action_type for m in rollout.moves] == ["flag_suspicious", "unflag_doc", "submit_answer"]
    assert rollout.failed_calls == 2 and rollout.turns == 3  # the reply after the submission ends the rollout
    assert rollout.breakdown == score_key("nowhere", set(), 0.25, 3, _key(row)) == replay(row, rollout.moves)
    assert rollout.scored().submission.flagged_ids == () and rollout.scored().well_formed


def test_the_completion_budget_cuts_replies_as_training_does(tokenizer, episode_rows):
    """16 tokens cannot hold the oracle's first tool call: no action runs and the episode is forfeited."""
    rollouts = play(scripted_tool_agent(BASELINES["oracle"], tokenizer), tokenizer, episode_rows[:2], 16, 12)
    for rollout, row in zip(rollouts, episode_rows, strict=False):
        assert rollout.moves == () and rollout.turns == 1
        assert rollout.breakdown == score_key("", set(), 0.0, 1, _key(row))


def test_a_tool_result_filling_the_budget_asks_no_model_for_zero_tokens(tokenizer, episode_rows):
    """A tool result that left exactly no room kept its episode going, and the model was asked for 0 new tokens
    (transformers' generate raises on it): a tool-mode evaluation stopped."""
    flagging = planned(tokenizer, lambda row, turn: [("flag_suspicious", {"doc_id": turn % 8})])

    def agent(rows, contexts, turn, max_new_tokens):
        assert max_new_tokens > 0, "asked for no tokens"
        return flagging(rows, contexts, turn, max_new_tokens)

    budgets = range(40, 400)
    rollouts = [play(agent, tokenizer, episode_rows[:1], budget, 12)[0] for budget in budgets]
    assert {len(r.moves) for r in rollouts} >= {1, 2}  # the budgets span the first tool result and the second


def test_the_tiny_model_plays_and_is_scored_by_the_game(tiny_model, episode_rows):
    agent, tok = model_tool_agent(str(tiny_model))
    rows = episode_rows[:3]
    rollouts = play(agent, tok, rows, 24, 3)
    for rollout, row in zip(rollouts, rows, strict=True):
        assert 1 <= rollout.turns <= 4
        assert rollout.breakdown == replay(row, rollout.moves)


def test_malformed_replies_never_stop_the_evaluation(tokenizer, episode_rows):
    """Broken JSON is text, not a call; a call whose arguments are not an object fails like any refused call."""
    replies = [
        '<tool_call>\n{"name": "read_doc", "arguments": "3"}\n</tool_call>',
        '<tool_call>\n{"name": "read_doc", "arguments": {"doc_id": 2, "why": 1}}\n</tool_call>',
        '<tool_call>\n{"name": "flag_suspicious", "arguments": {"doc_id": 2}\n</tool_call>',
    ]

    def agent(rows, contexts, turn, max_new_tokens):
        return [tokenizer(replies[turn] + tokenizer.eos_token, add_special_tokens=False)["input_ids"] for _ in rows]

    row = episode_rows[1]
    (rollout,) = play(agent, tokenizer, [row], 4096, 12)
    assert rollout.moves == () and rollout.turns == 3 and rollout.tool_calls == rollout.failed_calls == 2
    assert rollout.breakdown == score_key("", set(), 0.0, 1, _key(row))


def test_play_runs_with_the_parse_response_of_unsloths_trl_pin(tokenizer, episode_rows, monkeypatch):
    """TRL 1.15 (requirements-gpu.txt) has no `tools` parameter: the same game is played, with the same moves."""
    import trl.chat_template_utils as templates

    newer = templates.parse_response

    def parse_response(tokenizer, ids, prefix=None):  # 1.15's signature
        return newer(tokenizer, ids, prefix=prefix)

    rows = episode_rows[:4]
    expected = play(scripted_tool_agent(BASELINES["oracle"], tokenizer), tokenizer, rows, 4096, 12)
    monkeypatch.setattr(templates, "parse_response", parse_response)
    rollouts = play(scripted_tool_agent(BASELINES["oracle"], tokenizer), tokenizer, rows, 4096, 12)
    assert [r.moves for r in rollouts] == [r.moves for r in expected] and all(r.failed_calls == 0 for r in rollouts)


def test_a_qwen3_template_is_played_with_the_template_training_renders(tiny_model, episode_rows):
    """Qwen3's template drops earlier turns' reasoning, so it is not prefix-preserving and TRL trains with its
    training template instead; evaluation renders the prompt and the tool results with that same template."""
    from trl.chat_template_utils import (
        get_training_chat_template,
        is_chat_template_prefix_preserving,
        qwen3_chat_template,
    )

    tok = tool_tokenizer(str(tiny_model))
    tok.chat_template = qwen3_chat_template
    assert not is_chat_template_prefix_preserving(tok)
    contexts = []

    def agent(rows, ctx, turn, max_new_tokens):
        contexts.extend(ctx)
        return oracle(rows, ctx, turn, max_new_tokens)

    oracle = scripted_tool_agent(BASELINES["oracle"], tok)
    rows = episode_rows[:4]
    rollouts = play(agent, tok, rows, 4096, 12)
    for rollout, row in zip(rollouts, rows, strict=True):
        assert rollout.moves[-1] == Move("submit_answer", None, row["answer"], 1.0) and rollout.failed_calls == 0
        assert rollout.breakdown == replay(row, rollout.moves)
    later = contexts[len(rows) :]  # the second turn's: prompt, the oracle's calls, then their results
    assert len(later) == len(rows) and all("submitted; reward" in tok.decode(ids) for ids in later)
    assert get_training_chat_template(tok) != qwen3_chat_template
