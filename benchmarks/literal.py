"""A literal reading of the original spec's generator (data/corruption.py + data/generator.py), the benchmark baseline.

Python `random` per document and Faker where the spec calls it, one dict per row, then `pa.Table.from_pylist`: the
straightforward implementation the project's vectorised pipeline is measured against. Written for speed comparison
only; its rows fill EPISODE_SCHEMA so both sides write the same kind of file with the same writer.
"""

from __future__ import annotations

import random
import re

import pyarrow as pa
from faker import Faker

from pipeline.schema import CORRUPTION_LEVELS, EPISODE_SCHEMA, MAX_BUDGET, NUM_DOCS, TASKS

fake = Faker()
SOURCES = (
    "Encyclopedia Britannica",
    "Reuters Fact Check",
    "Associated Press",
    "BBC News",
    "National Geographic",
    "The Guardian",
    "Nature",
    "Smithsonian Magazine",
    "World Almanac",
    "Oxford Reference",
)
TEMPLATES = (
    "According to {source}, the answer to '{question}' is {answer}.",
    "{source} reports that {answer} is the answer to the question: {question}",
    "In a detailed overview, {source} explains that {answer} answers '{question}'.",
    "Q: {question} A: {answer} (source: {source})",
    "Records compiled by {source} show {answer} when asked: {question}",
)
_PAIRS = {
    "largest": "smallest",
    "first": "last",
    "highest": "lowest",
    "won": "lost",
    "north": "south",
    "east": "west",
    "oldest": "newest",
    "most": "least",
    "before": "after",
    "increased": "decreased",
}
ANTONYMS = {**_PAIRS, **{b: a for a, b in _PAIRS.items()}}
_NUMBER = re.compile(r"\b\d{4}\b|\b\d+\b")
_ANTONYM = re.compile(r"\b(" + "|".join(ANTONYMS) + r")\b", re.IGNORECASE)


def corrupt_number(text: str, answer: str) -> str:
    def shift(match: re.Match) -> str:
        value = int(match.group())
        if len(match.group()) == 4 and 1900 <= value <= 2030:
            return str(value + random.choice((-20, -10, -5, 5, 10, 20)))
        return str(int(value * random.choice((0.5, 2, 3, 5, 10))))

    if not _NUMBER.search(text):
        return text + " Note: this figure was later revised."
    return _NUMBER.sub(shift, text)


def corrupt_entity(text: str, answer: str) -> str:
    pools = {"country": fake.country, "city": fake.city, "person": fake.name, "organization": fake.company}
    category = "person" if len(answer.split()) == 2 else "organization" if " " in answer else "city"
    if answer in text:
        substitute = pools[category]()
        while substitute == answer:
            substitute = pools[category]()
        return text.replace(answer, substitute)
    return text + f" This was first reported by {fake.name()}."


def corrupt_inversion(text: str, answer: str) -> str:
    def flip(match: re.Match) -> str:
        word = match.group()
        other = ANTONYMS[word.lower()]
        return other.upper() if word.isupper() else other.title() if word.istitle() else other

    if not _ANTONYM.search(text):
        return text + " This contradicts the earlier scholarly consensus."
    return _ANTONYM.sub(flip, text)


def _generate_wrong_answer(answer: str) -> str:
    if any(ch.isdigit() for ch in answer):
        return _NUMBER.sub(lambda m: str(int(m.group()) + random.choice((-5, -2, -1, 1, 2, 5))), answer, count=1)
    words = answer.split()
    if len(words) == 1 and answer[:1].isupper():
        return fake.last_name()
    random.shuffle(words)
    return " ".join(words)


def corrupt_coherent(text: str, answer: str) -> str:
    wrong = _generate_wrong_answer(answer)
    year = random.randint(2005, 2023)
    return (
        f"{text.replace(answer, wrong)} A {year} review by {fake.name()} of the {fake.company()}, published in "
        f"the {random.choice(SOURCES)}, confirmed {wrong} after re-examining the primary records."
    )


LEVELS = (corrupt_number, corrupt_entity, corrupt_inversion, corrupt_coherent)


def corrupt_text(text: str, answer: str, level: int) -> str:
    try:
        return LEVELS[min(level, 4) - 1](text, answer)
    except Exception:
        return text + " (Some details in this account are disputed.)"


def generate_documents(fact: dict, num_docs: int = NUM_DOCS, corrupt_positions: list[int] | None = None) -> list:
    positions = corrupt_positions or []
    docs = []
    for index in range(num_docs):
        source = random.choice(SOURCES)
        text = random.choice(TEMPLATES).format(source=source, question=fact["question"], answer=fact["answer"])
        if index in positions:
            text = corrupt_text(text, fact["answer"], positions.index(index) + 1)
        docs.append(
            {
                "id": index,
                "title": f"{source}: {fact['question'][:60]}",
                "content": text,
                "is_corrupt": index in positions,
            }
        )
    return docs


def generate_episodes(facts: list[dict], first_id: int, count: int, split: str = "train") -> pa.Table:
    """`count` episodes as dicts, then one Arrow table: the row-at-a-time path end to end."""
    rows = []
    for episode_id in range(first_id, first_id + count):
        fact = random.choice(facts)
        corrupt = sorted(random.sample(range(NUM_DOCS), random.randint(1, len(TASKS))))
        docs = generate_documents(fact, corrupt_positions=corrupt)
        rank = {index: r for r, index in enumerate(corrupt)}
        rows.append(
            {
                "episode_id": episode_id,
                "split": split,
                "task": TASKS[len(corrupt) - 1],
                "question": fact["question"],
                "documents": [{"doc_id": d["id"], "title": d["title"], "content": d["content"]} for d in docs],
                "max_budget": MAX_BUDGET,
                "fact_id": fact["fact_id"],
                "source": fact["source"],
                "answer_type": fact["answer_type"],
                "answer": fact["answer"],
                "answer_aliases": fact["answer_aliases"],
                "corrupt_ids": corrupt,
                "doc_corruption": [CORRUPTION_LEVELS[rank[i]] if i in rank else "none" for i in range(NUM_DOCS)],
                "doc_claims": [None if i in rank else fact["answer"] for i in range(NUM_DOCS)],
            }
        )
    return pa.Table.from_pylist(rows, schema=EPISODE_SCHEMA)
