"""pydantic's validation errors in one line, each named as the user gave it (a params key, a flag, an environment
variable): the params file, the server's settings and the demo's flags all report bad input this way."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

Location = tuple[int | str, ...]


def dotted(loc: Location) -> str:
    """A location as a params key is written: "lora.target_modules"."""
    return ".".join(map(str, loc))


def one_line(err: ValidationError, name: Callable[[Location], str] = dotted) -> str:
    """`name(loc): message (got value)` for each problem, joined by "; ". The value is left out where it is missing
    or is the whole input (a check across fields, whose message names the values); a `name` of "" drops the prefix."""
    problems = []
    for e in err.errors():
        where = name(e["loc"])
        got = "" if e["type"] == "missing" or not e["loc"] else f" (got {e['input']!r})"
        problems.append(f"{where + ': ' if where else ''}{e['msg'].removeprefix('Value error, ')}{got}")
    return "; ".join(problems)
