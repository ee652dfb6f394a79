"""Evaluation: metrics checked on agents whose behaviour is known, one-shot and through the tools, and the
command's JSON, comparison table and charts, with a model and an adapter checkpoint laid out as the demo's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.hiddenbuild import build_hidden
from train.agents import BASELINES, Sampling, generate, load_model, scripted_tool_agent, tool_tokenizer
from train.compare import comparison_rows, markdown
from train.evaluate import evaluate, evaluate_tools, main, score_rows
from train.metrics import calibration, flag_metrics, mean_ci, summarize
from train.prompts import episode_text


def test_oracle_is_perfect(episode_rows):
    result = evaluate(BASELINES["oracle"], episode_rows)
    assert result["accuracy"] == 1.0 and result["well_formed_rate"] == 1.0
    assert all(result["flags"][kind]["recall"] == 1.0 for kind in result["flags"] if result["flags"][kind]["support"])
    assert result["flags"]["all"]["precision"] == 1.0
    assert result["calibration"]["ece"] == 0.0 and result["calibration"]["brier"] == 0.0
    assert result["context_bias_rate"] == 0.0


def test_majority_and_follower_show_the_gap_corrupt_documents_open(episode_rows):
    majority = evaluate(BASELINES["majority"], episode_rows)
    follower = evaluate(BASELINES["follower"], episode_rows)
    assert majority["accuracy"] == 1.0 and majority["flags"]["all"]["recall"] == 0.0
    # A follower answers wrong exactly when it trusted a corrupt document: that is context bias.
    assert follower["context_bias_rate"] == pytest.approx(1 - follower["accuracy"])
    assert 0 < follower["context_bias_rate"] < 1
    assert follower["reward"]["mean"] < majority["reward"]["mean"]
    assert follower["calibration"]["ece"] == pytest.approx(1 - follower["accuracy"], abs=1e-4)


def test_empty_agent_scores_the_empty_submission(episode_rows):
    result = evaluate(BASELINES["empty"], episode_rows)
    assert result["reward"] == {"mean": 0.2458, "ci95_low": 0.2458, "ci95_high": 0.2458}
    assert result["well_formed_rate"] == 0.0 and result["calibration"]["brier"] == 0.0


def test_flag_metrics_per_kind(episode_rows):
    row = {**episode_rows[0], "doc_corruption": ["number", "entity", "none", "none", "none", "none", "none", "none"]}
    row["corrupt_ids"] = [0, 1]
    text = '{"answer": "x", "flagged_ids": [0, 2], "confidence": 0.5}'
    flags = flag_metrics(score_rows([row], [text]))
    assert flags["all"] == {"support": 2, "precision": 0.5, "recall": 0.5, "f1": 0.5}
    assert flags["number"]["recall"] == 1.0 and flags["entity"]["recall"] == 0.0
    # a kind the episodes do not hold has no figures: 0 read as an agent missing every such document
    assert flags["coherent"] == {"support": 0, "precision": None, "recall": None, "f1": None}
    row = markdown(comparison_rows({"agent": {**evaluate(BASELINES["oracle"], [row]), "flags": flags}}))
    assert row.splitlines()[-1].endswith(" | n/a / n/a / n/a |")  # coherent, last of the kinds


def test_mean_ci_and_calibration_bins(episode_rows):
    assert mean_ci([1.0, 3.0]) == {"mean": 2.0, "ci95_low": 0.04, "ci95_high": 3.96}
    assert mean_ci([1.0]) == {"mean": 1.0, "ci95_low": None, "ci95_high": None}  # one episode: no interval
    texts = [f'{{"answer": "{r["answer"]}", "confidence": 0.95}}' for r in episode_rows[:4]]
    texts += ['{"answer": "wrong", "confidence": 0.95}'] * 4
    result = calibration(score_rows(episode_rows[:8], texts))
    assert result["reliability"] == [{"bin": 9, "count": 8, "confidence": 0.95, "accuracy": 0.5}]
    assert result["ece"] == pytest.approx(0.45) and result["brier"] == pytest.approx((0.05**2 + 0.95**2) / 2)
    # ECE from the bins' exact means, not from the table's rounded ones: 3 at 0.10004, 2 of them right
    texts = [f'{{"answer": "{r["answer"]}", "confidence": 0.10004}}' for r in episode_rows[:2]]
    result = calibration(score_rows(episode_rows[:3], [*texts, '{"answer": "wrong", "confidence": 0.10004}']))
    assert result["ece"] == round(2 / 3 - 0.10004, 4) == 0.5666


def test_the_reward_interval_is_over_episodes_when_each_has_several_replies(episode_rows):
    """Sampled replies to one episode are not independent draws: two episodes of four replies each give an interval
    from two values, each the mean of its episode's replies."""
    rows = [episode_rows[0]] * 4 + [episode_rows[1]] * 4
    right = [f'{{"answer": "{episode_rows[0]["answer"]}", "confidence": 1.0}}'] * 4
    result = summarize(score_rows(rows, right + ["", "", "", '{"answer": "wrong", "confidence": 0.0}']))
    unused = [0.05 * (1 - 1 / r["max_budget"]) for r in episode_rows[:2]]  # one action: the submission
    first, second = 0.4 + 0.2 + 0.1 + unused[0], 0.2 + unused[1]  # right and sure; empty, or wrong at confidence 0
    assert result["episodes"] == 2 and result["replies"] == 8
    assert result["reward"] == mean_ci([first, second])
    tasks = [r["task"] for r in episode_rows[:2]]
    assert result["per_task"][tasks[0]]["episodes"] == tasks.count(tasks[0])


def test_sampled_replies_are_seeded_and_drawn_per_context(tiny_model, episode_rows):
    model, tokenizer = load_model(str(tiny_model))
    contexts = [tokenizer(episode_text(r["question"], r["documents"]))["input_ids"][:32] for r in episode_rows[:3]]
    drawn = generate(model, tokenizer, contexts, 5, batch_size=2, sampling=Sampling(4, seed=7))
    assert len(drawn) == 12 and drawn == generate(model, tokenizer, contexts, 5, 2, Sampling(4, seed=7))
    assert drawn != generate(model, tokenizer, contexts, 5, 2, Sampling(4, seed=8))
    # A temperature near 0 leaves one reply per context: the greedy one, four times.
    near_greedy = generate(model, tokenizer, contexts, 5, 2, Sampling(4, temperature=1e-4))
    assert near_greedy == [reply for reply in generate(model, tokenizer, contexts, 5, 2) for _ in range(4)]
    # A model's own sampling settings (Qwen2.5-Instruct ships top-k 20, top-p 0.8, a repetition penalty) do not apply:
    # GRPO samples without them.
    model.generation_config.update(top_k=2, top_p=0.5, repetition_penalty=5.0)
    assert generate(model, tokenizer, contexts, 5, 2, Sampling(4, seed=7)) == drawn


def test_command_writes_json_and_charts(tmp_path, episodes_dir, tiny_model):
    out = tmp_path / "eval"
    argv = ["--data", str(episodes_dir), "--split", "test", "--limit", "6", "--out", str(out)]
    assert main([*argv, "--agents", "oracle", "empty", "--model", f"tiny={tiny_model}", "--max-new-tokens", "4"]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["episodes"] == 6 and list(report["agents"]) == ["oracle", "empty", "tiny"]
    assert report["agents"]["tiny"]["episodes"] == 6
    for name in ("eval_reward.png", "eval_calibration.png", "eval_flags.png"):
        assert (out / name).stat().st_size > 0
    table = json.loads((out / "comparison.json").read_text())
    assert table["mode"] == "oneshot" and [r["agent"] for r in table["rows"]] == ["oracle", "empty", "tiny"]
    assert table["rows"][0]["reward"] == report["agents"]["oracle"]["reward"]["mean"]
    lines = (out / "comparison.md").read_text().splitlines()
    assert lines[2].startswith("| oracle | 1.0") and lines[4].startswith("| tiny | ")


def test_command_scores_every_sampled_reply_of_a_model(tmp_path, episodes_dir, tiny_model):
    out = tmp_path / "eval"
    argv = ["--data", str(episodes_dir), "--split", "test", "--limit", "3", "--out", str(out), "--agents", "oracle"]
    sampled = ["--samples", "5", "--seed", "3"]
    assert main([*argv, "--model", f"tiny={tiny_model}", "--max-new-tokens", "4", *sampled]) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["decoding"] == {"samples": 5, "temperature": 1.0, "seed": 3}
    assert report["agents"]["tiny"]["episodes"] == 3 and report["agents"]["tiny"]["replies"] == 15
    assert report["agents"]["oracle"]["replies"] == 3  # a baseline is what it is: one reply
    assert json.loads((out / "comparison.json").read_text())["decoding"] == report["decoding"]


def test_a_model_without_a_pad_token_is_evaluated(tmp_path, episodes_dir, tiny_model):
    """Base models such as Llama 3 ship without one: batched generation padded with None and failed."""
    model = tmp_path / "nopad"
    shutil.copytree(tiny_model, model)
    for name in ("tokenizer_config.json", "config.json", "generation_config.json"):
        config = json.loads((model / name).read_text())
        config.pop("pad_token", None)
        config.pop("pad_token_id", None)
        (model / name).write_text(json.dumps(config))
    out = tmp_path / "eval"
    argv = ["--data", str(episodes_dir), "--split", "test", "--limit", "3", "--out", str(out), "--agents", "oracle"]
    assert main([*argv, "--model", f"nopad={model}", "--max-new-tokens", "4"]) == 0  # 3 prompts: one padded batch
    assert json.loads((out / "eval.json").read_text())["agents"]["nopad"]["episodes"] == 3


@pytest.mark.parametrize("name", ["oracle", "majority", "follower"])
def test_a_baseline_through_the_tools_scores_as_one_shot(tiny_model, episode_rows, name):
    """A submission is the trace "flag each id, then submit": played as tool calls it earns the same metrics."""
    tokenizer = tool_tokenizer(str(tiny_model))
    rows = episode_rows[:20]
    tools = evaluate_tools(scripted_tool_agent(BASELINES[name], tokenizer), tokenizer, rows, 4096, 12)
    assert tools.pop("actions")["submitted_rate"] == 1.0
    assert tools == evaluate(BASELINES[name], rows)


def test_empty_through_the_tools_is_a_forfeit_scored_as_the_empty_submission(tiny_model, episode_rows):
    tokenizer = tool_tokenizer(str(tiny_model))
    result = evaluate_tools(scripted_tool_agent(BASELINES["empty"], tokenizer), tokenizer, episode_rows[:5], 512, 12)
    assert result["reward"] == evaluate(BASELINES["empty"], episode_rows[:5])["reward"]
    assert result["actions"]["actions_per_episode"] == 0.0
    assert result["actions"]["unfinished_rate"] == 1.0 and result["well_formed_rate"] == 0.0


@pytest.fixture
def demo_folder(tmp_path, tiny_model):
    """The demo's checkpoint layout: a full model in sft/, a LoRA adapter in grpo/ whose recorded base is gone."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    folder = tmp_path / "demo"
    shutil.copytree(tiny_model, folder / "sft")
    moved = tmp_path / "moved_away"
    shutil.copytree(tiny_model, moved)
    adapter = get_peft_model(AutoModelForCausalLM.from_pretrained(moved), LoraConfig(r=4, target_modules=["q_proj"]))
    adapter.save_pretrained(folder / "grpo")
    shutil.rmtree(moved)
    return folder


def test_command_evaluates_the_demo_checkpoints_in_both_modes(tmp_path, episodes_dir, demo_folder):
    common = ["--data", str(episodes_dir), "--limit", "2", "--demo", str(demo_folder), "--agents", "majority"]
    assert main([*common, "--max-new-tokens", "4", "--out", str(tmp_path / "one")]) == 0
    tools_argv = ["oracle", "--mode", "tools", "--max-new-tokens", "300", "--out", str(tmp_path / "tools")]
    assert main([*common, *tools_argv]) == 0
    one = json.loads((tmp_path / "one" / "comparison.json").read_text())
    assert [r["agent"] for r in one["rows"]] == ["majority", "tiny SFT", "tiny SFT+GRPO"]
    tools = json.loads((tmp_path / "tools" / "eval.json").read_text())
    assert tools["mode"] == "tools" and list(tools["agents"]) == ["majority", "oracle", "tiny SFT", "tiny SFT+GRPO"]
    assert tools["agents"]["oracle"]["accuracy"] == 1.0
    assert tools["agents"]["oracle"]["actions"]["actions_per_episode"] > 1
    assert "actions / episode" in (tmp_path / "tools" / "comparison.md").read_text()


def test_command_refuses_what_it_cannot_run(tmp_path, episodes_dir, capsys):
    for args, message in (
        (["--mode", "tools"], "--mode tools: baselines write tool calls with a tokenizer"),
        (["--agents"], "nothing to evaluate"),
        (["--model", f"oracle={tmp_path}"], "repeated: ['oracle']"),
        (["--agents", "empty", "--model", f"a={tmp_path}", "--model", f"a={tmp_path}"], "repeated: ['a']"),
        (["--samples", "-1"], "--samples must be >= 0 (0: greedy), got -1"),
        (["--samples", "2", "--temperature", "0"], "--temperature must be > 0, got 0.0"),
        (["--samples", "2", "--temperature", "nan"], "--temperature must be > 0, got nan"),
        (["--samples", "2", "--mode", "tools", "--tokenizer", str(tmp_path)], "--samples: one-shot mode only"),
    ):
        with pytest.raises(SystemExit) as refused:
            main(["--data", str(episodes_dir), "--out", str(tmp_path / "out"), *args])
        assert refused.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before writing anything
    with pytest.raises(SystemExit):
        main(["--data", str(episodes_dir), "--demo", str(tmp_path), "--out", str(tmp_path / "out")])
    assert f"--demo {tmp_path}: no sft/ checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    missing = tmp_path / "no-model"
    for args, message in (
        (["--model", f"m={missing}"], f"--model m={missing}: no such folder (and not a Hub model id)"),
        (["--mode", "tools", "--tokenizer", "./nothing"], "--tokenizer ./nothing: no such folder"),
    ):
        with pytest.raises(SystemExit):
            main(["--data", str(episodes_dir), "--out", str(tmp_path / "out"), *args])
        assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    (tmp_path / "afile").write_text("")
    with pytest.raises(SystemExit):
        main(["--data", str(episodes_dir), "--agents", "oracle", "--out", str(tmp_path / "afile")])
    assert f"--out {tmp_path / 'afile'}: a file, not a folder" in capsys.readouterr().err


def test_a_folder_without_a_model_is_one_line_naming_it(tmp_path, episodes_dir, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "--data",
                str(episodes_dir),
                "--limit",
                "4",
                "--agents",
                "--model",
                f"m={tmp_path / 'empty'}",
                "--out",
                str(tmp_path / "out"),
            ]
        )
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith(f"error: {tmp_path / 'empty'}: ") and err.count("\n") == 1, err


@pytest.fixture(scope="module")
def hidden_episodes(tmp_path_factory, hidden_facts_dir) -> Path:
    """The suite's small build with its test split hidden (episodes.hidden_test), from facts built with its key."""
    return build_hidden(tmp_path_factory.mktemp("hidden"), hidden_facts_dir)[0]


def test_data_it_cannot_read_is_one_line_naming_the_flag(tmp_path, hidden_episodes, capsys):
    """A missing folder or a hidden split exits 2 with one line naming --data and --split, and writes nothing."""
    out = tmp_path / "out"
    for data, split, problem in (
        (tmp_path / "absent", "validation", "Couldn't find any data file"),
        (hidden_episodes, "test", "split 'test' of"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["--data", str(data), "--split", split, "--agents", "oracle", "--out", str(out)])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"error: --data {str(data)!r}, --split {split!r}: ") and problem in err, err
    assert not out.exists()


def test_a_data_error_over_several_lines_is_reported_in_one(tmp_path, episodes_dir, monkeypatch, capsys):
    import train.evaluate

    def fail(*args, **kwargs):
        raise OSError("line one\nline two")

    monkeypatch.setattr(train.evaluate, "take_rows", fail)
    with pytest.raises(SystemExit) as exit_:
        main(["--data", str(episodes_dir), "--agents", "oracle", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and err.endswith(": line one line two\n"), err


def test_greedy_cuts_a_reply_at_every_end_token_the_generation_config_lists(tiny_model, episode_rows):
    """Qwen2.5-Instruct ends a turn on `<|im_end|>` or `<|endoftext|>`: a row of a batch ended on the second kept the
    pads generated after it, which went on into a tool-mode context."""
    model, tokenizer = load_model(str(tiny_model))
    texts = [tokenizer(episode_text(r["question"], r["documents"]))["input_ids"] for r in episode_rows[:4]]
    contexts = [text[:n] for text in texts for n in (8, 48)]
    # Two contexts whose greedy rows end apart: the first row's first token appears nowhere in the second's.
    pairs = ([a, b] for a in contexts for b in contexts if a != b)
    pair, free = next((p, f) for p in pairs if (f := generate(model, tokenizer, p, 6))[0][0] not in f[1])
    ender = free[0][0]
    assert ender != tokenizer.eos_token_id
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, ender]
    assert generate(model, tokenizer, pair, 6) == [[ender], free[1]]
