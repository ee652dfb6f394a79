import re
from collections import Counter

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline import documents, wording
from pipeline.corruption import MIN_COUNT_GAP, NEIGHBOUR_MAX_RATIO
from pipeline.episodes import generate_episodes
from pipeline.pools import build_pools
from pipeline.schema import CORRUPTION_LEVELS
from pipeline.sources import synthetic

# A cited year: "... in its 2011 survey" (the year in group 1).
CITED = r"\b(\d{4}) (?:" + "|".join(wording.REPORTS) + r")\b"

SEED = 99


@pytest.fixture(scope="module")
def docs(facts_dir) -> pl.DataFrame:
    """One row per document of 12,000 episodes: episode_id, answer_type, answer, its fact's relation and subject,
    title, content, claim, corrupt."""
    table = generate_episodes(
        pq.read_table(facts_dir / "facts.parquet"), build_pools(SEED), SEED, "train", np.arange(12_000)
    )
    return (
        pl.from_arrow(table)
        .join(
            pl.from_arrow(pq.read_table(facts_dir / "facts.parquet")).select("fact_id", "relation", "subject"),
            on="fact_id",
        )
        .select(
            "episode_id", "answer_type", "answer", "relation", "subject", "documents", "doc_corruption", "doc_claims"
        )
        .explode(["documents", "doc_corruption", "doc_claims"])
        .unnest("documents")
        .rename({"doc_claims": "claim"})
        .with_columns(corrupt=pl.col("doc_corruption") != "none")
    )


def _auc(score: np.ndarray, positive: np.ndarray) -> float:
    ranks = pl.Series(score).rank("average").to_numpy()
    n_pos, n_neg = positive.sum(), (~positive).sum()
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def test_kinds_share_sources_authorities_and_lengths(docs):
    """Per kind, the named authority, the claim sentence and the length follow the distribution of the clean documents
    beside them (a count's documents, clean or not, may cite a statistics office: FIGURE_BODIES)."""
    bodies = "(" + "|".join(re.escape(body) for body in wording.BODY_NAMES) + ")"
    frames = docs.with_columns(
        body=pl.col("content").str.extract(bodies),
        sentences=pl.col("content").str.count_matches(r"[.;]( |$)"),
        chars=pl.col("content").str.len_chars(),
    )
    assert frames["body"].null_count() == 0
    for kind in CORRUPTION_LEVELS:
        some = frames.filter(pl.col("doc_corruption") == kind)
        clean = frames.filter(~pl.col("corrupt") & pl.col("episode_id").is_in(some["episode_id"].implode()))
        for column in ("body", "sentences"):
            rates = [part[column].value_counts(normalize=True).sort(column) for part in (clean, some)]
            joined = rates[0].join(rates[1], on=column, how="full", coalesce=True).fill_null(0)
            assert (joined["proportion"] - joined["proportion_right"]).abs().sum() / 2 < 0.08, (kind, column)
        assert abs(some["chars"].mean() / clean["chars"].mean() - 1) < 0.05, kind


def test_documents_are_well_formed(docs):
    for text in docs["content"].to_list() + docs["title"].to_list():
        assert text and text == text.strip() and "  " not in text and "{" not in text
    contents = docs["content"].to_list()
    templates = [*wording.GENERIC_CLAUSES, *wording.OPEN_CLAUSES, *wording.CORROBORATIONS]
    templates += [t for family in wording.RELATION_CLAUSES.values() for t in family] + list(wording.FRAMES)
    first_words = {t.split()[0] for t in templates if t[0].islower()}
    assert not [t for t in contents if t.split()[0] in first_words]  # every sentence opening is capitalised
    assert all(t.endswith((".", ")")) for t in contents)
    assert docs["content"].n_unique() > 0.95 * len(docs)
    assert docs["title"].n_unique() > 1000


def test_no_single_document_cue_tells_corrupt_from_clean(docs):
    """Length, title length and a bag-of-words model (naive Bayes, held-out episodes) stay near chance."""
    corrupt = docs["corrupt"].to_numpy()
    assert 0.45 < _auc(docs["content"].str.len_chars().to_numpy(), corrupt) < 0.55
    assert 0.45 < _auc(docs["title"].str.len_chars().to_numpy(), corrupt) < 0.55
    tokens = (docs["title"] + " " + docs["content"]).str.to_lowercase().str.extract_all(r"[a-z0-9]+").list.unique()
    doc = np.repeat(np.arange(len(tokens)), tokens.list.len().to_numpy())
    vocab, token = np.unique(tokens.explode().to_numpy().astype(str), return_inverse=True)
    train = docs["episode_id"].to_numpy() % 4 != 0
    seen_corrupt = np.bincount(token, weights=(train & corrupt)[doc], minlength=len(vocab)) + 1
    seen_clean = np.bincount(token, weights=(train & ~corrupt)[doc], minlength=len(vocab)) + 1
    p_corrupt, p_clean = seen_corrupt / ((train & corrupt).sum() + 2), seen_clean / ((train & ~corrupt).sum() + 2)
    weight = np.log(p_corrupt / p_clean) - np.log((1 - p_corrupt) / (1 - p_clean))
    score = np.bincount(doc, weights=weight[token], minlength=len(tokens))
    assert _auc(score[~train], corrupt[~train]) < 0.6


def _asserted_and_denied(docs: pl.DataFrame) -> pl.DataFrame:
    """The documents whose answer is a number, with the number each asserts and the one it denies."""
    number = r"\d[\d,]*(?:\.\d+)?"
    read = pl.element().str.replace_all(",", "").cast(pl.Float64)
    numbers = docs.filter(pl.col("answer_type").is_in(["year", "quantity"])).with_columns(
        asserted=pl.col("claim").str.extract(f"({number})").str.replace_all(",", "").cast(pl.Float64),
        named=pl.col("content").str.replace_all(CITED, "").str.extract_all(number).list.eval(read).list.unique(),
    )
    numbers = numbers.with_columns(denied=pl.col("named").list.set_difference(pl.concat_list("asserted")))
    assert (numbers["denied"].list.len() == 1).all()
    return numbers.with_columns(pl.col("denied").list.first())


def test_no_document_but_an_inversion_denies_a_count_near_the_truth(docs):
    """A corrupt document denying 361,702 residents where 355,657 live denied the truth in all but name, as no clean
    document's denial did: every wrong count keeps MIN_COUNT_GAP from the truth, denied as claimed."""
    truth = pl.col("answer").str.replace_all(",", "").cast(pl.Float64)
    counts = _asserted_and_denied(docs).filter(
        (pl.col("answer_type") == "quantity") & (pl.col("doc_corruption") != "inversion") & (truth >= 1000)
    )
    near = counts.filter((pl.col("denied") - truth).abs() < MIN_COUNT_GAP * truth)
    assert counts["corrupt"].sum() > 100 and near.height == 0, near.select("answer", "claim", "denied").head()


def test_a_neighbour_of_a_count_stays_within_a_few_times_the_truth(docs):
    """China's population claimed as 98,423,595, Indonesia's as India's 1,352,617,328: a neighbour by rank where
    answers are sparse lay far off in value. An entity claim, an inversion's claim and a clean document's denied value
    fall back to a near miss there (an entity claim's recorded as `number`). Not below 10: an episode's eight denied
    values differ, and lithium's 3 has eight others within 3x, so a near miss may widen past (3 denied as 10)."""
    truth = pl.col("answer").str.replace_all(",", "").cast(pl.Float64)
    counts = (
        _asserted_and_denied(docs)
        .filter((pl.col("answer_type") == "quantity") & (truth >= 10))
        .with_columns(ratio=pl.col("asserted") / truth, denied_ratio=pl.col("denied") / truth)
    )
    for kind, ratio in (("entity", "ratio"), ("inversion", "ratio"), ("none", "denied_ratio")):
        of_kind = counts.filter(pl.col("doc_corruption") == kind)[ratio]
        assert len(of_kind) > 100, kind
        assert of_kind.is_between(1 / NEIGHBOUR_MAX_RATIO, NEIGHBOUR_MAX_RATIO).all(), (kind, of_kind.max())
        assert (of_kind - 1).abs().max() > 0.5, kind  # still other true answers, not only near misses


def test_no_two_documents_of_an_episode_deny_one_number(docs):
    """An episode's clean documents draw their denied values around the one truth: they denied the same year often
    (66% of birth years' clean documents, 12% of the corrupt ones), which told them apart without the fact."""
    numbers = _asserted_and_denied(docs)
    denials = numbers.group_by("episode_id").agg(pl.col("denied").n_unique() == pl.len())
    assert numbers.height > 1000 and denials["denied"].all(), denials.filter(~pl.col("denied")).head()


def test_a_document_denies_a_number_near_the_one_it_asserts(docs):
    """Inversions deny the true number and assert a true answer of the relation near it; every other document denies
    such a neighbour of the number it asserts, so a denial reads like a real dispute (76 employees were once denied
    where 88,400 work).

    Neither the gap between the two numbers, its direction, which of the two is written more precisely, nor a digit
    swap (once a tell: 1987 denied, 1978 asserted) marks a document as corrupt.
    """
    numbers = _asserted_and_denied(docs)
    asserted, denied = numbers["asserted"].to_numpy(), numbers["denied"].to_numpy()
    year, corrupt = (numbers["answer_type"] == "year").to_numpy(), numbers["corrupt"].to_numpy()
    assert min((year & corrupt).sum(), (~year & corrupt).sum()) > 50
    gap = np.where(year, denied - asserted, np.log(np.maximum(denied, 0.5) / np.maximum(asserted, 0.5)))
    assert (np.abs(gap[year]) <= 20).mean() > 0.95
    figures = [
        np.array([len(f"{v:.6f}".replace(".", "").strip("0")) for v in values]) for values in (asserted, denied)
    ]
    finer = np.sign(figures[1] - figures[0])
    for kind in (year, ~year):
        for cue in (np.abs(gap), gap, finer):
            assert 0.4 < _auc(cue[kind], corrupt[kind]) < 0.6
    text = numbers.select(pl.col("denied").cast(pl.Int64).cast(pl.String), "claim").rows()
    swapped = np.array([a != b and sorted(a) == sorted(b) for a, b in text]) & year
    assert swapped[corrupt].mean() < 0.1 and swapped[~corrupt].mean() < 0.1


def _corroborations(content: str, kind: tuple[str, ...]) -> int:
    marks = [max(re.split(r"\{\w+\}", template), key=len).strip() for template in kind]  # its longest wording
    return sum(content.count(mark) for mark in marks)


def test_a_document_never_corroborates_twice_in_the_same_way(docs):
    """Two corroborations are one that the record has stood (for a count that changes from year to year, what the
    report gave) and one that another check agrees; a report of the last citable year has had no later release."""
    standing = docs["content"].map_elements(lambda c: _corroborations(c, wording.STANDING), return_dtype=int)
    as_of = docs["content"].map_elements(lambda c: _corroborations(c, wording.AS_OF), return_dtype=int)
    checks = docs["content"].map_elements(lambda c: _corroborations(c, wording.CHECKS), return_dtype=int)
    assert standing.max() == 1 and as_of.max() == 1 and checks.max() == 1
    assert ((standing == 1) & (checks == 1)).sum() > 1000 and ((as_of == 1) & (checks == 1)).sum() > 100
    varying = docs["relation"].is_in(wording.VARYING)
    assert standing.filter(varying).max() == 0 and as_of.filter(~varying).max() == 0
    last = wording.LAST_CITED_YEAR
    assert docs["content"].str.contains(f" {last} ").sum() > 100
    assert not docs.filter(
        pl.col("content").str.contains(f" {last} ")
        & pl.col("content").str.contains("Later releases of the|in every edition since")
    ).height


def test_wording_tables_fit_the_renderer():
    for family in wording.FILLERS.values():
        assert len(family) in (5, 7, 11, 13)  # prime: start + j * step visits distinct sentences
    # Walked per episode (`_walk`): prime sizes, claim sentences and bodies at least one for each document.
    assert len(wording.FRAMES) in (11, 13)
    for kind in (wording.STANDING, wording.CHECKS, wording.AS_OF, wording.STANDING_NOW):
        assert len(kind) in (1, 2, 3, 5, 7)
    assert {len(names) for names in documents._BODY_GROUPS} <= {11, 13, 17}
    # Prime sizes, at least the documents of an episode that may take the family: distinct titles (`_walk`).
    for genre, names in wording.SOURCES.items():
        assert len(wording.TITLES[genre]) in (7, 11, 13) and len(wording.TITLES[genre]) >= len(names)
    assert len(wording.TITLES["question"]) >= documents.NUM_DOCS
    assert (
        len({title for titles in wording.TITLES.values() for title in titles})
        == sum(len(titles) for titles in wording.TITLES.values()) - 2
    )  # "Re: {q}" and "{q} (answered)" are both a forum's and a question's
    assert set(wording.TITLES) == {*wording.SOURCES, "question"}
    assert wording.NAMED_VALUES <= set(wording.RELATION_CLAUSES)
    # Every source is drawn for every topic: none may be a work on places alone ("World Places Gazetteer" on a person).
    assert not [name for names in wording.SOURCES.values() for name in names if re.search(r"Gazetteer|Atlas", name)]
    assert all(wording.FRAMES)


def test_an_episode_cites_distinct_sources_each_equally_often():
    """Eight outlets, never one twice; every source as likely at every position (uniform 8-permutations of 30)."""
    u = np.random.default_rng(3).random(24_000 * documents.NUM_DOCS)
    source = documents._sources(u).reshape(-1, documents.NUM_DOCS)
    sources = len(documents._SOURCES)
    assert source.min() == 0 and source.max() == sources - 1
    assert all(len(set(row)) == documents.NUM_DOCS for row in source.tolist())
    counts = np.stack([np.bincount(column, minlength=sources) for column in source.T])
    expected = len(source) / sources
    assert np.abs(counts - expected).max() < 5 * np.sqrt(expected)


def test_an_episode_never_repeats_a_title():
    """Documents of one genre take distinct styles of it; every style of a genre is drawn about equally often."""
    n = 24_000
    rng = np.random.default_rng(4)
    genre = rng.integers(0, len(wording.TITLES), (n // 4, documents.NUM_DOCS))  # many repeats of a genre
    one = np.full((n // 4, documents.NUM_DOCS), tuple(wording.TITLES).index("question"))  # all eight the same
    family = np.concatenate([genre, one]).ravel()
    title = documents._walk(documents._TITLES, family, rng.random(len(family))).reshape(-1, documents.NUM_DOCS)
    assert all(len(set(row)) == documents.NUM_DOCS for row in title.tolist())
    start, count = documents._TITLES.start[family], documents._TITLES.count[family]
    assert ((title.ravel() >= start) & (title.ravel() < start + count)).all()
    question = np.bincount(title[len(genre) :].ravel())
    question = question[question > 0]
    assert len(question) == len(wording.TITLES["question"])
    assert question.max() / question.min() < 1.15


def test_topics_name_families_and_labels():
    relation = pl.Series(["capital", "place_of_birth", "open", "symbol_element", "capital_of"])
    family, domain, label = documents.topics(relation, np.array([False, False, False, True, False]))
    assert family[2] == family[3] == documents.OPEN_FAMILY and family[0] != family[1] != documents.OPEN_FAMILY
    assert label.to_list() == ["capital", "place of birth", "answer", "meaning", "capital status"]
    assert domain[2] == domain[3] == list(wording.FILLERS).index("question")


def _rendered(
    relation: str, subject: str, claim: str, decoy: str, answer: str | None = None, n: int = 600, fact_id: str = "f"
):
    """Title and content ("title\\ncontent") of n documents about one fact, under n draws of the style columns."""
    family, domain, label = documents.topics(pl.Series([relation] * n), np.zeros(n, dtype=bool))
    title, content = documents.render(
        documents.Batch(
            about=documents.about(
                pl.Series([subject] * n),
                pl.Series(["What does this fact answer?"] * n),
                label,
                pl.Series([relation] * n),
            ),
            answer=pl.Series([claim if answer is None else answer] * n),
            claim=pl.Series([claim] * n),
            decoy=pl.Series([decoy] * n),
            family=family,
            domain=domain,
            cited=documents.cited_years(
                pl.DataFrame({"relation": relation, "fact_id": fact_id, "question": "Q?", "answer": claim})
            ).repeat(n, axis=0),
            u=np.random.default_rng(5).random((n, len(documents.U))),
        )
    )
    return [f"{t}\n{c}" for t, c in zip(title.to_pylist(), content.to_pylist(), strict=True)]


def test_country_fillers_hold_for_territories_and_city_states():
    """55 country subjects are territories (Norfolk Island): none is called a sovereign state or a country."""
    for filler in wording.FILLERS["country"]:
        assert not re.search(r"sovereign|diplomatic|\bcountry\b|region to region", filler), filler
    texts = _rendered("capital", "Norfolk Island", "Kingston", "Avarua")
    assert not any(re.search(r"sovereign state|diplomatic relations", text) for text in texts)
    continents = _rendered("continent", "Norfolk Island", "Oceania", "Asia")
    assert not any(re.search(r"\bcountry\b", text) for text in continents)
    assert any("the territory of Norfolk Island is part of Oceania" in text for text in continents)


def test_possessives_of_names_ending_in_s_take_the_apostrophe_alone():
    """AP style: "Moore Foods' founder", "Iran's capital"; never "Foods's"."""
    foods = _rendered("founder", "Warner and Moore Foods", "Ann Lee", "Bo Ray")
    assert not any("Foods's" in text for text in foods)
    assert any("Warner and Moore Foods' founder is" in text for text in foods)
    iran = _rendered("capital", "Iran", "Tehran", "Kabul")
    assert any("Iran's capital" in text for text in iran) and not any("Iran' " in text for text in iran)
    names = pl.DataFrame({"name": ["Moore Foods", "Iran", "Ann Jones"]})
    assert names.select(documents.possessive(pl.col("name"))).to_series().to_list() == [
        "Moore Foods'",
        "Iran's",
        "Ann Jones'",
    ]


def test_a_symbol_is_never_written_about_as_an_element():
    """symbol_element documents ("Which element has the symbol Pt?") read "the element with the symbol Pt is
    platinum", never "the element of Pt", "Pt's element" or "Pt is one of the chemical elements"."""
    texts = _rendered("symbol_element", "Pt", "platinum", "lanthanum")
    wrong = [filler.replace("{s}", "Pt") for filler in wording.FILLERS["element"]]
    wrong += ["element of Pt", "Pt's", "Pt is one of the chemical", "discovery of Pt", "properties of Pt"]
    assert not [text for text in texts if any(w in text for w in wrong)]
    assert all("platinum" in text for text in texts)
    assert any("the element with the symbol Pt is platinum" in text for text in texts)
    assert any(f.replace("{s}", "Pt") in text for text in texts for f in wording.FILLERS["symbol"])


def test_a_title_names_a_symbol_as_a_symbol():
    """ "Notes on Ra", "Cf: the facts behind the headlines", "Does anyone know the meaning of Cf?" read as no topic:
    every title style names a symbol "the symbol Ra" (TITLE_PREFIXES), whatever the document claims, and never the
    element; other subjects stay as they are ("Notes on iron")."""
    titles = {text.split("\n", 1)[0] for text in _rendered("symbol_element", "Ra", "radium", "radon", n=3000)}
    styles = [documents._capitalized(style) for genre, styles in wording.TITLES.items() for style in styles]
    fixed = [style for style in styles if not re.search(r"\{(src|q)\}", style)]
    forms = {"t": "the symbol Ra", "T": "The symbol Ra", "label": "meaning", "Label": "Meaning"}
    assert {style.format(**forms) for style in fixed} <= titles and len(fixed) > 25
    assert not [title for title in titles if re.search(r"(?<!symbol )\bRa\b|radium", title)]
    assert "Record: meaning of the symbol Ra" in titles  # not "Meaning record for the symbol Ra"
    iron = {text.split("\n", 1)[0] for text in _rendered("atomic_number", "iron", "26", "27")}
    assert {"Notes on iron", "Iron in focus"} <= iron and not [title for title in iron if "symbol" in title]


def test_element_names_are_lower_case_but_open_sentences_and_titles_capitalised():
    """ "the atomic number of iron"; "Iron has ..." where the name opens a sentence or a title."""
    texts = _rendered("atomic_number", "iron", "26", "27")
    assert not [text for text in texts if re.search(r"(?m)(^|[.;!?] |— )iron\b", text.split("\n", 1)[1])]
    assert not [text for text in texts if text.startswith("iron")]
    assert any(re.search(r"(?m)^Iron\b|\. Iron\b", text) for text in texts)
    assert any(re.search(r"[a-z] iron\b", text) for text in texts)


def test_a_count_is_never_cited_as_a_year():
    """A corrupt document claiming 2,130 employees where 2,000 is true once cited a "2000 review": the true count.
    Head counts are cited from 2024 to 2026, so one of 2,025 leaves two years."""
    texts = _rendered("employees", "Moore Foods", "2,130", "2,026", answer="2,025", n=3000)
    years = {int(y) for text in texts for y in re.findall(CITED, text)}
    assert years == {2024}
    texts = _rendered("atomic_number", "iron", "2,018", "2,021", answer="2,019", n=3000)  # cited 2017-2026
    years = {int(y) for text in texts for y in re.findall(CITED, text)}
    assert years == set(range(2017, 2027)) - {2018, 2019, 2021}


def test_atomic_masses_are_not_called_standard_atomic_weights():
    """34 elements (Tc, Pm, Am, ...) have no standard atomic weight; every element has an atomic mass."""
    texts = _rendered("atomic_mass", "americium", "243", "244")
    assert any("atomic mass" in text for text in texts)
    assert not any("standard atomic" in text for text in texts)
    assert not any("standard" in clause for clause in wording.RELATION_CLAUSES["atomic_mass"])


@pytest.mark.parametrize(
    ("answer", "claim", "decoy"), [("2024", "2024", "2011"), ("1990", "1979", "2025"), ("2020", "2005", "2010")]
)
def test_a_year_is_cited_from_a_report_after_every_year_the_document_names(answer, claim, decoy):
    """A 2006 report cannot state a 2007 founding: the cited year follows the claim and the denied year, up to
    LAST_CITED_YEAR (so a 2024 founding still has later reports to cite). The answer a corrupt document does not name
    neither bounds it (that would show the truth) nor is cited."""
    texts = _rendered("founded_year", "Moore Foods", claim, decoy, answer)
    years = {int(y) for text in texts for y in re.findall(CITED, text)}
    latest = max(int(claim), int(decoy))
    assert years == set(range(latest + 1, wording.LAST_CITED_YEAR + 1)) - {int(answer)}


@pytest.mark.parametrize(
    "relation",
    ["currency", "capital", "population", "city_country", "symbol_element", "employer", "occupation", "headquarters"],
)
def test_a_fact_is_cited_from_its_datas_time_on(relation):
    """Estonia's euro (2011) is not quoted from a 1994 bulletin, nor a 2018 population from a 2026 yearbook: the
    real-world relations cite their years (CITED_SINCE to CITED_UNTIL, else LAST_CITED_YEAR), the fictional ones
    FIRST_CITED_YEAR's CITED_YEARS."""
    texts = _rendered(relation, "Estonia", "Euro", "Australian Dollar")
    years = {int(y) for text in texts for y in re.findall(CITED, text)}
    first = wording.CITED_SINCE.get(relation)
    last = wording.CITED_UNTIL.get(relation, wording.LAST_CITED_YEAR)
    last = last if first else wording.FIRST_CITED_YEAR + wording.CITED_YEARS - 1
    assert years == set(range(first or wording.FIRST_CITED_YEAR, last + 1))
    assert set(wording.CITED_SINCE) <= set(wording.RELATION_CLAUSES)


def test_no_document_names_the_occupation_of_a_child_or_a_company_before_its_founding():
    """A 1990 white paper gave Ruben Wilkinson's occupation; he was born in 1980. A 1996 handbook named the founder of
    a company founded in 2015. Bounds by relation, from the youngest person and the last company founded."""
    youngest = synthetic.BIRTH_YEARS[1] - 1
    last_founded = youngest + synthetic.FOUNDER_AGE[1] - 1
    for relation, since in [("occupation", youngest + 17), ("birthplace", youngest + 17)] + [
        (relation, last_founded) for relation in ("employer", "founder", "headquarters", "employees")
    ]:
        assert wording.CITED_SINCE[relation] == since, relation
        texts = _rendered(relation, "Ruben Wilkinson", "Geologist", "Actuary")
        assert min(int(y) for text in texts for y in re.findall(CITED, text)) == since, relation


def test_a_value_that_ends_in_a_stop_ends_its_sentence():
    """ "Washington, D.C." closes a sentence with its own stop, not "D.C.."; "Wait..." keeps its three dots."""
    texts = _rendered("capital", "the United States", "Washington, D.C.", "Wait...")
    assert not any(re.search(r"[.!?]\.(\s|$)", text.replace("Wait...", "")) for text in texts)
    assert all("Washington, D.C." in text for text in texts)
    assert sum("Wait..." in text for text in texts) > 100


def test_a_lower_case_value_never_opens_a_sentence():
    """PopQA's occupations are lower case ("politician"): its claims and denied values stay inside their sentences,
    while a capitalised one ("Politician") still opens some."""
    for claim, decoy, opens in (("politician", "lawyer", False), ("Politician", "Lawyer", True)):
        texts = _rendered("occupation", "George Rankin", claim, decoy)
        opening = [t for t in texts if re.search(rf"(^|\n|[.!?] )({claim}|{decoy})\b", t)]
        assert bool(opening) == opens, opening[:1]


def test_a_fact_changed_since_its_data_is_cited_from_the_change_on():
    """Bulgaria's euro (2026) is quoted from no 2024 bulletin, though other currencies are."""
    texts = _rendered("currency", "Bulgaria", "Euro", "Bulgarian Lev", fact_id="geonames:currency:BG")
    assert {int(y) for text in texts for y in re.findall(CITED, text)} == {2026}


def test_no_cited_year_gives_a_fictional_entitys_other_facts_away(docs, facts_dir):
    """Facts are split by fact_id: were the years cited about a company bounded by its founding, the earliest report
    about it in train would give away a held-out founding year. Its documents cite from the year the last company was
    founded, whatever its own: none predates the founding, and the years say nothing of it."""
    facts = pl.read_parquet(facts_dir / "facts.parquet")
    founded = facts.filter(pl.col("relation") == "founded_year").select("subject", founded=pl.col("answer").cast(int))
    about = docs.filter(pl.col("relation").is_in(["headquarters", "employees", "founder"])).join(founded, on="subject")
    cited = about.select(
        "founded", year=pl.col("content").str.extract(r"\b(\d{4}) (?:" + "|".join(wording.REPORTS) + ")").cast(int)
    ).drop_nulls()
    assert cited.height > 1000
    assert (cited["year"] >= cited["founded"]).all() and cited["year"].min() == wording.CITED_SINCE["founder"]
    assert abs(np.corrcoef(cited["year"], cited["founded"])[0, 1]) < 0.1  # with a founding bound they rise together


def test_cited_years_of_year_documents_follow_the_years_they_name(docs):
    """A report comes after the years it states; its bound is the document's own, not the episode's (whose years
    cluster around the truth and would say where a document's claim stands among the others')."""
    year = docs.filter(pl.col("answer_type") == "year")
    assert year.height > 100
    below_others = 0
    for _, episode in year.group_by("episode_id"):
        contents = episode["content"].to_list()
        named = [[int(y) for y in re.findall(r"\b\d{4}\b", re.sub(CITED, "", c))] for c in contents]
        cited = [int(y) for c in contents for y in re.findall(CITED, c)]
        assert all(c > max(n) for c, n in zip(cited, named, strict=True)), contents
        below_others += sum(c < max(map(max, named)) for c in cited)
    assert below_others > 0


def test_no_document_cites_a_year_its_episode_claims_or_denies(docs):
    citations = 0
    for _, episode in docs.group_by("episode_id"):
        values = {v.replace(",", "") for v in episode["claim"].to_list()}
        cited = {y for content in episode["content"].to_list() for y in re.findall(CITED, content)}
        assert not cited & values, (cited & values, episode["episode_id"][0])
        citations += len(cited)
    assert citations > docs["episode_id"].n_unique()  # the pattern still finds the citations it checks


def test_a_country_takes_its_article_where_it_names_a_citys_country():
    """ "one of the cities of the Philippines", "The Philippines is the country ...", but "of Brazil"; the claim itself
    stays bare, so a document still contains it verbatim."""
    texts = _rendered("city_country", "Angono", "Philippines", "Brazil")
    named = [text for text in texts if "Philippines" in text]
    assert len(named) == len(texts)
    assert not any(re.search(r"(?<!the )(?<!The )Philippines", text) for text in texts)
    assert any(re.search(r"(^|[.:;] )The Philippines", text, re.M) for text in texts)
    assert not any(re.search(r"\b[Tt]he Brazil", text) for text in texts)
    others = _rendered("capital", "France", "Paris", "Lyon")  # only a city's country takes an article
    assert not any(re.search(r"\b[Tt]he (Paris|Lyon)", text) for text in others)


STATISTICS = wording.FIGURE_BODIES[0]


@pytest.mark.parametrize(
    ("relation", "subject", "claim", "decoy", "domain", "figures", "foreign"),
    [
        ("founder", "Moore Foods", "Ann Lee", "Bo Ray", "company", False, STATISTICS),
        ("employees", "Moore Foods", "1,200", "950", "company", True, "Council for Scientific Data"),
        ("atomic_number", "iron", "26", "27", "element", False, "Central Registry of Companies"),
        ("occupation", "Ann Lee", "Geologist", "Nurse", "person", False, "Laboratory for Physical Constants"),
        ("city_population", "Lyon", "513,275", "480,000", "city", True, "Bureau of Civil Records"),
        ("capital", "France", "Paris", "Lyon", "country", False, STATISTICS),
    ],
)
def test_a_document_cites_a_body_that_keeps_records_of_its_topic(
    relation, subject, claim, decoy, domain, figures, foreign
):
    """A registry of companies vouches for a founder, never for an atomic number, and a statistics office for a
    company's head count, never for its founder; each topic's bodies all occur."""
    kept = wording.BODIES[domain] + (wording.FIGURE_BODIES if figures else ())
    texts = _rendered(relation, subject, claim, decoy)
    named = [[body for body in kept if body in text] for text in texts]
    assert all(named), [text for text, bodies in zip(texts, named, strict=True) if not bodies][:2]
    assert {body for bodies in named for body in bodies} == set(kept)
    assert foreign not in kept and not any(foreign in text for text in texts)
    yearbooks = sum(report in text for text in texts for report in wording.FIGURE_REPORTS)
    assert (yearbooks > 0) == figures, yearbooks


def _templates_used(docs: pl.DataFrame, templates: tuple[str, ...]) -> pl.Series:
    """Per document, the indices of the templates its content holds (what each renders to, every field any text)."""
    patterns = [".+?".join(map(re.escape, re.split(r"\{\w+\}", template))) for template in templates]
    found = docs.select(
        pl.concat_list(
            pl.when(pl.col("content").str.contains(pattern)).then(pl.lit([i])).otherwise(pl.lit([], pl.List(pl.Int32)))
            for i, pattern in enumerate(patterns)
        )
    )
    return found.to_series()


def test_an_episode_takes_a_different_claim_sentence_in_each_document(docs):
    """Eight outlets do not share one sentence's shape: an episode's documents take eight of the eleven claim
    sentences, each sentence as often as any other (within a tenth) and a document's own sentence whatever its kind."""
    used = _templates_used(docs, wording.FRAMES)
    assert (used.list.len() == 1).all()
    frames = docs.with_columns(frame=used.list.first())
    assert (frames.group_by("episode_id").agg(pl.col("frame").n_unique())["frame"] == documents.NUM_DOCS).all()
    for part in (frames, frames.filter("corrupt")):
        shares = part["frame"].value_counts(normalize=True)["proportion"]
        assert len(shares) == len(wording.FRAMES)
        assert (shares - 1 / len(wording.FRAMES)).abs().max() < 0.1 / len(wording.FRAMES)


def test_an_episode_repeats_no_corroboration_while_its_kind_has_more(docs):
    """Eight outlets do not each add "Cross-checks against the archives ... also point to": an episode's
    corroborations of one kind all differ while the kind has sentences enough (five each, for about four)."""
    fits = 0
    for kind in (wording.STANDING, wording.CHECKS, wording.AS_OF):
        used = (
            docs.with_columns(taken=_templates_used(docs, kind))
            .group_by("episode_id")
            .agg(pl.col("taken").list.explode(keep_nulls=False, empty_as_null=False))
        )
        taken = used["taken"].filter(used["taken"].list.len().is_between(2, len(kind)))
        fits += len(taken)
        assert (taken.list.n_unique() == taken.list.len()).all(), (kind, taken.head(3).to_list())
    assert fits > 10_000


def test_an_episode_cites_eight_different_bodies(docs):
    """Each document quotes an authority of its own: no two documents of an episode cite one body (94% of episodes
    did, bodies drawn document by document)."""
    bodies = "(" + "|".join(re.escape(body) for body in wording.BODY_NAMES) + ")"
    cited = docs.with_columns(body=pl.col("content").str.extract(bodies)).group_by("episode_id").agg(pl.col("body"))
    assert (cited["body"].list.n_unique() == documents.NUM_DOCS).all()


def test_no_sentence_opens_with_a_number_or_a_lower_case_letter(docs):
    """A clause that opens with its value never opens a sentence: "483,530 is the population of Malta"."""
    opening = docs["content"].str.extract_all(r"(?:^|[.!?] )([0-9a-z])").list.len()
    assert opening.sum() == 0, docs.filter(opening > 0)["content"].head(3).to_list()
    assert docs["content"].str.contains(r"that [0-9][0-9,.]* is the ").any()  # embedded, the clause stays


def test_no_verb_agrees_with_a_country_that_may_be_plural():
    """ "the Cayman Islands is located in ..." read wrong: a country's clauses and fillers give it no verb."""
    for relation, claim, decoy in [
        ("continent", "North America", "Europe"),
        ("capital", "George Town", "Kingston"),
        ("population", "64,174", "58,000"),
        ("currency", "Dollar", "Pound"),
    ]:
        texts = _rendered(relation, "the Cayman Islands", claim, decoy)
        assert sum("the cayman islands" in text.lower() for text in texts) > len(texts) // 2, relation
        agrees = r"(?<!of )(?<!in )the Cayman Islands (is|has|uses|lies|belongs|appears)\b"
        assert not any(re.search(agrees, text, re.I) for text in texts), relation


def test_no_clause_reports_a_record_or_hedges_a_figure(docs):
    """Every frame names the body that states its claim: "the bureau confirmed that the year of birth of Ann Lee is
    recorded as 1957" attributed it twice. The figures are exact: "the number of people living in Malta is about
    483,530" misstated them."""
    reported = r"\b((given|recorded|listed) as|(atlases|tables) list|(maps|geographers) place|recorded trade)\b"
    hedged = r"\b(about|roughly|around|approximately|some) [0-9]"
    for pattern in (reported, hedged):
        found = docs["content"].str.contains(pattern)
        assert not found.any(), docs.filter(found)["content"].head(2).to_list()


def test_a_currency_is_written_with_its_article():
    """ "the official currency of Japan is the Yen", never "the currency of Japan is Yen"."""
    texts = _rendered("currency", "Japan", "Yen", "Won")
    for value in ("Yen", "Won"):  # corroborations too: "also point to the Yen"
        assert all(re.search(rf"\b[Tt]he {value}\b", text) for text in texts)
        assert not any(re.search(rf"\b(is|in|as|to) {value}\b|^{value}", text, re.M) for text in texts), value
    assert not any(re.search(r"\b[Tt]he the\b", text) for text in texts)


def test_no_document_repeats_a_word(docs):
    doubled = "|".join(f"{word} {word}" for word in ("the", "a", "an", "of", "in", "is", "to", "by"))
    repeated = docs.filter(pl.col("content").str.contains(rf"(?i)\b(?:{doubled})\b"))
    assert repeated.height == 0, repeated["content"].head(3).to_list()


def test_a_city_named_city_is_not_called_the_city_of_itself():
    """ "the city of Quezon City" and "Country of Korhogo" (a title reading as if Korhogo were one) are not written."""
    texts = _rendered("city_country", "Quezon City", "Philippines", "Indonesia")
    assert not any("city of Quezon City" in text for text in texts)
    titles = [text.split("\n")[0] for text in _rendered("city_country", "Korhogo", "Mali", "Chad")]
    assert not any(re.search(r"\b[Cc]ountry\b", title) for title in titles)
    assert any(title.startswith("Location") for title in titles)


def test_an_episode_repeats_no_filler_while_its_domain_has_more(docs):
    """Eight outlets do not each write the same background sentence: an episode's fillers all differ while its
    domain has enough of them (13 each, for about 9 an episode)."""
    assert {len(family) for family in wording.FILLERS.values()} == {13}
    found: dict[int, list[str]] = {}
    for episode, relation, subject, content in docs.select("episode_id", "relation", "subject", "content").iter_rows():
        family = wording.FILLERS[wording.DOMAINS[relation]]
        text = content.lower()
        for template in family:
            found.setdefault(episode, []).extend([template] * text.count(template.replace("{s}", subject).lower()))
    fits = [fillers for fillers in found.values() if len(fillers) <= 13]
    assert len(fits) > 3000 and sum(len(fillers) for fillers in fits) > 25_000
    assert all(len(set(fillers)) == len(fillers) for fillers in fits)
    assert all(len(set(fillers)) == 13 for fillers in found.values() if len(fillers) > 13)


def test_few_documents_share_a_sentence_with_another_of_their_episode(docs):
    """Clean documents agree on the value, in their own words: a corroboration names its document's body, and bodies,
    fillers and a genre's openers are walked per episode. What is left: fillers of episodes that need more than their
    domain has (1.5% of documents; 3.5% while two documents could cite one body, 63% before any walk)."""
    shared = 0
    for contents in docs.group_by("episode_id").agg("content")["content"].to_list():
        sentences = [set(re.split(r"(?<=[.;]) ", content)) for content in contents]
        count = Counter(sentence for own in sentences for sentence in own)
        shared += sum(any(count[sentence] > 1 for sentence in own) for own in sentences)
    assert shared / docs.height < 0.025


def test_a_report_year_never_passes_the_last_cited_year():
    """A document naming 2024 and 2023 reports after 2024, and 2025 is another document's claim: it cites 2026. A
    report from after LAST_CITED_YEAR is impossible (and only corrupt documents, whose years lie nearest to it, cited
    one): where every year left is named by the episode, the document names one of them rather than the future."""
    u = np.linspace(0, 0.99, 8)
    claims = pl.Series(["2024", "2025", *["2024"] * 6])
    decoys = pl.Series(["2023", "2022", *["2021"] * 6])
    wordy, years = np.zeros(8, dtype=bool), np.tile([1990, wording.LAST_CITED_YEAR], (8, 1))
    cited = documents._years(u, years, pl.Series(["2024"] * 8), claims, decoys, wordy)
    assert set(cited) == {wording.LAST_CITED_YEAR} == {2026}
    full = documents._years(u, years, pl.Series(["2025"] * 8), pl.Series(["2026"] * 8), decoys, wordy)
    assert full.max() <= wording.LAST_CITED_YEAR


def test_an_open_fact_is_cited_from_the_latest_year_its_question_names():
    """ "Who hosts the Super Bowl in 2019?": a 2009 yearbook cannot tell. A year past LAST_CITED_YEAR bounds at it;
    the answer's years do not bound the fact (every report would come after the true year, and a later year claimed
    would be the wrong one): each document is bounded by its own years (`_years`). Other relations keep theirs."""
    facts = pl.DataFrame(
        {
            "relation": [documents.OPEN] * 4 + ["founded_year"],
            "fact_id": ["a", "b", "c", "d", "e"],
            "question": [
                "Who hosts the Super Bowl in 2019?",
                "When was the eclipse?",
                "Who won in 1994?",
                "2030?",
                "2019?",
            ],
            "answer": ["Atlanta", "August 21, 2017", "Ann", "Riyadh", "2019"],
        }
    )
    first, last = wording.FIRST_CITED_YEAR, wording.LAST_CITED_YEAR
    cited = documents.cited_years(facts).tolist()
    assert cited == [[2019, last], [first, last], [1994, last], [last, last], [first, last]]


def test_a_document_naming_a_date_cites_a_later_report():
    """A clean document stating "August 21, 2017" cites a report after 2017, a corrupt one claiming "April 15, 1912"
    one after 1912: each by its own years, with one law whichever is true."""
    n = 4000
    claims = pl.Series(["August 21, 2017", "April 15, 1912"] * (n // 2))
    decoys = pl.Series(["June 3, 2001", "May 1, 1905"] * (n // 2))
    u = np.random.default_rng(1).random(n)
    years = np.tile([1990, wording.LAST_CITED_YEAR], (n, 1))
    cited = documents._years(u, years, pl.Series(["August 21, 2017"] * n), claims, decoys, np.ones(n, dtype=bool))
    assert cited[0::2].min() == 2018 and cited[0::2].max() == wording.LAST_CITED_YEAR
    assert cited[1::2].min() == 1990  # after 1912, from `since`
    plain = documents._years(u, years, pl.Series(["x"] * n), claims, decoys, np.zeros(n, dtype=bool))
    assert plain.max() == wording.FIRST_CITED_YEAR + wording.CITED_YEARS - 1  # not read where no fact needs it
