"""The episode state machine: budget rules, forced submission, traces, and the one-shot equivalence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.schema import MAX_BUDGET, NUM_DOCS
from reward_api.game import (
    EpisodeOver,
    GameState,
    Move,
    MoveError,
    apply,
    check_move,
    forfeit,
    play,
    submission_moves,
)
from reward_api.scoring import EpisodeKey, accepted_answers, score_key, score_submission_key

KEY = EpisodeKey(accepted_answers("Paris", ["City of Paris"]), frozenset({1, 4}))


def test_each_action_costs_one_and_flags_follow_the_actions():
    state = GameState(7)
    for move, flagged in (
        (Move("read_doc", 0), set()),
        (Move("flag_suspicious", 1), {1}),
        (Move("flag_suspicious", 3), {1, 3}),
        (Move("flag_suspicious", 3), {1, 3}),
        (Move("unflag_doc", 3), {1}),
        (Move("unflag_doc", 5), {1}),
    ):
        outcome = apply(state, move, KEY)
        assert outcome.state.budget_used == state.budget_used + 1
        assert outcome.state.flagged == flagged and outcome.breakdown is None and not outcome.state.done
        state = outcome.state
    final = apply(state, Move("submit_answer", None, "paris", 0.9), KEY)
    assert final.state.done and final.state.budget_used == 7
    assert final.breakdown == score_key("paris", frozenset({1}), 0.9, 7, KEY)


def test_reaching_the_budget_forces_the_empty_submission():
    state = GameState(0)
    for turn in range(MAX_BUDGET):
        outcome = apply(state, Move("flag_suspicious", 1) if turn == 0 else Move("read_doc", 2), KEY)
        state = outcome.state
    assert state.done and state.budget_used == MAX_BUDGET
    assert outcome.breakdown == score_key("", frozenset({1}), 0.0, MAX_BUDGET, KEY)
    assert "budget exhausted" in outcome.message
    with pytest.raises(EpisodeOver, match="over"):
        apply(state, Move("submit_answer", None, "Paris", 1.0), KEY)


@pytest.mark.parametrize(
    ("move", "needle"),
    [
        (Move("jump", 1), "action_type"),
        (Move("read_doc"), "needs doc_id"),
        (Move("flag_suspicious", NUM_DOCS), "doc_id must be in"),
        (Move("flag_suspicious", -1), "doc_id must be in"),
        (Move("read_doc", 1, "Paris"), "only doc_id"),
        (Move("submit_answer", None, "Paris"), "needs answer"),
        (Move("submit_answer", None, "Paris", 1.01), "confidence"),
        (Move("submit_answer", None, "Paris", float("nan")), "confidence"),
        (Move("submit_answer", 2, "Paris", 0.5), "no doc_id"),
    ],
)
def test_malformed_moves_are_refused_by_name(move, needle):
    with pytest.raises(MoveError, match=needle):
        check_move(move)
    with pytest.raises(MoveError, match=needle):
        apply(GameState(0), move, KEY)


@given(st.text(max_size=12), st.lists(st.integers(0, NUM_DOCS - 1), max_size=NUM_DOCS), st.floats(0, 1))
def test_one_shot_is_the_trace_flag_each_then_submit(answer, flagged, confidence):
    traced = play(3, submission_moves(answer, flagged, confidence), KEY)
    assert traced.state.budget_used == len(set(flagged)) + 1
    assert traced.breakdown == score_submission_key(answer, flagged, confidence, KEY)


def test_traces_must_end_the_episode_and_stop_there():
    with pytest.raises(MoveError, match="must end"):
        play(0, [Move("read_doc", 1)], KEY)
    with pytest.raises(MoveError, match="action 1: .*over"):
        play(0, [Move("submit_answer", None, "x", 0.0), Move("read_doc", 1)], KEY)
    exhausted = play(0, [Move("read_doc", 1)] * MAX_BUDGET, KEY)
    assert exhausted.breakdown == score_key("", frozenset(), 0.0, MAX_BUDGET, KEY)


def test_forfeit_scores_the_empty_submission_it_never_made():
    state = apply(GameState(0), Move("flag_suspicious", 4), KEY).state
    assert forfeit(state, KEY).breakdown == score_key("", frozenset({4}), 0.0, 2, KEY)
    submitted = apply(state, Move("submit_answer", None, "", 0.0), KEY)
    assert forfeit(state, KEY).breakdown == submitted.breakdown, "stopping never scores above submitting"
    with pytest.raises(EpisodeOver):
        forfeit(forfeit(state, KEY).state, KEY)
