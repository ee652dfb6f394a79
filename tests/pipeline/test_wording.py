import re

from pipeline import wording


def test_every_claim_sentence_cites_an_authority_and_denies_a_value():
    """Clean documents and every corruption kind draw from the same claim sentences: neither an authority nor a
    denial marks a document as coherent or inverted."""
    for frame in wording.FRAMES:
        assert re.search(r"\{c\}|\{C\}", frame) and re.search(r"\{cd\}|\{Cd\}", frame)
        assert all("{" + slot + "}" in frame for slot in ("body", "year", "report"))


def test_every_report_reads_right_in_every_sentence_naming_it():
    """Never "Later editions of the reference edition": no report repeats a word of the sentence around it."""
    for template in (*wording.FRAMES, *wording.CORROBORATIONS):
        if "{report}" not in template:
            continue
        words = set(re.findall(r"[a-z]+", template.replace("{report}", " ").lower()))
        for report in wording.REPORTS:
            stems = {word.rstrip("s") for word in words}
            assert not {word.rstrip("s") for word in report.split()} & stems, (template, report)


def test_every_topic_has_bodies_enough_for_an_episode():
    assert set(wording.BODIES) == set(wording.FILLERS)
    for names in wording.BODIES.values():
        assert len(names) == len(set(names)) >= 13
        assert not set(names) & set(wording.FIGURE_BODIES)
