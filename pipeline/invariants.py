"""The dataset's invariants (README: The episode) as DuckDB SQL: one predicate per episode over the `checked` table.

Answers are compared after the reward's normalisation (lowercase, strip non-word characters but decimal points,
collapse whitespace), written here as SQL macros with Unicode classes so that it equals Python's `str.lower` + `\\w` +
`str.split` (tests prove it on every assigned code point). Only SQL text lives here; the validate stage runs it.
"""

from __future__ import annotations

from pipeline.schema import ANSWER_TYPES, CORRUPTION_KINDS, CORRUPTION_LEVELS, MAX_BUDGET, NUM_DOCS, TASKS


def _chars(points: list[int]) -> str:
    return "".join(f"\\x{{{p:x}}}" for p in points)


# Python's whitespace (str.isspace); every such character lies in the BMP. With NON_WORD below, the reward's
# `normalize` in the regex syntax DuckDB (RE2) and polars (Rust regex) share: \p{..} classes and \x{..} escapes.
WHITESPACE = _chars([p for p in range(0x10000) if chr(p).isspace()])
# Python lowercases a final capital sigma to ς: after a cased letter and not before one, skipping
# case-ignorable characters (Unicode SpecialCasing Final_Sigma). Cased = Lu/Ll/Lt + Other_Lowercase/Uppercase.
_CASED = r"\p{Lu}\p{Ll}\p{Lt}" + "".join(
    f"{_chars([a])}-{_chars([b])}"
    for a, b in [(0xAA, 0xAA), (0xBA, 0xBA), (0x2160, 0x217F), (0x24B6, 0x24E9)]
    + [(0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189)]
)
_CASE_IGNORABLE = r"\p{Mn}\p{Me}\p{Cf}\p{Lm}\p{Sk}" + _chars(
    [0x27, 0x2E, 0x3A, 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07]
    + [0xFF0E, 0xFF1A]
)
_FINAL_SIGMA = (
    f"CASE WHEN contains(s, 'Σ') THEN regexp_replace(s, '([{_CASED}][{_CASE_IGNORABLE}]*)Σ"
    f"([{_CASE_IGNORABLE}]*(?:[^{_CASED}{_CASE_IGNORABLE}]|$))', '\\1ς\\2', 'g') ELSE s END"
)
# What normalize strips (Python's [^\\w\\s], but a decimal point), replaced by group 1: a number with decimal points
# (between two ASCII digits) matches whole and stays, any other point or non-word character goes. One pass, since
# RE2 and Rust's regex have no lookaround.
NON_WORD = f"([0-9](?:\\.[0-9]+)+)|[^\\p{{L}}\\p{{N}}_{WHITESPACE}]"
# The reward's normalize() as DuckDB macros, in two steps so that a caller can compute the first once per
# string (a macro repeats its argument wherever its body does): lower_sigma(s), then norm_lower(x).
# norm(s) chains them. The regexp_replace calls run only where a regexp_matches (several times cheaper) finds
# something to strip or collapse: most answers need neither.
NORMALIZE_MACROS = (
    f"CREATE MACRO lower_sigma(s) AS lower({_FINAL_SIGMA})",
    "CREATE MACRO norm_lower(x) AS CASE WHEN regexp_matches(x, '[^\\p{L}\\p{N}_ ]|  |^ | $') "
    f"THEN trim(regexp_replace(regexp_replace(x, '{NON_WORD}', '\\1', 'g'), '[{WHITESPACE}]+', ' ', 'g')) ELSE x END",
    "CREATE MACRO norm(s) AS norm_lower(lower_sigma(s))",
)


def sql_literal(text: str) -> str:
    """A SQL string literal holding `text`."""
    return "'" + text.replace("'", "''") + "'"


def _sql_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(sql_literal(v) for v in values) + "]"


_LEVELS = _sql_list(CORRUPTION_KINDS[1:])
# DuckDB lists are 1-based; position p holds doc_id p - 1. On the lists of scalars (doc_corruption, doc_claims)
# per-position SQL is several times faster than list lambdas, so those checks are spelled out for each of the
# NUM_DOCS positions; the documents' fields are read in lambdas, where documents[p].content would copy each text.
_POSITIONS = range(1, NUM_DOCS + 1)
# k{p} (the normalised claim at position p) is this marker when the claim is the answer verbatim, which spares
# normalising it; normalised text never starts with a space, so the marker cannot collide.
_IS_ANSWER = "' '"
_ALIAS_SLOTS = 2


def _each(template: str) -> str:
    """SQL: `template` (with {p} = list position, {d} = doc_id) holds at every position."""
    return " AND ".join(f"coalesce({template.format(p=p, d=p - 1)}, false)" for p in _POSITIONS)


def _count(kind: str) -> str:
    """SQL: how many documents of the episode are labelled `kind`."""
    return " + ".join(f"coalesce(doc_corruption[{p}] = {sql_literal(kind)}, false)::INT" for p in _POSITIONS)


def _true(p: int) -> str:
    """SQL: the claim at position p is the answer or an alias (false when it asserts nothing)."""
    return f"coalesce(list_contains(accepted, k{p}), false)"


def _plurality() -> str:
    """SQL: more documents claim the answer than any single wrong value; the pairwise count runs only when
    the answer's votes do not already exceed all wrong claims together."""
    votes = " + ".join(f"{_true(p)}::INT" for p in _POSITIONS)
    others = " + ".join(f"(k{p} IS NOT NULL AND NOT {_true(p)})::INT" for p in _POSITIONS)
    same = [
        f"CASE WHEN k{p} IS NULL OR {_true(p)} THEN 0 ELSE "
        + " + ".join(f"coalesce(k{q} = k{p}, false)::INT" for q in _POSITIONS)
        + " END"
        for p in _POSITIONS
    ]
    return f"CASE WHEN ({votes}) > ({others}) THEN true ELSE ({votes}) > greatest({', '.join(same)}) END"


# Invariant name -> SQL over the `checked` table, true for a good episode (NULL counts as a violation).
EPISODE_INVARIANTS = {
    "eight_documents": "docs_ok",
    "corrupt_ids": f"len(corrupt_ids) BETWEEN 1 AND {len(TASKS)} AND corrupt_ids[1] >= 0 "
    f"AND corrupt_ids[len(corrupt_ids)] < {NUM_DOCS} AND "
    + " AND ".join(
        f"(len(corrupt_ids) <= {i} OR corrupt_ids[{i}] < corrupt_ids[{i + 1}])" for i in range(1, len(TASKS))
    ),
    "task_matches_corrupt_count": f"task = {_sql_list(TASKS)}[len(corrupt_ids)]",
    "doc_corruption": _each(
        f"CASE WHEN list_contains(corrupt_ids, {{d}}) THEN list_contains({_LEVELS}, doc_corruption[{{p}}]) "
        "ELSE doc_corruption[{p}] = 'none' END"
    ),
    # A corrupt document asserts a value (its claim is not NULL), and not the answer or an alias.
    "corrupt_claims_false": " AND ".join(
        f"(NOT list_contains(corrupt_ids, {p - 1}) OR (k{p} IS NOT NULL AND NOT {_true(p)}))" for p in _POSITIONS
    ),
    "clean_claims_true": " AND ".join(f"(list_contains(corrupt_ids, {p - 1}) OR {_true(p)})" for p in _POSITIONS),
    # The kinds follow the levels by rank: number and entity fall back to each other (ranks 1 and 2), inversion
    # (rank 3) and coherent (rank 4) never do, so an episode has exactly one of each of those its tier reaches.
    "corruption_levels": " AND ".join(
        f"({_count(kind)}) = (len(corrupt_ids) >= {rank + 1})::INT"
        for rank, kind in enumerate(CORRUPTION_LEVELS)
        if rank >= 2
    ),
    "number_claims_numeric": "numbers_ok",
    "documents_state_claims": "texts_ok",
    "answer_strict_plurality": _plurality(),
    "max_budget": f"max_budget = {MAX_BUDGET}",
    "answer_type": f"list_contains({_sql_list(ANSWER_TYPES)}, answer_type)",
    # The answer and every alias keep a word under the normalisation: one it empties ("?") accepts an empty submission.
    "answers_have_words": "NOT list_contains(accepted, '')",
    "ids_sorted_contiguous": "ids_ok",
}
# Invariant name -> SQL over `checked`, true for an offending episode: the episode invariants, and one that
# compares episodes (a fact's episodes all lie in one split).
EPISODE_VIOLATIONS = {
    **{name: f"NOT coalesce({sql}, false)" for name, sql in EPISODE_INVARIANTS.items()},
    "fact_in_one_split": "fact_id IN (SELECT fact_id FROM checked GROUP BY fact_id HAVING count(DISTINCT split) > 1)",
}
# Checked on the files (pipeline.filechecks), not in SQL.
FILE_INVARIANTS = (
    "manifest_ranges",
    "files_match_manifest",
    "row_groups",
    "hidden_columns_unpublished",
    "answers_match",
)
INVARIANTS = (*EPISODE_VIOLATIONS, *FILE_INVARIANTS)


def checked_sql() -> str:
    """The one pass over the `episodes` view (and the `shards` table), materialised as `checked`: everything the
    invariants and metrics read, with answers, aliases and claims normalised exactly once (a table: DuckDB would
    otherwise inline k{p} into every check that reads it). `lowered` holds lower_sigma() of each string that needs
    normalising, so norm_lower() reads a column; a claim equal to the answer needs no work."""
    lowered = ", ".join(
        [
            "lower_sigma(answer) AS l_answer",
            *(
                f"CASE WHEN len(answer_aliases) BETWEEN {j} AND {_ALIAS_SLOTS} "
                f"THEN lower_sigma(answer_aliases[{j}]) END AS l_alias{j}"
                for j in range(1, _ALIAS_SLOTS + 1)
            ),
            *(
                f"CASE WHEN doc_claims[{p}] != answer THEN lower_sigma(doc_claims[{p}]) END AS l{p}"
                for p in _POSITIONS
            ),
        ]
    )
    # Aliases as scalars (most answers have a few); longer lists are normalised unnested (`long_aliases`): a lambda
    # would compile the macros' regular expressions once per row (2.7k such rows cost a 1M build 7 s).
    aliases = "".join(
        f"WHEN len(answer_aliases) = {n} THEN [{', '.join(f'norm_lower(l_alias{j})' for j in range(1, n + 1))}] "
        for n in range(1, _ALIAS_SLOTS + 1)
    )
    accepted = (
        f"list_distinct(list_concat([{_IS_ANSWER}, norm_lower(l_answer)], "
        f"CASE WHEN len(answer_aliases) = 0 THEN []::VARCHAR[] {aliases}"
        "ELSE long_keys END))"
    )
    keys = ", ".join(
        f"CASE WHEN doc_claims[{p}] = answer THEN {_IS_ANSWER} ELSE norm_lower(l{p}) END AS k{p}" for p in _POSITIONS
    )
    # A document has a title and content, and its content states its claim; a document labelled number claims one.
    # A missing document or claim is another invariant's violation (eight_documents, *_claims_*), not these.
    # A lambda over the documents reads each one's text in place (documents[p].content copies it: 1.5x the time).
    texts = (
        "coalesce(list_bool_and(list_transform(documents, lambda d, p: coalesce(d.title != '' AND d.content != '' "
        "AND (doc_claims[p] IS NULL OR contains(d.content, doc_claims[p])), d IS NULL))), true)"
    )
    # The regular expression runs on the number documents' claims alone (inside a CASE), not on every claim.
    numbers = " AND ".join(
        f"coalesce(CASE WHEN doc_corruption[{p}] = 'number' THEN regexp_matches(doc_claims[{p}], '[0-9]') END, true)"
        for p in _POSITIONS
    )
    return f"""
    CREATE TEMP TABLE checked AS
    WITH lowered AS (
        SELECT e.*, s.split AS shard_split, s.first_id AS shard_first_id, {lowered}
        FROM episodes e LEFT JOIN shards s ON e.filename = s.file
    ), long_aliases AS (
        SELECT filename, file_row_number, list(norm(alias)) AS long_keys
        FROM (
            SELECT filename, file_row_number, unnest(answer_aliases) AS alias
            FROM episodes WHERE len(answer_aliases) > {_ALIAS_SLOTS}
        )
        GROUP BY ALL
    )
    SELECT episode_id, split, task, answer_type, source, fact_id, max_budget, corrupt_ids, doc_corruption,
        list_transform(documents, lambda d: d.doc_id)::BIGINT[] = range({NUM_DOCS})
            AND len(doc_corruption) = {NUM_DOCS} AND len(doc_claims) = {NUM_DOCS} AS docs_ok,
        list_transform(documents, lambda d: length(d.content)) AS doc_chars,
        episode_id = shard_first_id + file_row_number AND split IS NOT DISTINCT FROM shard_split
            AND answer_row IS NOT DISTINCT FROM file_row_number AS ids_ok,
        {texts} AS texts_ok, {numbers} AS numbers_ok,
        {accepted} AS accepted, {keys}
    FROM lowered LEFT JOIN long_aliases USING (filename, file_row_number)
    """
