import re

import numpy as np
import polars as pl
import pytest

from pipeline import corruption
from pipeline.corruption import COHERENT, ENTITY, INVERSION, NUMBER
from pipeline.pools import build_pools
from pipeline.schema import OPEN
from pipeline.sources import elements, geonames, synthetic
from reward_api.scoring import normalize

COUNTRIES = ["France", "Spain", "Italy", "Chad", "Peru", "Fiji", "Oman", "Laos"]


@pytest.fixture(scope="module")
def pools():
    return build_pools(7, size=256)


def read_numbers(values: pl.Series) -> np.ndarray:
    """`corruption.read_expr` of each value, NaN where it reads none (as Substitutes hold them)."""
    return pl.select(corruption.read_expr(pl.lit(values))).to_series().fill_null(np.nan).to_numpy()


def _facts(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema=["answer", "answer_aliases", "answer_type", "relation"], orient="row"
    ).with_columns(
        pl.col("answer_aliases").cast(pl.List(pl.String)),
        source=pl.lit("test"),
        question=pl.lit("Q?"),
        distractors=pl.lit([], dtype=pl.List(pl.String)),
    )


@pytest.fixture(scope="module")
def facts() -> pl.DataFrame:
    """Row 0..7: a big 'capital_of' relation; then numbers, a lone person and a lone quantity relation."""
    rows = [(c, [], "place", "capital_of") for c in COUNTRIES]
    rows += [
        ("1987", [], "year", "birth_year"),  # 8
        ("67,750,000", ["67750000"], "quantity", "population"),  # 9
        ("15.999", [], "quantity", "atomic_mass"),  # 10
        ("5 km", [], "quantity", "length"),  # 11
        ("Ada Lovelace", ["Lovelace"], "person", "founder"),  # 12
        ("1988", [], "year", "birth_year"),  # 13
        ("7", [], "quantity", "moons"),  # 14
    ]
    return _facts(rows)


def _keys(texts) -> np.ndarray:
    return (
        pl.Series(list(texts), dtype=pl.String)
        .to_frame("t")
        .select(corruption.key_expr(pl.col("t")))
        .to_series()
        .to_numpy()
    )


def _draws(n: int):
    """`resolve`'s draw for n items: each round's uniform columns, seeded by the round."""

    def draw(items, round_):
        return np.random.default_rng(round_).random((n, corruption.U_COLUMNS))[items]

    return draw


def _claims(truths, rows, level):
    rows = np.asarray(rows)
    values, keys, applied = corruption.resolve(truths, rows, np.full(len(rows), level), _draws(len(rows)))
    return values.to_list(), keys, applied.tolist()


def test_normalisation_and_keys_match_the_scorer():
    texts = ["Paris, France", "  67,750,000 ", "Ünïcode—Dash!", "A  b\tc", "15.999", "O'Neil"]
    got = pl.Series(texts).to_frame("t").select(corruption.normalize_expr(pl.col("t"))).to_series().to_list()
    assert got == [normalize(t) for t in texts]
    same = ["paris france", "67750000", "ünïcodedash", "a b c", "15.999", "oneil"]
    assert (_keys(texts) == _keys(same)).all() and len(set(_keys(texts))) == len(texts)


def test_number_is_a_near_miss_in_the_same_format(facts, pools):
    truths = corruption.truths(facts, pools)
    values, keys, applied = _claims(truths, [8] * 50 + [9] * 50 + [10] * 50 + [11] * 50, NUMBER)
    assert set(applied) == {NUMBER}
    years = np.array([int(v) for v in values[:50]])
    assert ((np.abs(years - 1987) >= 1) & (np.abs(years - 1987) <= 20)).all()
    for value in values[50:100]:
        assert value.count(",") == 2 and value.endswith(",000")
        assert 0.6 < int(value.replace(",", "")) / 67_750_000 < 1.4 and value != "67,750,000"
    assert all(re.fullmatch(r"\d+(\.\d{0,2}[1-9])?", v) and v != "15.999" for v in values[100:150])
    assert all(v.endswith(" km") and v != "5 km" for v in values[150:])
    assert (keys == _keys(values)).all()


def test_a_word_with_a_number_in_it_is_no_number(pools):
    """ "21st" and "the 1990s" are words: a near miss would read "27st" or "the 2570s"; they take other answers."""
    ordinals = [f"{n}{suffix}" for n, suffix in zip(range(21, 33), ["st", "nd", "rd"] + ["th"] * 9, strict=True)]
    truths = corruption.truths(
        _facts([(o, [], "text", "rank") for o in ordinals] + [("the 1990s", [], "text", "era")]), pools
    )
    assert not truths.numeric.any()
    units = corruption.truths(_facts([("100kg", [], "quantity", "mass"), ("2 sons", [], "quantity", "kids")]), pools)
    assert units.numeric.all()  # a unit after a number keeps it a number
    values, _, applied = _claims(truths, [0] * 30, NUMBER)
    assert set(applied) == {ENTITY} and set(values) <= set(ordinals[1:])


def test_another_spelling_of_the_answer_is_no_wrong_value(pools):
    """ "Beyonce" for "Beyoncé", "United States" for "the United States": the same answer to a reader, never a
    corrupt document's claim, though each is another fact's answer of the relation."""
    assert (_keys(["Beyoncé", "the United States", "An Apple"]) == _keys(["Beyonce", "United States", "apple"])).all()
    names = ["Beyoncé", "Beyonce", "the United States", "United States"] + [f"Singer {i}" for i in range(10)]
    truths = corruption.truths(_facts([(n, [], "person", "performer") for n in names]), pools)
    for row, same in ((0, "Beyonce"), (1, "Beyoncé"), (2, "United States"), (3, "the United States")):
        values, _, _ = _claims(truths, [row] * 200, ENTITY)
        assert same not in values and names[row] not in values


def test_a_held_out_split_draws_on_every_splits_public_answers(pools):
    """Three colours in a split: alone, too few for a group of their own, they would take job titles from the text
    pool; with the other splits' colours (`public`) they take colours, and a number's range and neighbours are its
    relation's across the splits."""
    colours = ["blue", "red", "green", "white", "black", "yellow", "purple", "orange"]
    split = _facts([(c, [], "text", "color") for c in colours[:3]] + [("55", [], "quantity", "atomic_number")])
    public = _facts(
        [(c, [], "text", "color") for c in colours[3:]]
        + [(str(n), [], "quantity", "atomic_number") for n in range(1, 119) if n != 55]
    )
    alone = corruption.truths(split, pools)
    values, _, _ = _claims(alone, [0] * 100, ENTITY)
    assert not set(values) & set(colours)
    pooled = corruption.truths(split, pools, public)
    values, _, applied = _claims(pooled, [0] * 100, ENTITY)
    assert set(applied) == {ENTITY} and set(values) <= set(colours[1:])
    assert (pooled.low[3], pooled.high[3]) == (1, 118) and pooled.ranked[3] and not alone.ranked[3]
    values, _, _ = _claims(pooled, [3] * 100, INVERSION)  # neighbours: other atomic numbers near 55
    assert all(1 <= abs(int(v) - 55) <= 6 for v in values), values


def test_an_entity_claim_about_a_big_relations_number_is_a_true_answer_near_it(pools):
    """Another country's population drawn from anywhere read as absurd (Kuwait with 2,550 people): an entity claim
    is another answer of the relation from a neighbourhood ENTITY_REACH times an inversion's."""
    counts = [round(1000 * 1.03**i) for i in range(200)]
    truths = corruption.truths(_facts([(f"{c:,}", [], "quantity", "population") for c in counts]), pools)
    values, _, applied = _claims(truths, [100] * 300, ENTITY)
    numbers = {int(v.replace(",", "")) for v in values}
    assert set(applied) == {ENTITY} and numbers <= set(counts) - {counts[100]}
    assert all(0.5 < n / counts[100] < 2 for n in numbers), sorted(numbers)
    assert len(numbers) >= 20  # still many values: the whole neighbourhood


def test_an_entity_claim_far_from_its_number_falls_back_to_an_even_near_miss(pools):
    """At a relation's sparse ends a neighbour by rank lay far off (China's population claimed as 98,423,595): past
    NEIGHBOUR_MAX_RATIO the claim is a near miss, recorded as number, as often above the number as below. Drawn as the
    episodes stage draws (columns 1 and 2 hold 16 bits): the fallback's first versions went up 83% of the time (the
    draw that sent the neighbour far set the sign), then down every time (bits that 16-bit draws do not have)."""
    counts = [round(1000 * 1.03**i) for i in range(100)] + [round(10**9 * 1.03**i) for i in range(100)]
    truths = corruption.truths(_facts([(f"{c:,}", [], "quantity", "population") for c in counts]), pools)

    def draw(items, round_):
        u = np.random.default_rng(round_).random((2000, corruption.U_COLUMNS))
        u[:, 1:] = np.floor(u[:, 1:] * 2**16) / 2**16
        return u[items]

    # The top of the lower cluster: a short shift finds a neighbour below, a long one the far cluster above.
    values, _, applied = corruption.resolve(truths, np.full(2000, 95), np.full(2000, ENTITY), draw)
    share = np.array([int(v.replace(",", "")) for v in values]) / counts[95] - 1
    fell = applied == NUMBER
    assert 100 < fell.sum() < 1900 and (np.abs(share[~fell]) < 1).all()
    assert (np.abs(share[fell]) >= 0.05).all() and (np.abs(share[fell]) <= 0.355).all()
    assert 0.43 < (share[fell] > 0).mean() < 0.57  # 805 fall back: 0.504 (the first version: 0.605)


def test_an_entity_claim_whose_near_misses_are_taken_widens_its_near_miss_and_never_goes_far(pools):
    """5 employees, the one small count of its relation: every neighbour lies past NEIGHBOUR_MAX_RATIO and both near
    misses (4, 6) are held by other corrupt documents (`avoid`). Once the first SPREAD_ROUNDS rounds have failed, the
    near miss widens round by round; the neighbour stood there before (5 employees claimed as 1,170)."""
    counts = [5] + [round(1000 * 1.03**i) for i in range(100)]
    truths = corruption.truths(_facts([(f"{c:,}", [], "quantity", "employees") for c in counts]), pools)
    taken = pl.Series(["4", "6"]).to_frame("v").select(corruption.key_expr(pl.col("v"))).to_series().to_numpy()
    rows = np.zeros(500, dtype=np.int64)
    avoid = [np.full(len(rows), key, dtype=np.uint64) for key in taken]
    values, _, applied = corruption.resolve(truths, rows, np.full(len(rows), ENTITY), _draws(len(rows)), avoid)
    numbers = np.array([int(v.replace(",", "")) for v in values])
    assert (applied == NUMBER).all() and not np.isin(numbers, [4, 5, 6]).any()
    assert ((numbers <= 5 * corruption.NEIGHBOUR_MAX_RATIO) & (numbers >= 5 / corruption.NEIGHBOUR_MAX_RATIO)).all()


def test_a_count_whose_neighbours_are_all_refused_never_goes_far_when_its_scan_begins(pools):
    """Once SPREAD_ROUNDS twice over have found no free neighbour (each refused: too close, taken within the episode),
    a ranked number's draws scan its group's values, which lie anywhere: one past NEIGHBOUR_MAX_RATIO takes a near miss
    instead, as a far neighbour does (a clean document denied Jolo's 101,002 people as Pest's 1,001,748)."""
    counts = [101_002, 150_317] + [1_000_003 + 10_007 * i for i in range(60)]
    truths = corruption.truths(_facts([(f"{c:,}", [], "quantity", "city_population") for c in counts]), pools)
    assert truths.ranked[0]
    rows = np.zeros(400, dtype=np.int64)
    u = np.random.default_rng(3).random((len(rows), corruption.U_COLUMNS))
    truth = (truths.value[rows], truths.decimals[rows])
    for level in (ENTITY, INVERSION):
        values, _, _, read = corruption.claims(
            truths, rows, np.full(len(rows), level), u, 2 * corruption.SPREAD_ROUNDS, truth
        )
        far = read > 101_002 * corruption.NEIGHBOUR_MAX_RATIO
        assert not far.any(), values.filter(far).head(3)


def test_a_near_miss_stays_in_its_relations_range_and_keeps_a_decimal(pools):
    """A redraw's long move that leaves the birth years' range both ways lands inside it (a birth year past every
    true one, only ever a corrupt document's, was a tell), and a near miss of a number with decimals is never whole
    ("109" for tellurium's 127.6: no true atomic mass is)."""
    years = corruption.truths(_facts([(str(y), [], "year", "birth_year") for y in range(1946, 1986)]), pools)
    rows = np.full(4000, 18)  # 1964, 18 years from either end
    u = np.random.default_rng(0).random((len(rows), corruption.U_COLUMNS))
    for round_ in (0, 3, 9):
        moved = corruption._near_miss(years, rows, years.value[rows], years.decimals[rows], u, round_)
        assert moved.min() >= 1946 and moved.max() <= 1985, round_
    masses = ["127.6", "107.868", "1.008", "26.982", "39.95", "196.967", "10.81", "58.693"]
    truths = corruption.truths(_facts([(m, [], "quantity", "atomic_mass") for m in masses]), pools)
    values, _, applied = _claims(truths, list(range(len(masses))) * 300, NUMBER)
    assert set(applied) == {NUMBER} and all("." in v for v in values), [v for v in values if "." not in v][:5]


def test_an_open_facts_wrong_claims_answer_the_same_kind_of_question(pools):
    """nq_open's questions share one relation: "Who wrote Hamlet?" takes another who-question's name, never a date or
    a phrase; a kind with too few answers (two where-questions) draws on every open answer of its source."""
    who = [f"Person {c}" for c in "ABCDEFG"]
    when = [f"{m} {d}, 19{d}" for d, m in enumerate(["March", "April", "May", "June", "July", "August"], start=10)]
    rows = [(f"Who wrote book {i}?", a) for i, a in enumerate(who)]
    rows += [(f"When did event {i} happen?", a) for i, a in enumerate(when)]
    rows += [(f"What is thing {i} made of?", a) for i, a in enumerate(["wood", "iron", "clay", "glass", "stone"])]
    rows += [("Where is place 1?", "Paris"), ("Where is place 2?", "Lima")]
    facts = pl.DataFrame(
        {
            "question": [q for q, _ in rows],
            "answer": [a for _, a in rows],
            "answer_aliases": [[] for _ in rows],
            "answer_type": ["text"] * len(rows),
            "relation": [OPEN] * len(rows),
            "source": ["nq_open"] * len(rows),
            "distractors": [[] for _ in rows],
        },
        schema_overrides={"answer_aliases": pl.List(pl.String), "distractors": pl.List(pl.String)},
    )
    truths = corruption.truths(facts, pools)
    for row, kind in ((0, who), (len(who), when), (len(who) + len(when), ["wood", "iron", "clay", "glass", "stone"])):
        values, _, _ = _claims(truths, [row] * 200, ENTITY)
        assert set(values) <= set(kind) - {facts["answer"][row]}, (row, set(values) - set(kind))
    values, _, _ = _claims(truths, [len(rows) - 1] * 400, ENTITY)
    assert set(values) & set(who) and set(values) & set(when) and set(values) <= set(facts["answer"]) - {"Lima"}


def test_a_number_alone_among_names_still_gets_a_near_miss(pools):
    """ "50 Cent" is its group's one number: its range holds no other value, so a near miss leaves it (as before
    ranges), rather than redrawing the truth until the rounds run out; a whole number next to decimal answers stays
    inside the range when it keeps a decimal."""
    names = ["50 Cent", "Jay-Z", "Dr. Dre", "Timbaland", "Pharrell", "Kanye West"]
    truths = corruption.truths(_facts([(n, [], "person", "producer") for n in names]), pools)
    values, _, applied = _claims(truths, [0] * 50, NUMBER)
    assert set(applied) == {NUMBER} and all(v.endswith(" Cent") and v != "50 Cent" for v in values)
    masses = ["1.5", "2.5", "3.5", "17.5", "18.5", "17.9", "19.9"]
    truths = corruption.truths(_facts([(m, [], "quantity", "mass") for m in masses]), pools)
    rows = np.full(3000, 6)
    u = np.random.default_rng(2).random((len(rows), corruption.U_COLUMNS))
    for round_ in (0, 5):
        moved = corruption._near_miss(truths, rows, truths.value[rows], truths.decimals[rows], u, round_)
        assert moved.max() <= 199 and moved.min() >= 15 and (moved % 10 != 0).all(), round_


def test_each_fact_accepts_its_own_answer_and_aliases_however_often_values_repeat(pools):
    """Keys are computed once per distinct value and mapped back to every fact that names it: a fact's row holds its
    answer's key, then its aliases', short rows repeating their last."""
    rows = [("1987", [], "year", "birth_year"), ("1988", ["1987"], "year", "birth_year")]
    rows += [("1987", [], "year", "birth_year"), ("Ada Lovelace", ["Lovelace", "A. Lovelace"], "person", "founder")]
    facts = _facts(rows)
    accepted = corruption.truths(facts, pools).accepted
    assert accepted.shape == (4, 3)
    for row, (answer, aliases, _, _) in enumerate(rows):
        keys = list(_keys([answer, *aliases]))
        assert list(accepted[row]) == keys + keys[-1:] * (3 - len(keys))


def test_a_fact_with_distractors_is_corrupted_with_them(pools):
    """FaithEval's other options (its real-world answer among them) are its wrong claims: the conflict the benchmark
    was made for. A distractor that spells the answer another way ("Copper") is no wrong claim; a fact left with none
    takes its kind's answers."""
    answers = ["copper", "tin", "zinc", "lead", "iron", "gold", "silver", "nickel"]
    facts = _facts([(a, [], "text", OPEN) for a in answers]).with_columns(
        source=pl.lit("faitheval"),
        distractors=pl.Series([["nitrogen", "carbon dioxide", "Copper"], ["tin"]] + [[]] * 6),
    )
    truths = corruption.truths(facts, pools)
    for level in (ENTITY, INVERSION, COHERENT):
        values, _, applied = _claims(truths, [0] * 100, level)
        assert set(values) == {"nitrogen", "carbon dioxide"} and set(applied) == {level}, level
    values, _, _ = _claims(truths, [1] * 100, ENTITY)
    assert set(values) <= set(answers) - {"tin"}


def test_a_group_holds_one_sources_answers(pools):
    """PopQA's lower-case occupations ("officer") are no wrong values for the synthetic ones, nor the reverse."""
    jobs = {"synthetic": [f"Job title {i}" for i in range(12)], "popqa": [f"job {i}" for i in range(12)]}
    facts = pl.concat(
        _facts([(j, [], "text", "occupation") for j in names]).with_columns(source=pl.lit(source))
        for source, names in jobs.items()
    )
    truths = corruption.truths(facts, pools)
    for row, own in ((0, jobs["synthetic"]), (12, jobs["popqa"])):
        values, _, _ = _claims(truths, [row] * 100, ENTITY)
        assert set(values) <= set(own[1:])


def _written(text: str) -> tuple[bool | None, int, bool]:
    """How a number is written: a thousands separator (from 1,000 up), significant figures, a trailing 0 decimal."""
    whole, _, fraction = text.replace(",", "").partition(".")
    return ("," in text if int(whole) >= 1000 else None), len((whole + fraction).strip("0")), fraction.endswith("0")


@pytest.fixture(scope="module")
def real_numbers(pools) -> tuple[pl.DataFrame, list[str]]:
    """The numeric facts of the offline sources (a small synthetic world), and 8 number claims per fact."""
    sources = [geonames.facts(), elements.facts(), synthetic.facts(7, 3000, pools)]
    facts = pl.concat(sources).filter(pl.col("answer_type").is_in(["quantity", "year"]))
    rows = np.repeat(np.arange(facts.height), 8)
    values, _, applied = _claims(corruption.truths(facts.select(_facts([]).columns), pools), rows, NUMBER)
    assert set(applied) == {NUMBER}
    return facts[rows], values


def test_number_claims_are_written_like_the_true_answers_of_their_relation(real_numbers):
    """No way of writing a number marks a claim as corrupt: "983" -> "1324" among counts written "1,324", 13,290
    among head counts rounded to 3 figures, or "53.20" among atomic masses were all tells."""
    facts, claims = real_numbers
    written = {(False, r, _written(a)) for r, a in facts.select("relation", "answer").iter_rows()}
    written |= {(True, r, _written(v)) for r, v in zip(facts["relation"], claims, strict=True)}
    for relation in set(facts["relation"]):
        true, corrupt = ({w for c, r, w in written if (c, r) == (side, relation)} for side in (False, True))
        for feature in (0, 2):
            assert {w[feature] for w in corrupt} <= {w[feature] for w in true}, (relation, feature)
        assert max(w[1] for w in corrupt) <= max(w[1] for w in true), relation


def test_number_claims_move_as_far_as_the_card_says(real_numbers):
    """Years by YEAR_SHIFT, other numbers by QUANTITY_SHIFT % give or take the rounding to their relation's figures
    (a head count of 1,000 moved by 40 % was a wider miss than stated); only 1 and 2 move further, by one."""
    facts, claims = real_numbers
    truth = facts["answer"].str.replace_all(",", "").cast(pl.Float64).to_numpy()
    claim = pl.Series(claims).str.replace_all(",", "").cast(pl.Float64).to_numpy()
    year = (facts["answer_type"] == "year").to_numpy()
    years = np.abs(claim - truth)[year]
    assert years.min() == corruption.YEAR_SHIFT[0] and years.max() == corruption.YEAR_SHIFT[1]
    share = (np.abs(claim - truth) / truth * 100)[~year]
    least, most = corruption.QUANTITY_SHIFT
    one_step = np.isin(truth[~year], [1, 2])  # the least move, by one, is more than 35 % of them
    assert share[~one_step].min() >= least - 0.5 and share[~one_step].max() <= most + 0.5
    assert set(np.abs(claim - truth)[~year][one_step]) == {1}


def test_number_falls_back_to_entity_without_a_number(facts, pools):
    truths = corruption.truths(facts, pools)
    values, _, applied = _claims(truths, [0] * 40, NUMBER)
    assert set(applied) == {ENTITY}
    assert set(values) <= set(COUNTRIES)


def test_entity_uses_the_relation_or_the_type_pool(facts, pools):
    truths = corruption.truths(facts, pools)
    values, _, applied = _claims(truths, [3] * 40 + [12] * 40, ENTITY)
    assert set(applied) == {ENTITY}
    assert set(values[:40]) <= set(COUNTRIES)  # 'capital_of' has enough distinct answers
    assert set(values[40:]) <= set(pools.person)  # a lone founder: the Faker person pool


def test_entity_of_a_number_in_a_small_relation_falls_back_to_number(facts, pools):
    truths = corruption.truths(facts, pools)
    values, _, applied = _claims(truths, [14] * 20, ENTITY)
    assert set(applied) == {NUMBER}
    assert all(v.isdigit() and v != "7" for v in values)


def test_inversion_draws_like_entity(facts, pools):
    """An inversion's value is an entity claim's: true answers of the relation, or a near miss in a small one."""
    truths = corruption.truths(facts, pools)
    rows = [8] * 40 + [9] * 40 + [0] * 40
    inverted, inverted_keys, applied = _claims(truths, rows, INVERSION)
    assert set(applied) == {INVERSION}
    entity, entity_keys, _ = _claims(truths, rows, ENTITY)
    assert inverted == entity and (inverted_keys == entity_keys).all()
    years = np.array([int(v) for v in inverted[:40]])
    assert ((np.abs(years - 1987) >= 1) & (np.abs(years - 1987) <= 20)).all() and len(set(years)) > 10
    assert len(set(inverted[40:80])) > 10 and set(inverted[80:]) <= set(COUNTRIES) - {"France"}


def test_resolve_keeps_the_values_of_a_group_apart(pools):
    """Eight denied values drawn around one founding year collide without `apart` and differ with it; groups out of
    item order are refused."""
    years = [str(1900 + i // 3) for i in range(300)]
    truths = corruption.truths(_facts([(y, [], "year", "founded") for y in years]), pools)
    rows, apart = np.repeat(np.arange(0, 300, 3), 8), np.repeat(np.arange(100), 8)
    levels, draw = np.full(len(rows), INVERSION), _draws(len(rows))

    def distinct(values: pl.Series) -> list[int]:
        return [len(set(group)) for group in np.array(values.to_list()).reshape(100, 8)]

    kept, _, _ = corruption.resolve(truths, rows, levels, draw, apart=apart)
    free, _, _ = corruption.resolve(truths, rows, levels, draw)
    assert set(distinct(kept)) == {8} and min(distinct(free)) < 8
    with pytest.raises(ValueError, match="apart's groups must run in item order"):
        corruption.resolve(truths, rows, levels, draw, apart=apart[::-1])


def test_inversion_of_a_number_in_a_big_relation_is_a_neighbouring_true_answer(pools):
    """A founding year is inverted to another true founding year some years away, not to one from anywhere (76
    employees were denied where 88,400 work), nor to the next one (an episode's clean documents, whose denied values
    are drawn so, denied the same year), and claims fall on each decade as often as truths do, at the ends too: the
    pairing draws (truth, claim) as often as (claim, truth)."""
    years = [str(1900 + i // 3) for i in range(300)]  # 100 years, three facts each
    truths = corruption.truths(_facts([(y, [], "year", "founded") for y in years]), pools)
    rows = np.repeat(np.arange(300), 200)
    values, _, applied = _claims(truths, rows, INVERSION)
    assert set(applied) == {INVERSION}
    truth, claim = np.array([int(years[r]) for r in rows]), np.array([int(v) for v in values])
    # Blocks of YEAR_REACH times 8 to 16 ranks (2 shifts), past the 3 answers of a year: 1 to 11 years, about evenly
    # (redraws reach further, rarely; without YEAR_REACH, 1 to 3 years).
    gap = np.abs(claim - truth)
    assert (gap > 0).all() and (gap <= 11).mean() > 0.99 and (gap >= 4).mean() > 0.6 and len(set(claim)) == 100
    decades = np.bincount((claim - 1900) // 10, minlength=10) / len(claim)
    assert np.abs(decades - 0.1).max() < 0.01
    share = np.bincount(claim - 1900, minlength=100) / np.bincount(truth - 1900, minlength=100)
    # Each year is claimed as often as it is true, ties and all (the first and last few less: a block clipped at an
    # end may pair a rank with its own value, and the redraw is not paired back).
    assert np.abs(share[2:-2] - 1).max() < 0.2 and share.min() > 0.6


def test_neighbours_pair_ranks_by_a_matching_past_ties():
    """For every shift and phase, the pick is an involution of the ranks (b is a's neighbour exactly when a is b's)
    that never pairs a rank with its own value, and reaches no further than NEIGHBOURS of the ranks."""
    values = pl.Series([str(v) for v in np.repeat(np.arange(100, 140), 3)])  # 40 values, 3 answers each
    size = len(values)
    ranked = corruption.Neighbours.of(
        corruption.Substitutes(
            values=values,
            keys=_keys(values),
            read=read_numbers(values),
            start=np.array([0]),
            size=np.array([size]),
            own_first=np.zeros(1, dtype=np.int64),
            own_count=np.zeros(1, dtype=np.int64),
        )
    )
    assert ranked.tie.tolist() == [3]
    number, ranks = values.cast(pl.Float64).to_numpy(), np.arange(size)
    within = (ranks % 3 + 0.5) / 3  # the draw that gives each answer of a tie its own rank
    for shift_draw in (0.0, 0.5, 0.99):
        for phase in np.linspace(0, 0.99, 17):
            u = np.column_stack([np.full(size, phase), within, np.full(size, shift_draw)])
            partner = ranked.pick(np.zeros(size, dtype=np.int64), number, u)
            assert (partner[partner] == ranks).all()
            reach = max(round(size * corruption.NEIGHBOURS), 2 * 4)  # NEIGHBOURS of the ranks, or twice past a tie
            paired, inner = partner != ranks, (ranks >= 2 * reach) & (ranks < size - 2 * reach)
            assert (number[partner] != number)[inner].all() and paired.mean() > 0.9  # a clipped end block may tie
            assert (np.abs(partner - ranks) <= reach).all()


def test_a_denial_is_a_neighbour_of_the_number_it_stands_against(pools):
    """With `around`, a neighbour is drawn near the given number (a corrupt document's own claim), MIN_COUNT_GAP of
    the bigger away from it, never the truth."""
    counts = [str(n) for n in range(1000, 101_000, 1000)]  # 1,000 .. 100,000
    truths = corruption.truths(_facts([(c, [], "quantity", "employees") for c in counts]), pools)
    rows = np.zeros(400, dtype=np.int64)  # truth: 1000
    numeric, value, decimals = corruption.numbers(pl.Series(["80,300"] * 200 + ["2,300"] * 200))
    assert numeric.all() and value[0] == 80_300 and (decimals == 0).all()

    def draw(items, round_):
        return np.random.default_rng(round_ + 5).random((len(rows), corruption.U_COLUMNS))[items]

    got, _, _ = corruption.resolve(truths, rows, np.full(len(rows), INVERSION), draw, around=(value, decimals))
    got = np.array([int(v) for v in got.to_list()])
    gap = np.abs(got[:200] - 80_300)
    # 2 to 4 ranks either way where that reaches past 5% (85,000), else redraws reach on: a few ranks more
    assert (gap >= corruption.MIN_COUNT_GAP * np.maximum(got[:200], 80_300)).all() and (gap <= 20_000).all()
    assert len(set(got[:200])) > 3
    assert 1000 not in got and (np.abs(got[200:] - 2300) <= 5_000).mean() > 0.9  # 1,000 is the truth: redraws reach on


def test_coherent_asserts_a_wrong_value(facts, pools):
    truths = corruption.truths(facts, pools)
    values, _, applied = _claims(truths, list(range(15)), COHERENT)
    assert set(applied) == {COHERENT}
    assert all(normalize(v) != normalize(a) for v, a in zip(values, facts["answer"], strict=True))


def test_resolve_never_asserts_the_answer_an_alias_or_an_avoided_value(facts, pools):
    truths = corruption.truths(facts, pools)
    rows = np.repeat(np.arange(len(facts)), 200)
    avoided = (COUNTRIES * len(rows))[: len(rows)]

    def draw(items, round_):
        return np.random.default_rng(round_ * 1000 + 1).random((len(rows), corruption.U_COLUMNS))[items]

    for level in (NUMBER, ENTITY, INVERSION, COHERENT):
        values, keys, _ = corruption.resolve(truths, rows, np.full(len(rows), level), draw, [_keys(avoided)])
        assert (keys == _keys(values)).all()
        accepted = [{normalize(a) for a in (f["answer"], *f["answer_aliases"])} for f in facts.iter_rows(named=True)]
        for row, value, other in zip(rows, values, avoided, strict=True):
            assert normalize(value) not in accepted[row] and normalize(value) != normalize(other)


def test_resolve_scans_a_small_group_when_draws_keep_colliding(pools):
    """Five distinct answers, four of them forbidden: the redraws end on the fifth."""
    facts = _facts([(c, [], "place", "capital_of") for c in ["Lima", "Oslo", "Rome", "Bern", "Kyiv"] * 3])
    truths = corruption.truths(facts, pools)
    rows = np.zeros(30, dtype=np.int64)  # truth: Lima
    avoid = [_keys([c] * 30) for c in ("Oslo", "Rome", "Bern")]

    def draw(items, round_):
        return np.zeros((len(items), corruption.U_COLUMNS))  # always the first value: the scan must move on

    values, _, applied = corruption.resolve(truths, rows, np.full(30, ENTITY), draw, avoid)
    assert set(values.to_list()) == {"Kyiv"} and set(applied.tolist()) == {ENTITY}


def test_resolve_repeats_an_avoided_value_when_every_wrong_one_is_avoided(pools, monkeypatch):
    """Five continents, two of them true of the fact (the Cocos Islands: Asia, Oceania) and the other three claimed by
    earlier corrupt documents: the fourth repeats one of those three, never a true one (it had raised), as soon as
    its scan has gone round the five (not after as many rounds as the biggest group has values: seconds a batch)."""
    continents = ["Asia", "Europe", "Africa", "Oceania", "North America"]
    facts = _facts([("Asia", ["Oceania"], "place", "continent")] + [(c, [], "place", "continent") for c in continents])
    truths = corruption.truths(facts, pools)
    rows = np.zeros(12, dtype=np.int64)
    avoid = [_keys([c] * 12) for c in ("Europe", "Africa", "North America")]
    rounds = []
    monkeypatch.setattr(corruption, "BATCH_DRAWS", 1)  # one round at a time: the rounds drawn are the rounds tried

    def draw(items, round_):
        rounds.append(round_)
        return _draws(12)(items, round_)

    values, keys, _ = corruption.resolve(truths, rows, np.full(12, ENTITY), draw, avoid)
    assert set(values.to_list()) <= {"Europe", "Africa", "North America"} and (keys == _keys(values)).all()
    assert max(rounds) <= 2 * corruption.SPREAD_ROUNDS + len(continents), "the scan went on past the group"


@pytest.mark.parametrize("case", ["apart", "every value avoided"])
def test_resolve_draws_the_same_claims_whatever_rounds_it_draws_at_once(pools, monkeypatch, case):
    """The few items a redraw leaves draw several rounds at once (BATCH_DRAWS) and each takes the first good one of
    them: the claims are those of one round at a time, with `avoid` and `apart` too (six founding years for eight
    denials an episode: redraws run past the round where a scan has gone round its group and `apart` no longer
    holds), and past that round with `avoid` (five continents, every wrong one avoided)."""
    if case == "apart":
        truths = corruption.truths(_facts([(str(1950 + i % 6), [], "year", "founded") for i in range(300)]), pools)
        rows, apart = np.repeat(np.arange(0, 300, 3), 8), np.repeat(np.arange(100), 8)
        avoid, level = [_keys([str(1950 + i % 7) for i in range(len(rows))])], INVERSION
    else:
        continents = ["Asia", "Europe", "Africa", "Oceania", "North America"]
        facts = [("Asia", ["Oceania"], "place", "continent")] + [(c, [], "place", "continent") for c in continents]
        truths, rows, apart = corruption.truths(_facts(facts), pools), np.zeros(40, dtype=np.int64), None
        avoid, level = [_keys([c] * 40) for c in ("Europe", "Africa", "North America")], ENTITY
    draw, calls, results = _draws(len(rows)), [], []
    claims = corruption.claims
    monkeypatch.setattr(corruption, "claims", lambda *args: calls.append(len(args[1])) or claims(*args))
    for batch in (1, corruption.BATCH_DRAWS, 10**9):
        monkeypatch.setattr(corruption, "BATCH_DRAWS", batch)
        calls.clear()
        values, keys, kinds = corruption.resolve(truths, rows, np.full(len(rows), level), draw, avoid, apart=apart)
        results.append(((values.to_list(), keys.tolist(), kinds.tolist()), len(calls)))
    (one, one_calls), *batched = results
    assert all(got == one for got, _ in batched)
    assert one_calls > 10 and all(calls < one_calls for _, calls in batched)


def test_substitutes_follow_how_often_values_are_answers(pools):
    """A value that answers many facts is a frequent substitute too, so no value marks a corrupt document."""
    facts = _facts([("Asia", [], "place", "continent")] * 60 + [(c, [], "place", "continent") for c in COUNTRIES])
    truths = corruption.truths(facts, pools)
    values, _, _ = _claims(truths, [60] * 2000, ENTITY)  # truth: France
    assert 0.80 < values.count("Asia") / 2000 < 0.93  # 60 of the 67 other answers


def test_a_substitute_draw_skips_the_true_answer(pools):
    """Even when the truth answers most facts of the relation, one draw never lands on it."""
    facts = _facts([("Asia", [], "place", "continent")] * 60 + [(c, [], "place", "continent") for c in COUNTRIES])
    truths = corruption.truths(facts, pools)
    u = np.random.default_rng(3).random((5000, corruption.U_COLUMNS))
    rows = np.zeros(5000, dtype=np.int64)
    values, *_ = corruption.claims(
        truths, rows, np.full(5000, ENTITY), u, 0, (truths.value[rows], truths.decimals[rows])
    )
    assert "Asia" not in values.to_list() and set(values.to_list()) == set(COUNTRIES)


def test_near_misses_stay_inside_the_range_of_the_relations_answers(pools):
    """A year or quantity beyond every true answer of its relation would mark its document as corrupt."""
    years = [str(1950 + 5 * i) for i in range(11)]  # 1950 .. 2000
    amounts = ["120", "150", "180", "200", "240", "250"]
    facts = _facts([(y, [], "year", "birth_year") for y in years] + [(a, [], "quantity", "staff") for a in amounts])
    truths = corruption.truths(facts, pools)
    values, _, applied = _claims(truths, [0] * 60 + [10] * 60 + [11] * 60 + [16] * 60, NUMBER)
    assert set(applied) == {NUMBER}
    numbers = np.array([int(v) for v in values])
    assert (numbers[:120] >= 1950).all() and (numbers[:120] <= 2000).all()
    assert ((numbers[120:] >= 120) & (numbers[120:] <= 250)).all()
    assert (numbers[:60] > 1950).all() and (numbers[60:120] < 2000).all()  # the edges move inwards


def test_a_wrong_count_is_never_within_a_rounding_of_the_truth(pools):
    """Other cities' populations as substitutes: "about 200,000" where 202,402 live would be true. An inversion's
    neighbour, a true answer near the truth, keeps the same gap (205,000 is no wrong claim either), and never lies
    where either number, read as rounded at its last nonzero digit, states the other. Counts below SEPARATED_FROM
    (atomic numbers) and years are exact, so a neighbouring value stays a fair wrong claim."""
    populations = ["202,402", "200,000", "201,500", "205,000", "150,000", "260,000", "310,000", "99,500"]
    small = [str(n) for n in range(20, 32)]
    facts = _facts([(p, [], "quantity", "city_population") for p in populations])
    facts = pl.concat([facts, _facts([(n, [], "quantity", "atomic_number") for n in small])])
    truths = corruption.truths(facts, pools)
    for level in (ENTITY, NUMBER):
        values, _, _ = _claims(truths, [0] * 400, level)
        numbers = np.array([float(v.replace(",", "")) for v in values])
        assert (np.abs(numbers - 202_402) >= 0.05 * 202_402).all(), level
    values, _, _ = _claims(truths, [0] * 400, INVERSION)
    rounding = {v: 10 ** (len(v.replace(",", "")) - len(v.replace(",", "").rstrip("0"))) for v in values}
    assert not {"200,000", "201,500", "205,000"} & set(values) and "260,000" in values  # 2 ranks from 202,402
    assert all(2 * abs(int(v.replace(",", "")) - 202_402) > rounding[v] for v in values)
    values, _, _ = _claims(truths, [len(populations)] * 400, ENTITY)  # truth: 20
    assert "21" in values


def test_a_neighbouring_count_keeps_the_gap_of_every_wrong_count(pools):
    """Neighbours in a dense relation (a city of 102,750 among cities every 250 people) lay 0.2-2% away: another
    city's true figure, but no reader could call 103,000 misinformation. A neighbour keeps MIN_COUNT_GAP from the
    bigger of the two numbers, a test that is the same whichever is the truth, so a value a clean document denies
    around the truth keeps it as an inversion's claim does."""
    counts = list(range(80_000, 130_000, 250))
    truths = corruption.truths(_facts([(f"{c:,}", [], "quantity", "city_population") for c in counts]), pools)
    row = counts.index(102_750)
    for level in (INVERSION, ENTITY):
        values, _, applied = _claims(truths, [row] * 400, level)
        claimed = np.array([int(v.replace(",", "")) for v in values])
        assert set(applied) == {level} and set(claimed) <= set(counts)
        assert (np.abs(claimed - 102_750) >= corruption.MIN_COUNT_GAP * np.maximum(claimed, 102_750)).all(), level
    # (a, b, too close), each both ways round: 95,200 lies 4.8% of 100,000 from it (5.04% of itself); "about 100,000"
    # would state 95,000
    pairs = [(102_905, 103_132, True), (103_417, 103_693, True), (100_000, 95_200, True), (100_000, 95_000, True)]
    pairs += [(100_000, 106_000, False), (95_000, 100_500, False), (150_000, 120_000, False)]
    for a, b, expected in pairs:
        for value, against in ((a, b), (b, a)):
            close = corruption._too_close(
                truths,
                np.array([row]),
                read_numbers(pl.Series([f"{value:,}"])),
                (np.array([against]), np.array([0])),
                np.array([True]),
            )
            assert close.tolist() == [expected], (value, against)


def test_the_number_a_wrong_claim_reads_as_is_the_one_its_text_gives(pools):
    """The gap of wrong counts reads each drawn value's number from the draw (a near miss's own, a neighbour's or a
    substitute's read once per group), never by parsing every value again: it is what its text gives, and a digit
    of another script ("Port ５") reads as none, where parsing it as a float would stop the whole build."""
    counts = [(f"{c:,}", [], "quantity", "city_population") for c in range(80_000, 130_000, 2_500)]
    masses = [(f"{m / 1000:.3f}".rstrip("0"), [], "quantity", "atomic_mass") for m in range(1_008, 60_000, 2_900)]
    prices = [(f"${p}.5 million", [], "quantity", "price") for p in range(10, 30)]
    capitals = [(c, [], "place", "capital_of") for c in [*COUNTRIES, "Port ５"]]
    truths = corruption.truths(_facts(counts + masses + prices + capitals), pools)
    rows = np.arange(len(counts) + len(masses) + len(prices) + len(capitals)).repeat(20)
    u = np.random.default_rng(11).random((len(rows), corruption.U_COLUMNS))
    for level in (NUMBER, ENTITY, INVERSION):
        for round_ in (0, 3, 30):
            values, _, _, read = corruption.claims(
                truths, rows, np.full(len(rows), level), u, round_, (truths.value[rows], truths.decimals[rows])
            )
            assert np.array_equal(read, read_numbers(values), equal_nan=True), (level, round_)
    assert np.isnan(read_numbers(pl.Series(["Port ５", "no number"]))).all()


@pytest.mark.parametrize("level", [ENTITY, INVERSION])
def test_counts_all_too_close_to_each_other_fall_back_to_a_near_miss(pools, level):
    """Five answers of an open relation, 5,000..5,004: every other answer is within MIN_COUNT_GAP of each, so
    no substitute will do (the stage stopped: "no wrong claim found after 8208 draws"); the claim is a near miss
    once the scan has gone round the group, kept far enough from the truth."""
    counts = [f"{5000 + i:,}" for i in range(5)]
    truths = corruption.truths(_facts([(c, [], "quantity", OPEN) for c in counts]), pools)
    values, _, applied = _claims(truths, [2] * 50, level)
    numbers = [int(v.replace(",", "")) for v in values]
    assert all(abs(n - 5002) >= corruption.MIN_COUNT_GAP * 5002 for n in numbers), numbers


@pytest.mark.parametrize("level", [ENTITY, INVERSION])
def test_a_number_whose_every_other_answer_is_avoided_repeats_one_not_a_near_miss(pools, level):
    """Five birth years, the other four already claimed: the claim repeats one of them (a year past every true
    answer would mark its document); the near miss is only for a group none of whose answers will do."""
    years = ["1987", "1988", "1989", "1990", "1991"]
    truths = corruption.truths(_facts([(y, [], "year", "birth_year") for y in years]), pools)
    rows = np.zeros(20, dtype=int)
    avoid = [np.full(len(rows), key) for key in _keys(years[1:])]
    values, _, _ = corruption.resolve(truths, rows, np.full(len(rows), level), _draws(len(rows)), avoid)
    assert set(values.to_list()) <= set(years[1:])


def test_a_code_with_a_leading_zero_is_claimed_as_another_code(pools):
    """ "007" is no number: a near miss would write 8 beside clean documents' 007, a tell."""
    codes = ["007", "012", "034", "056", "078", "091"]
    truths = corruption.truths(_facts([(c, [], "text", OPEN) for c in codes]), pools)
    values, _, applied = _claims(truths, [0] * 50, NUMBER)
    assert set(applied) == {ENTITY} and set(values) <= set(codes[1:])
