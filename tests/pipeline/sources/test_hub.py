"""The Hub loaders on small local folders laid out like the real datasets, read through `datasets.load_dataset`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.episodes import build_episodes
from pipeline.facts import LOADERS as facts_loaders
from pipeline.facts import build_facts, write_facts
from pipeline.facts import main as facts_main
from pipeline.params import FACT_SOURCES, HUB_SOURCES, EpisodesParams, FactsParams, read_params
from pipeline.sources import hub
from pipeline.validate import validate
from tests.hubstandin import HubStandin, hub_standin, publish

ROOT = Path(__file__).resolve().parents[3]
POPQA_COLUMNS = (
    "id subj prop obj subj_id prop_id obj_id s_aliases o_aliases s_uri o_uri "
    "s_wiki_title o_wiki_title s_pop o_pop question possible_answers"
).split()


def write_nq_open(root: Path) -> str:
    """nq_open: one config folder of Parquet shards per split; question (str), answer (list[str])."""
    rows = {
        "question": [
            "who wrote the iliad",
            "when did the first world war end",
            "how many people live in lagos",
            "what is the plot of the novel",
            "who sang the theme song",
            "which mark ends a question",
        ],
        "answer": [
            ["Homer", "-"],  # "-" normalises to "": no alias, or an empty submission would score as the answer
            ["1918", "11 November 1918"],
            ["15388000", "about fifteen million"],
            ["a young man travels across the country to find his father"],  # too long: dropped
            ["a singer whose name takes more than five words", "…", "Jane Doe"],  # the first short answer wins
            ["?"],  # no word: no answer, no fact
        ],
    }
    folder = root / "nq_open"
    (folder / "nq_open").mkdir(parents=True)
    schema = pa.schema([("question", pa.string()), ("answer", pa.list_(pa.string()))])
    pq.write_table(pa.table(rows, schema=schema), folder / "nq_open" / "train-00000-of-00001.parquet")
    validation = pa.table(
        {"question": ["who painted the mona lisa"], "answer": [["Leonardo da Vinci"]]}, schema=schema
    )
    pq.write_table(validation, folder / "nq_open" / "validation-00000-of-00001.parquet")
    return str(folder)


def _popqa_row(id_: int, subj: str, prop: str, obj: str, question: str, o_aliases: list[str]) -> str:
    uris = f"http://www.wikidata.org/entity/Q{id_}\thttp://www.wikidata.org/entity/Q1"
    fields = f"{id_}\t{subj}\t{prop}\t{obj}\t{1000 + id_}\t22\t{2000 + id_}"
    aliases = f"{json.dumps([subj + ' Sr.'])}\t{json.dumps(o_aliases)}"
    return f"{fields}\t{aliases}\t{uris}\t{subj}\t{obj}\t142\t25692\t{question}\t{json.dumps([obj, *o_aliases])}"


def write_popqa(root: Path) -> str:
    """PopQA: a single test.tsv; s_aliases, o_aliases and possible_answers are JSON-encoded strings."""
    long_genre = "a very long genre name with many words"
    rows = [
        _popqa_row(
            4222362, "George Rankin", "occupation", "politician", "What is George Rankin's occupation?", ["pol"]
        ),
        _popqa_row(
            1581540, "Zoe Bell", "place of birth", "Auckland", "In what city was Zoe Bell born?", ["Auckland NZ"]
        ),
        _popqa_row(2563911, "Lucy Lee", "father", "John Lee", "Who is the father of Lucy Lee?", []),
        _popqa_row(900001, "France", "capital", "Paris", "What is the capital of France?", ["City of Light"]),
        _popqa_row(900002, "Mars Hill", "genre", long_genre, "What genre is Mars Hill?", []),
        _popqa_row(900003, "Tom Hanks", "country", "the United States", "What country is Tom Hanks from?", ["USA"]),
        _popqa_row(900004, "Halo", "performer", "Beyoncé", "who performed Halo ", []),  # stored as "Who ...?"
        _popqa_row(900007, "Long Xuyen", "capital of", "An Giang", "What is Long Xuyen the capital of?", []),
        _popqa_row(900005, "N/A", "genre", "jazz", "What genre is N/A?", []),  # read as a missing value: dropped
        _popqa_row(900006, "Kind of Blue", "genre", "NaN", "What genre is Kind of Blue?", []),  # so is this
    ]
    folder = root / "PopQA"
    folder.mkdir()
    (folder / "test.tsv").write_text("\n".join(["\t".join(POPQA_COLUMNS), *rows]) + "\n")
    return str(folder)


def write_faitheval(root: Path, questions: list[tuple[str, str, list[str], str]] | None = None) -> str:
    """FaithEval counterfactual: data/test-*.parquet with choices{label, text}, answerKey and "num of options"; by
    default eight questions of three options."""
    questions = questions or [
        ("Mercury_7001", "What gas do plants absorb from the air?", ["oxygen", "nitrogen", "carbon dioxide"], "A"),
        ("Mercury_7002", "Which of the following is a mammal?", ["shark", "whale", "trout"], "B"),
        ("Mercury_7003", "In what year did the bridge open?", ["1888", "1932", "1960"], "B"),
        ("Mercury_7004", "Why do leaves fall?", ["they are pushed off by new growth in the spring"] * 3, "A"),
        ("Mercury_7005", "Which of these is a mammal?", ["shark", "whale", "trout"], "B"),
        ("Mercury_7006", "Which one of the following conducts heat?", ["wood", "copper", "air"], "B"),
        ("Mercury_7007", "Which gas is listed below as inert?", ["argon", "oxygen", "hydrogen"], "A"),
        ("Mercury_7008", "When a switch is opened in a circuit, the current", ["stops", "doubles", "rises"], "A"),
    ]
    table = pa.table(
        {
            "id": [q[0] for q in questions],
            "question": [q[1] for q in questions],
            "context": ["A passage that supports the keyed answer."] * len(questions),
            "choices": [{"label": list("ABCD"[: len(q[2])]), "text": q[2]} for q in questions],
            "answerKey": [q[3] for q in questions],
            "num of options": [len(q[2]) for q in questions],
        }
    )
    folder = root / "FaithEval-counterfactual-v1.0"
    (folder / "data").mkdir(parents=True)
    pq.write_table(table, folder / "data" / "test-00000-of-00001.parquet")
    return str(folder)


@pytest.fixture(scope="module")
def hub_paths(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hub")
    return {"nq_open": write_nq_open(root), "popqa": write_popqa(root), "faitheval": write_faitheval(root)}


def _local(path: str) -> hub.Location:
    return hub.locate("popqa", path, None)


def _rows(frame: pl.DataFrame) -> dict[str, dict]:
    return {row["fact_id"]: row for row in frame.iter_rows(named=True)}


def test_nq_open_keeps_short_answers_with_aliases(hub_paths, well_formed):
    read = hub.nq_open(_local(hub_paths["nq_open"]), limit=100)
    facts = read.facts
    assert read.malformed is None
    well_formed(facts, "nq_open", {"open"})
    by_question = {row["question"]: row for row in _rows(facts).values()}
    assert set(by_question) == {
        "Who wrote the iliad?",
        "When did the first world war end?",
        "How many people live in lagos?",
        "Who sang the theme song?",
    }
    assert by_question["When did the first world war end?"]["answer_type"] == "year"
    assert by_question["When did the first world war end?"]["answer_aliases"] == ["11 November 1918"]
    lagos = by_question["How many people live in lagos?"]
    assert (lagos["answer"], lagos["answer_type"]) == ("15,388,000", "quantity")
    assert lagos["answer_aliases"] == ["15388000", "about fifteen million"]
    assert by_question["Who sang the theme song?"]["answer"] == "Jane Doe"
    assert by_question["Who wrote the iliad?"]["answer_aliases"] == []
    assert facts["fact_id"].equals(hub.nq_open(_local(hub_paths["nq_open"]), limit=100).facts["fact_id"])


def test_hub_limit_caps_the_rows_read(hub_paths):
    assert hub.nq_open(_local(hub_paths["nq_open"]), limit=2).facts.height == 2
    assert hub.popqa(_local(hub_paths["popqa"]), limit=1).facts.height == 1


def test_popqa_decodes_json_aliases_and_names_relations(hub_paths, well_formed):
    read = hub.popqa(_local(hub_paths["popqa"]), limit=100)
    facts = _rows(read.facts)
    assert read.malformed is None  # the rows whose subject or object reads as a missing value are no malformed ones
    well_formed(
        read.facts,
        "popqa",
        {"occupation", "place_of_birth", "father", "capital", "country", "performer", "capital_of"},
    )
    rankin = facts["popqa:4222362"]
    assert (rankin["subject"], rankin["relation"], rankin["answer"]) == ("George Rankin", "occupation", "politician")
    assert rankin["answer_aliases"] == ["pol"]
    bell = facts["popqa:1581540"]
    assert (bell["relation"], bell["answer_type"], bell["answer_aliases"]) == (
        "place_of_birth",
        "place",
        ["Auckland NZ"],
    )
    assert facts["popqa:2563911"]["answer_type"] == "person"
    assert "popqa:900002" not in facts  # answer longer than five words
    # another spelling a reader takes for the same answer: without the article, without the accents
    assert facts["popqa:900003"]["answer_aliases"] == ["USA", "United States"]
    assert facts["popqa:900004"]["answer_aliases"] == ["Beyonce"]
    assert facts["popqa:900004"]["question"] == "Who performed Halo?"  # as nq_open's and FaithEval's are written
    assert facts["popqa:900007"]["answer_aliases"] == []  # "An" opens the name: "Giang" is no answer


def test_faitheval_takes_the_keyed_choice(hub_paths, well_formed):
    read = hub.faitheval(_local(hub_paths["faitheval"]), limit=100)
    facts = read.facts
    assert read.malformed is None
    well_formed(facts, "faitheval", {"open"})
    rows = _rows(facts)
    assert set(rows) == {"faitheval:Mercury_7001", "faitheval:Mercury_7003"}
    assert rows["faitheval:Mercury_7001"]["answer"] == "oxygen"
    assert rows["faitheval:Mercury_7001"]["distractors"] == ["nitrogen", "carbon dioxide"]  # the other options
    assert rows["faitheval:Mercury_7003"]["answer_type"] == "year"


def test_build_with_every_source(hub_paths):
    params = FactsParams(
        sources=["geonames", "elements", "synthetic", "nq_open", "popqa", "faitheval"],
        synthetic_entities=20,
        split_weights={"train": 0.8, "validation": 0.1, "test": 0.1},
        hub_limit=100,
    )
    table = pl.from_arrow(build_facts(params, 5, hub_paths=hub_paths))
    assert set(table["source"]) == set(params.sources)
    # PopQA repeats geonames' question about France with the same answer: one copy is kept
    france = table.filter(pl.col("question") == "What is the capital of France?")
    assert france["fact_id"].to_list() == ["geonames:capital:FR"]
    assert table.equals(pl.from_arrow(build_facts(params, 5, hub_paths=hub_paths)))


def test_the_manifest_records_where_the_hub_sources_were_read(hub_paths, tmp_path):
    params = FactsParams(
        sources=["elements", "synthetic", "nq_open", "popqa"],
        synthetic_entities=20,
        split_weights={"train": 0.8, "validation": 0.1, "test": 0.1},
        hub_limit=100,
    )
    write_facts(build_facts(params, 5, hub_paths=hub_paths), tmp_path / "facts")
    episodes = EpisodesParams(train=64, validation=16, test=16, workers=1, shard_rows=64, row_group_rows=16)
    manifest = build_episodes(tmp_path / "facts", tmp_path / "episodes", episodes, 5)
    local = {name: {"path": hub_paths[name], "commit": None} for name in ("nq_open", "popqa")}
    assert json.loads((tmp_path / "facts" / "summary.json").read_text())["hub_sources"] == local
    # The manifest is published: a local copy is named as one, without the builder's path.
    assert manifest.hub_sources == dict.fromkeys(local, {"path": None, "commit": None})


def test_one_short_wrong_option_never_outvotes_the_truth(tmp_path):
    """A FaithEval question whose other options but one run past five words leaves its fact one wrong answer of its
    own: the four corrupt documents of an adversarial episode claimed it four times, as often as the truth was stated
    (a build of such facts failed validation). Such a fact draws its wrong claims from its kind's answers instead."""
    long = "an option that runs to far more than five words"
    words = [
        a + b for a in "bcdfghjk" for b in ("ol", "an", "ur", "ix", "em", "ot", "ap", "ug")
    ]  # no digits: not numbers
    questions = [
        (f"Mercury_{i}", f"Which item is listed as number {i}?", [f"{words[i]}", f"{words[i]}ia", long], "A")
        for i in range(60)
    ]
    folder = write_faitheval(tmp_path / "hub", questions)
    params = FactsParams(
        sources=["faitheval"],
        synthetic_entities=1,
        split_weights={"train": 0.6, "validation": 0.2, "test": 0.2},
        hub_limit=100,
    )
    facts = build_facts(params, 5, hub_paths={"faitheval": folder})
    assert pl.from_arrow(facts)["distractors"].list.len().max() == 1
    write_facts(facts, tmp_path / "facts")
    episodes = EpisodesParams(train=512, validation=128, test=128, workers=1, shard_rows=512, row_group_rows=64)
    build_episodes(tmp_path / "facts", tmp_path / "episodes", episodes, 5)
    metrics = validate(tmp_path / "episodes")
    assert metrics["task"]["adversarial"] > 100
    assert not any(metrics["violations"].values()), metrics["violation_examples"]


def test_the_stage_reads_a_hub_source_from_the_folder_its_params_name(hub_paths, tmp_path, monkeypatch):
    """facts.hub_paths points a Hub source at a local copy; the default id is never taken for a folder of the
    working directory (a folder "nq_open" there is not read)."""
    params = read_params(ROOT / "params.yaml")
    params["facts"] |= {"sources": ["elements", "nq_open"], "hub_paths": {"nq_open": hub_paths["nq_open"]}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    facts_main(tmp_path / "params.yaml", tmp_path / "facts")
    summary = json.loads((tmp_path / "facts" / "summary.json").read_text())
    assert summary["hub_sources"] == {"nq_open": {"path": hub_paths["nq_open"], "commit": None}}
    assert summary["by_source"]["nq_open"] == 4
    monkeypatch.chdir(tmp_path)
    (tmp_path / hub.NQ_OPEN).mkdir(parents=True)
    assert hub.locate("nq_open", None, "0" * 40) == hub.Location(hub.NQ_OPEN, "0" * 40)


def test_unreadable_or_misshapen_sources_name_the_problem(tmp_path, hub_paths):
    empty = tmp_path / "no data"
    empty.mkdir()
    with pytest.raises(hub.HubSourceError, match=r"facts\.hub_paths\.popqa: popqa could not be read from .*no data"):
        hub.popqa(_local(str(empty)), limit=10)
    with pytest.raises(hub.HubSourceError, match=r"Unknown split"):
        hub.popqa(_local(hub_paths["nq_open"]), limit=10)
    with pytest.raises(hub.HubSourceError, match=r"popqa at .* lacks the columns \['o_aliases', 'obj', 'possible"):
        hub.popqa(_local(hub_paths["faitheval"]), limit=10)


def _set_cell(shard: Path, column: str, row: int, value: object) -> None:
    """Rewrite one cell of a fixture's Parquet shard, its column keeping its type."""
    table = pq.read_table(shard)
    cells = table[column].to_pylist()
    cells[row] = value
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, pa.array(cells, table.schema.field(column).type)), shard)


def _popqa_python_list(root: Path) -> str:
    """Zoe Bell's possible_answers written as Python writes a list, not JSON (single quotes)."""
    folder = Path(write_popqa(root))
    tsv = folder / "test.tsv"
    tsv.write_text(tsv.read_text().replace('\t["Auckland", "Auckland NZ"]\n', "\t['Auckland', 'Auckland NZ']\n"))
    return str(folder)


def _popqa_reused_id(root: Path) -> str:
    """Halo's row with France's id: two facts under one fact_id, merged for whoever groups by it."""
    folder = Path(write_popqa(root))
    tsv = folder / "test.tsv"
    tsv.write_text(tsv.read_text().replace("\n900004\t", "\n900001\t"))
    return str(folder)


def _faitheval_null_choices(root: Path) -> str:
    folder = Path(write_faitheval(root))
    _set_cell(folder / "data" / "test-00000-of-00001.parquet", "choices", 2, None)
    return str(folder)


def _nq_open_null_answer(root: Path) -> str:
    folder = Path(write_nq_open(root))
    _set_cell(folder / "nq_open" / "train-00000-of-00001.parquet", "answer", 0, None)
    return str(folder)


@pytest.mark.parametrize(
    ("source", "write", "left_out", "read", "first"),
    [
        (
            "popqa",
            _popqa_python_list,
            "In what city was Zoe Bell born?",
            10,
            "test row 1 (id 1581540): possible_answers is not a JSON list: \"['Auckland', 'Auckland NZ']\"",
        ),
        ("popqa", _popqa_reused_id, "Who performed Halo?", 10, "test: popqa:900001 is the id of another question too"),
        (
            "faitheval",
            _faitheval_null_choices,
            "In what year did the bridge open?",
            8,
            "test row 2 (id 'Mercury_7003'): choices is not a mapping of label and text: None",
        ),
        (
            "nq_open",
            _nq_open_null_answer,
            "Who wrote the iliad?",
            6,
            "train row 0: answer is not a list of texts: None",
        ),
    ],
    ids=["popqa-python-list", "popqa-reused-id", "faitheval-null-choices", "nq_open-null-answer"],
)
def test_a_malformed_row_is_left_out_and_counted(tmp_path, hub_paths, source, write, left_out, read, first):
    """A real dataset with a bad row or two stays usable: the row is left out, and counted with the first named."""
    loader = hub.LOADERS[source]
    got = loader(_local(write(tmp_path)), 100)

    assert got.malformed == hub.Malformed(skipped=1, read=read, first=first)
    clean = loader(_local(hub_paths[source]), 100).facts
    expected = clean.filter(pl.col("question") != left_out)
    assert expected.height == clean.height - 1 and got.facts.equals(expected)


def test_the_stage_names_malformed_rows_in_its_summary_and_log_line(tmp_path, caplog):
    params = read_params(ROOT / "params.yaml")
    params["facts"] |= {"sources": ["elements", "popqa"], "hub_paths": {"popqa": _popqa_python_list(tmp_path)}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))

    with caplog.at_level("INFO", logger="pipeline.facts"):
        facts_main(tmp_path / "params.yaml", tmp_path / "facts")

    first = "test row 1 (id 1581540): possible_answers is not a JSON list: \"['Auckland', 'Auckland NZ']\""
    summary = json.loads((tmp_path / "facts" / "summary.json").read_text())
    assert summary["malformed_rows"] == {"popqa": {"skipped": 1, "read": 10, "first": first}}
    assert caplog.messages[-1].endswith(f" | popqa: 1 malformed of 10 rows left out (first: {first})")


def test_a_source_none_of_whose_rows_can_be_read_fails_the_stage_in_one_line(tmp_path):
    """Every row bad is another dataset's schema, not a few bad rows: here nq_open with answers as plain strings."""
    folder = tmp_path / "nq_open"
    (folder / "nq_open").mkdir(parents=True)
    rows = {"question": ["who wrote the iliad", "who painted the mona lisa"], "answer": ["Homer", "Leonardo"]}
    pq.write_table(pa.table(rows), folder / "nq_open" / "train-00000-of-00001.parquet")
    params = read_params(ROOT / "params.yaml")
    params["facts"] |= {"sources": ["elements", "nq_open"], "hub_paths": {"nq_open": str(folder)}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))

    with pytest.raises(SystemExit) as raised:
        facts_main(tmp_path / "params.yaml", tmp_path / "facts")

    assert str(raised.value) == (
        f"facts: nq_open at {str(folder)!r}: none of the 2 rows read is what its loader reads (first: train row 0: "
        "answer is not a list of texts: 'Homer'); name a copy of google-research-datasets/nq_open in "
        "facts.hub_paths, or remove nq_open from facts.sources"
    )
    assert not (tmp_path / "facts").exists()


def test_the_params_name_the_sources_the_loaders_read():
    assert tuple(hub.LOADERS) == tuple(hub.DEFAULT_PATHS) == HUB_SOURCES
    assert set(facts_loaders) == set(FACT_SOURCES) - set(HUB_SOURCES)


def test_a_revision_is_refused_for_a_local_folder_and_a_full_commit_needs_no_lookup(hub_paths):
    assert hub.locate("nq_open", hub_paths["nq_open"], None) == hub.Location(hub_paths["nq_open"], None)
    commit = "0123456789abcdef0123456789abcdef01234567"  # no Hub here: a lookup would fail
    assert hub.locate("nq_open", "acme/nq_open", commit) == hub.Location("acme/nq_open", commit)
    with pytest.raises(hub.HubSourceError, match=r"facts\.hub_revisions\.nq_open: 'v1' names a Hub revision, but"):
        hub.locate("nq_open", hub_paths["nq_open"], "v1")


def test_a_path_that_is_no_folder_and_no_hub_id_is_named_by_its_key(tmp_path):
    """A mistyped folder was looked up on the Hub, and the message blamed facts.sources ("remove it ... to build
    offline")."""
    for path in (str(tmp_path / "no-such-copy"), "./copies/PopQA", "a/b/c"):
        with pytest.raises(hub.HubSourceError) as err:
            hub.locate("popqa", path, None)
        assert str(err.value) == f"facts.hub_paths.popqa: {path!r} is no folder, and no Hub dataset id"


# build_facts in a child process: huggingface_hub reads HF_ENDPOINT (the stand-in) when it is imported.
_BUILD = """
import json, sys
from pipeline.facts import build_facts, summarise
from pipeline.params import FactsParams
table = build_facts(FactsParams(**json.loads(sys.argv[1])), 5, hub_paths={"nq_open": sys.argv[2]})
questions = [q for q, s in zip(table["question"].to_pylist(), table["source"].to_pylist()) if s == "nq_open"]
print(json.dumps({"hub_sources": summarise(table)["hub_sources"], "questions": sorted(questions)}))
"""


def _build_from_hub(
    hub_: HubStandin, home: Path, repo: str, offline: bool = False, **revisions: str
) -> subprocess.CompletedProcess:
    """build_facts reading `repo` at `revisions` with the Hub cache in `home` (offline: that cache alone)."""
    params = {
        "sources": ["elements", "nq_open"],
        "synthetic_entities": 1,
        "split_weights": {"train": 0.8, "validation": 0.1, "test": 0.1},
        "hub_limit": 100,
        "hub_revisions": revisions,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_ENDPOINT": hub_.endpoint, "HF_HOME": str(home), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"} if offline else {}
    cmd = [sys.executable, "-c", _BUILD, json.dumps(params), repo]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_a_hub_source_is_read_at_its_revision_and_the_commit_is_recorded(tmp_path):
    """v1 holds the fixture's questions; main has one more since. Each build names the commit it read."""
    folder = Path(write_nq_open(tmp_path))
    repo = "acme/nq_open"
    with hub_standin() as standin:
        api = publish(standin, folder, repo, tag="v1")
        shard = folder / "nq_open" / "train-00000-of-00001.parquet"
        rows = pq.read_table(shard).to_pylist() + [{"question": "who built the ark", "answer": ["Noah"]}]
        pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(shard)), shard)
        api.upload_folder(folder_path=folder, repo_id=repo, repo_type="dataset")
        v1, main = standin.resolve(repo, "v1"), standin.resolve(repo, "main")
        assert v1 != main

        built = {
            name: _build_from_hub(standin, tmp_path / name, repo, **revision)
            for name, revision in {"v1": {"nq_open": "v1"}, "sha": {"nq_open": v1}, "main": {}}.items()
        }
        missing = _build_from_hub(standin, tmp_path / "missing", repo, nq_open="v9")
        # Offline, a pinned commit is read from the cache only if that commit was fetched: the cache of "main"
        # holds newer rows, which a build pinned to v1 must not take for v1's.
        offline = {
            name: _build_from_hub(standin, tmp_path / name, repo, offline=True, nq_open=v1) for name in ("sha", "main")
        }

    read = {name: json.loads(result.stdout) for name, result in built.items() if not result.returncode}
    assert set(read) == set(built), {name: result.stderr[-2000:] for name, result in built.items()}
    assert read["v1"] == read["sha"]
    assert read["v1"]["hub_sources"] == {"nq_open": {"path": repo, "commit": v1}}
    assert read["main"]["hub_sources"] == {"nq_open": {"path": repo, "commit": main}}
    assert set(read["main"]["questions"]) - set(read["v1"]["questions"]) == {"Who built the ark?"}
    assert missing.returncode != 0
    assert json.loads(offline["sha"].stdout) == read["v1"], offline["sha"].stderr[-2000:]
    assert offline["main"].returncode != 0, offline["main"].stdout
    assert "HubSourceError: facts.sources: nq_open could not be read from 'acme/nq_open'" in offline["main"].stderr
    assert f"HubSourceError: facts.hub_revisions.nq_open: '{repo}' has no revision 'v9'" in missing.stderr
