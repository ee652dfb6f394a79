"""The named chemical elements from periodictable (public domain, pinned): symbols, numbers, masses.

Element names are written in lower case as English prose writes them ("the atomic number of iron"); documents
capitalise a name that opens a sentence or a title.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import periodictable
import polars as pl

from pipeline.sources.common import FactRows

SOURCE = "elements"
# The British spelling of a name is as true as periodictable's American one, and tungsten's other name (its symbol's).
OTHER_SPELLINGS = {"aluminum": ["aluminium"], "cesium": ["caesium"], "sulfur": ["sulphur"], "tungsten": ["wolfram"]}


def atomic_mass(mass: float) -> tuple[str, list[str]]:
    """Three decimals at most ('1.008', '4.003', '22.99'); the roundings to two, one and no decimals are aliases, each
    also as tables print it, its zeros kept ('22.990', '23.0'): iron's '55.845', '55.85', '55.8', '56'. Rounded half
    up from the decimal the table gives: the float 50.9415 lies below its half, and vanadium's mass came out 50.941
    where every table writes 50.942."""

    def printed(places: int) -> str:
        return f"{Decimal(repr(mass)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):f}"

    forms = [printed(places) for places in (3, 2, 1, 0)]
    plain = [form.rstrip("0").rstrip(".") if "." in form else form for form in forms]  # "22.990": "22.99"
    return plain[0], [alias for alias in dict.fromkeys(plain + forms) if alias != plain[0]]


def facts() -> pl.DataFrame:
    rows = FactRows(SOURCE)
    for element in periodictable.elements:
        if element.number < 1:  # the table's entry 0 is the free neutron, not an element
            continue
        name, symbol = element.name, element.symbol
        number, spellings = str(element.number), OTHER_SPELLINGS.get(element.name, [])
        facts = [
            ("element_symbol", name, f"What is the chemical symbol of {name}?", symbol, [], "text"),
            ("atomic_number", name, f"What is the atomic number of {name}?", number, [], "quantity"),
            ("symbol_element", symbol, f"Which element has the chemical symbol {symbol}?", name, spellings, "text"),
        ]
        # 34 elements (Tc, Pm, Am, Db, ...) have no standard atomic weight; periodictable gives the mass number of one
        # isotope, which newer tables replace (dubnium: 262, now 268): no one mass is true, so none is asked.
        if not element.mass.is_integer():
            mass, mass_aliases = atomic_mass(element.mass)
            facts.append(("atomic_mass", name, f"What is the atomic mass of {name}?", mass, mass_aliases, "quantity"))
        for relation, subject, question, answer, aliases, kind in facts:
            rows.add(f"{SOURCE}:{relation}:{symbol}", relation, subject, question, answer, aliases, kind)
    return rows.frame()
