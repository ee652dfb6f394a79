"""Tool mode's environment: the server's game rules, TRL's tool schema and tool-call parsing."""

from __future__ import annotations

import pytest
from transformers.utils import get_json_schema
from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

from reward_api.game import MoveError, play, submission_moves
from reward_api.scoring import EpisodeKey
from train.backend import load_tokenizer
from train.tools import ContextCorruptionEnv

TOOLS = ("read_doc", "flag_suspicious", "unflag_doc", "submit_answer")


@pytest.fixture
def env_row(episode_rows):
    row = episode_rows[0]
    env = ContextCorruptionEnv()
    observation = env.reset(**row, prompt=[])
    return env, row, observation


def test_reset_shows_the_episode_and_no_hidden_column(env_row):
    _, row, observation = env_row
    assert row["question"] in observation and all(d["content"] in observation for d in row["documents"])
    assert "Budget: 12" in observation
    for hidden in ("doc_corruption", "corrupt_ids", "fact_id", row["fact_id"]):
        assert hidden not in observation


def test_a_played_trace_earns_what_the_server_game_gives(env_row):
    env, row, _ = env_row
    key = EpisodeKey.from_row(row["answer"], row["answer_aliases"], row["corrupt_ids"], row["max_budget"])
    assert "budget left 11" in env.read_doc(doc_id=2)
    env.flag_suspicious(doc_id=5)
    env.flag_suspicious(doc_id=row["corrupt_ids"][0])
    env.unflag_doc(doc_id=5)
    assert "over" in env.submit_answer(answer=row["answer"], confidence=0.8)
    flagged = {row["corrupt_ids"][0]}
    expected = play(row["episode_id"], submission_moves(row["answer"], flagged, 0.8), key).breakdown
    assert env.breakdown["answer_correctness"] == 0.4 and env.breakdown["corruption_detection"] > 0
    # Five actions instead of two: only the efficiency term differs from the one-shot trace.
    assert env.breakdown["total"] == pytest.approx(expected["total"] - 0.05 * 3 / 12, abs=1e-4)
    with pytest.raises(MoveError, match="over"):
        env.flag_suspicious(doc_id=1)


def test_budget_exhaustion_forces_the_empty_submission(env_row):
    env, row, _ = env_row
    for _ in range(11):
        env.read_doc(doc_id=0)
    assert "budget exhausted" in env.flag_suspicious(doc_id=row["corrupt_ids"][0])
    assert env.breakdown["answer_correctness"] == 0 and env.breakdown["confidence_calibration"] == 0
    assert env.breakdown["efficiency"] == 0
    with pytest.raises(MoveError):
        env.submit_answer(answer=row["answer"], confidence=1.0)


def test_unfinished_rollout_scores_as_empty_submission(env_row):
    """Charged the submission it never made: one read and one submit."""
    env, _, _ = env_row
    env.read_doc(doc_id=3)
    assert env.breakdown["answer_correctness"] == 0 and env.breakdown["efficiency"] == pytest.approx(
        0.05 * 10 / 12, 1e-3
    )


@pytest.mark.parametrize(
    ("tool", "kwargs"),
    [
        ("read_doc", {"doc_id": 8}),
        ("flag_suspicious", {"doc_id": "3"}),
        ("unflag_doc", {"doc_id": True}),
        ("submit_answer", {"answer": 1999, "confidence": 0.5}),
        ("submit_answer", {"answer": "x", "confidence": 1.5}),
        ("submit_answer", {"answer": "x", "confidence": "high"}),
        ("submit_answer", {"answer": "x", "confidence": 10**400}),  # OverflowError converting it to a float
        ("submit_answer", {"answer": "x" * 1001, "confidence": 0.5}),  # the API's limit
        ("submit_answer", {"answer": "Paris\ud800", "confidence": 0.5}),  # the API refuses it; normalize dropped it
    ],
)
def test_invalid_actions_raise_and_cost_nothing(env_row, tool, kwargs):
    env, _, _ = env_row
    with pytest.raises(ValueError):
        getattr(env, tool)(**kwargs)
    assert "budget left 11" in env.read_doc(doc_id=0)


def test_trl_sees_exactly_the_four_tools_with_typed_schemas():
    public = [name for name in vars(ContextCorruptionEnv) if not name.startswith("_")]
    assert set(public) - {"reset", "breakdown"} == set(TOOLS)
    env = ContextCorruptionEnv()
    schema = {t: get_json_schema(getattr(env, t))["function"]["parameters"]["properties"] for t in TOOLS}
    assert schema["read_doc"]["doc_id"]["type"] == "integer"
    assert schema["submit_answer"]["confidence"]["type"] == "number"


def test_a_model_tool_call_reaches_the_environment(tiny_model, env_row):
    env, row, _ = env_row
    tokenizer = add_response_schema(load_tokenizer(str(tiny_model)))
    assert supports_tool_calling(tokenizer)
    tools = [getattr(env, t) for t in TOOLS]
    prefix = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=tools, add_generation_prompt=True, tokenize=True
    )["input_ids"]
    text = '<tool_call>\n{"name": "flag_suspicious", "arguments": {"doc_id": 4}}\n</tool_call><|im_end|>'
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    call = parse_response(tokenizer, ids, prefix=prefix, tools=tools)["tool_calls"][0]["function"]
    assert "flagged [4]" in getattr(env, call["name"])(**call["arguments"])
