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
# The standard atomic weights that NIST's "Atomic Weights and Isotopic Compositions" (Coursey et al.) printed from
# IUPAC's tables of 2001-2005, and periodictable up to 1.6.1, where they differ from periodictable's (IUPAC 2021,
# abridged): what most textbooks and periodic tables still print (hydrogen 1.00794, chlorine 35.453, argon 39.948),
# as true an answer as the current value. No corrupt claim comes near one: the nearest lies 1.4% from its answer.
EARLIER_MASSES = {
    "H": "1.00794", "Li": "6.941", "Be": "9.012182", "B": "10.811", "C": "12.0107", "N": "14.0067", "O": "15.9994",
    "F": "18.9984032", "Na": "22.989770", "Al": "26.981538", "Si": "28.0855", "P": "30.973761", "S": "32.065",
    "Cl": "35.453", "Ar": "39.948", "Sc": "44.955910", "Mn": "54.938049", "Co": "58.933200", "Zn": "65.409",
    "Ge": "72.64", "As": "74.92160", "Se": "78.96", "Y": "88.90585", "Nb": "92.90638", "Mo": "95.94",
    "Rh": "102.90550", "Cd": "112.411", "Cs": "132.90545", "La": "138.9055", "Pr": "140.90765", "Nd": "144.24",
    "Tb": "158.92534", "Ho": "164.93032", "Tm": "168.93421", "Yb": "173.04", "Lu": "174.967", "Hf": "178.49",
    "Ta": "180.9479", "Pt": "195.078", "Au": "196.96655", "Hg": "200.59", "Tl": "204.3833", "Bi": "208.98038",
    "Th": "232.0381",
}  # fmt: skip
# The British spelling of a name is as true as periodictable's American one, and tungsten's other name (its symbol's).
OTHER_SPELLINGS = {"aluminum": ["aluminium"], "cesium": ["caesium"], "sulfur": ["sulphur"], "tungsten": ["wolfram"]}


def atomic_mass(mass: float, earlier: str | None = None) -> tuple[str, list[str]]:
    """Three decimals at most ('1.008', '4.003', '22.99'). The aliases are the mass rounded to every number of
    decimals from the table's own (three at least) to none, each also as tables print it, its zeros kept: sodium's
    '22.98976928', '22.98977', '22.990', '23'; and so is `earlier`, the mass an older table printed (chlorine's
    35.453 beside 35.45). Rounded half up from the decimal the table gives: the float 50.9415 lies below its half, and
    vanadium's mass came out 50.941 where every table writes 50.942."""
    forms = _roundings(repr(mass))
    answer = _plain(forms[-4])  # three decimals
    forms += _roundings(earlier) if earlier else []
    return answer, [alias for alias in dict.fromkeys([*map(_plain, forms), *forms]) if alias != answer]


def _roundings(value: str) -> list[str]:
    """`value` rounded half up to each number of decimals from its own (three at least) down to none."""
    exact = Decimal(value)
    places = max(-exact.as_tuple().exponent, 3)
    return [f"{exact.quantize(Decimal(1).scaleb(-p), rounding=ROUND_HALF_UP):f}" for p in range(places, -1, -1)]


def _plain(form: str) -> str:
    """A decimal without its trailing zeros: '22.990' is '22.99', '23.0' is '23'."""
    return form.rstrip("0").rstrip(".") if "." in form else form


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
            mass, mass_aliases = atomic_mass(element.mass, EARLIER_MASSES.get(symbol))
            facts.append(("atomic_mass", name, f"What is the atomic mass of {name}?", mass, mass_aliases, "quantity"))
        for relation, subject, question, answer, aliases, kind in facts:
            rows.add(f"{SOURCE}:{relation}:{symbol}", relation, subject, question, answer, aliases, kind)
    return rows.frame()
