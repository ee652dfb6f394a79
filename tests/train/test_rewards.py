"""The completion parser and the one-shot reward: never an exception, and the server's scoring."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_api.game import play, submission_moves
from reward_api.scoring import EpisodeKey, score_key, score_submission_key
from train.rewards import (
    EMPTY_SUBMISSION,
    MAX_COMPLETION_CHARS,
    MAX_JSON_CANDIDATES,
    Submission,
    completion_text,
    environment_reward,
    episode_reward,
    format_reward,
    parse_completion,
)
from train.tools import ContextCorruptionEnv

GOOD = '{"answer": "Paris", "flagged_ids": [3, 1], "confidence": 0.75}'


def test_parses_a_clean_submission():
    assert parse_completion(GOOD) == (Submission(answer="Paris", flagged_ids=(1, 3), confidence=0.75), True)


@pytest.mark.parametrize(
    "text",
    [
        f"Sure! Here it is:\n```json\n{GOOD}\n```\nGood luck.",
        f'<think>maybe {{"answer": "Lyon"}} no</think>{GOOD}',
        f'{{"answer": "draft", "flagged_ids": [], "confidence": 0.1}} on second thought {GOOD}',
        f'<think>truncated reasoning with no end {{"answer": "Lyon"}}</think> {GOOD}',
    ],
)
def test_finds_the_last_valid_json_outside_thinking(text):
    submission, complete = parse_completion(text)
    assert submission.answer == "Paris" and submission.flagged_ids == (1, 3) and complete


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Paris",
        '{"answer": "Paris", "flagged_ids": [1], "confidence": 0.7',  # truncated
        '{"answer": "Paris", "flagged_ids": [1], "confidence": 1.5}',  # out of range
        '{"answer": "Paris", "flagged_ids": [9], "confidence": 0.5}',  # no such document
        '{"answer": "Paris", "flagged_ids": [true], "confidence": 0.5}',
        '{"answer": "Paris", "flagged_ids": "1,2", "confidence": 0.5}',
        '{"answer": "Paris", "flagged_ids": [1.0], "confidence": 0.5}',
        '{"answer": "Paris", "confidence": NaN}',
        '{"answer": "Paris", "confidence": Infinity}',
        '{"answer": "Paris", "confidence": "0.9"}',
        '{"answer": ["Paris"], "confidence": 0.9}',
        '{"answer": "' + "x" * 1001 + '", "confidence": 0.9}',  # answer over the API's limit
        '{"nested": {"answer": "Paris", "flagged_ids": [], "confidence": 0.9}}',
        '<think>{"answer": "Paris", "flagged_ids": [], "confidence": 0.9}',  # unclosed thinking
        "[" * 50_000 + "]" * 50_000,  # huge and deeply nested
        "{" * 30_000,
        GOOD + " " * MAX_COMPLETION_CHARS,  # oversized
        '{"answer": "' + "\\ud800" * 10 + '"}' + "\x00\uffff",
        # the server refuses these (POST /score answers 422), so they are malformed too
        '{"answer": "Paris", "flagged_ids": [1]}',  # no confidence
        '{"answer": "Paris", "flagged_ids": [1], "confidence": 0.5, "why": "doc 1 disagrees"}',  # an extra key
        '{"answer": "Paris", "flagged_ids": [1, 1, 1, 1, 1, 1, 1, 1, 1], "confidence": 0.5}',  # over 8 flags
    ],
)
def test_bad_completions_become_the_empty_submission(text):
    assert parse_completion(text) == (EMPTY_SUBMISSION, False)


def test_partial_submission_defaults_and_is_not_well_formed():
    """flagged_ids is the one key the server lets a submission leave out."""
    assert parse_completion('{"answer": "Paris", "confidence": 1}') == (Submission("Paris", (), 1.0), False)
    assert parse_completion('{"answer": "Paris", "flagged_ids": [3, 1, 3], "confidence": 0}')[0].flagged_ids == (1, 3)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}[]":,0123456789.e-tfnaluswerdig_ <>/think\\')), max_size=400))
def test_parser_never_raises_on_json_like_noise(text):
    submission, _ = parse_completion(text)
    assert isinstance(submission, Submission)


@settings(max_examples=200, deadline=None)
@given(
    answer=st.text(max_size=30),
    flagged=st.lists(st.integers(0, 7), max_size=8),
    confidence=st.floats(0, 1),
    corrupt=st.sets(st.integers(0, 7), min_size=1, max_size=4),
)
def test_reward_equals_playing_the_trace_through_the_server_game(answer, flagged, confidence, corrupt):
    text = json.dumps({"answer": answer, "flagged_ids": flagged, "confidence": confidence})
    got = episode_reward(
        [[{"role": "assistant", "content": text}]], ["Paris"], [["paris france"]], [sorted(corrupt)], [12]
    )
    key = EpisodeKey.from_row("Paris", ["paris france"], corrupt, 12)
    assert got == [play(0, submission_moves(answer, flagged, confidence), key).breakdown["total"]]


def test_an_alias_earns_the_answer_reward():
    """Against a wrong answer at the same confidence: +0.4 for the answer, +0.1c instead of -0.2c calibration."""

    def reward(answer: str) -> float:
        text = json.dumps({"answer": answer, "flagged_ids": [], "confidence": 0.5})
        return episode_reward([[{"role": "assistant", "content": text}]], ["Pound"], [["GBP"]], [[2]], [12])[0]

    assert reward("gbp") == pytest.approx(reward("Euro") + 0.4 + 0.3 * 0.5)
    assert reward("GBP") == reward("pound.") == reward("Pound")


def test_an_answer_up_to_the_api_limit_is_scored_as_the_server_scores_it():
    answer = "Lyon " + "x" * 600  # over the 512 characters training once allowed, under the API's 1,000
    text = json.dumps({"answer": answer, "flagged_ids": [1], "confidence": 0.5})
    got = episode_reward([[{"role": "assistant", "content": text}]], ["Paris"], [[]], [[1]], [12])
    expected = play(0, submission_moves(answer, [1], 0.5), EpisodeKey.from_row("Paris", [], [1], 12))
    assert got == [expected.breakdown["total"]] and expected.breakdown["confidence_calibration"] < 0


def test_reward_functions_follow_trl_contract_and_log_parts():
    logged: dict[str, float] = {}
    completions = [GOOD, "garbage", '{"answer": "paris", "confidence": 0.5}']
    rewards = episode_reward(
        completions, ["Paris"] * 3, [[]] * 3, [[1, 3]] * 3, [12] * 3, log_metric=logged.__setitem__, trainer_state=None
    )
    assert rewards[0] == pytest.approx(0.4 + 0.3 + 0.2 + 0.075 + 0.05 * (1 - 3 / 12), abs=1e-4)
    assert rewards[1] == pytest.approx(0.2 + 0.05 * (1 - 1 / 12), abs=1e-4)
    assert set(logged) == {
        f"reward_parts/{k}"
        for k in (
            "answer_correctness",
            "corruption_detection",
            "false_positive_penalty",
            "confidence_calibration",
            "efficiency",
        )
    }
    assert format_reward(completions) == [1.0, 0.0, 0.0]


def test_tool_mode_reward_is_each_environments_breakdown_with_its_parts_logged(episode_rows):
    """One reward source in tool mode (TRL adds an environment's get_reward as a second one): what the server's
    scoring gives each rollout's trace (an unfinished one: the empty submission made then, that action charged),
    and the same reward_parts/* metrics as one-shot."""
    envs = [ContextCorruptionEnv() for _ in range(3)]
    rows = episode_rows[:3]
    for env, row in zip(envs, rows, strict=True):
        env.reset(**row)
    flagged = rows[0]["corrupt_ids"][0]
    envs[0].flag_suspicious(doc_id=flagged)
    envs[0].submit_answer(answer=rows[0]["answer"], confidence=0.9)
    envs[1].read_doc(doc_id=2)  # unfinished: scored as the empty submission made now
    logged: dict[str, float] = {}
    rewards = environment_reward(environments=envs, completions=[[]] * 3, log_metric=logged.__setitem__)
    keys = [
        EpisodeKey.from_row(row["answer"], row["answer_aliases"], row["corrupt_ids"], row["max_budget"])
        for row in rows
    ]
    expected = [
        score_submission_key(rows[0]["answer"], [flagged], 0.9, keys[0]),  # flag, then submit: 2 actions
        score_key("", frozenset(), 0.0, 2, keys[1]),  # a read, then the empty submission charged
        score_submission_key("", [], 0.0, keys[2]),  # nothing done: the empty submission, 1 action
    ]
    assert rewards == [breakdown["total"] for breakdown in expected] and rewards[0] > 0.7
    budget = [row["max_budget"] for row in rows]
    # the empty submission: wrong, nothing flagged (no false positive), confidence 0; efficiency after 2 and 1 actions
    assert rewards[1:] == [
        pytest.approx(0.2 + 0.05 * (1 - 2 / budget[1]), abs=1e-4),
        pytest.approx(0.2 + 0.05 * (1 - 1 / budget[2]), abs=1e-4),
    ]
    assert logged == {
        f"reward_parts/{key}": pytest.approx(sum(breakdown[key] for breakdown in expected) / 3)
        for key in expected[0]
        if key != "total"
    }
    assert not hasattr(ContextCorruptionEnv, "get_reward")


def test_completion_text_takes_the_last_assistant_turn():
    assert completion_text("plain") == "plain"
    messages = [
        {"role": "assistant", "content": "a"},
        {"role": "tool", "content": "t"},
        {"role": "assistant", "content": "b"},
    ]
    assert completion_text(messages) == "b"
    assert completion_text([{"role": "assistant", "content": None}]) == ""


def test_braces_in_prose_do_not_use_up_the_search_for_the_submission():
    """Only a brace that opens a key is a candidate: 64 sets in prose still leave the submission found."""
    text = "sets {a} " * 64 + '{"answer": "Paris", "flagged_ids": [2], "confidence": 0.8}'
    assert parse_completion(text) == (Submission("Paris", (2,), 0.8), True)
    submission = '{"answer": "Paris", "flagged_ids": [2], "confidence": 0.8}'
    assert parse_completion('{"note": 1} ' * (MAX_JSON_CANDIDATES - 1) + submission)[0].answer == "Paris"
    assert parse_completion('{"note": 1} ' * MAX_JSON_CANDIDATES + submission) == (EMPTY_SUBMISSION, False)
