"""one_line: pydantic's errors as the params file, the server's settings and the demo's flags report them."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from pipeline.problems import one_line


class Model(BaseModel):
    count: int = Field(gt=0)
    name: str
    low: int = 0
    high: int = 1

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Model:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) must not exceed high ({self.high})")
        return self


def said(data: dict, name=lambda loc: "section." + ".".join(map(str, loc))) -> str:
    with pytest.raises(ValidationError) as err:
        Model.model_validate(data)
    return one_line(err.value, name)


def test_each_problem_is_named_with_the_value_given():
    assert said({"count": 0, "name": " "}) == (
        "section.count: Input should be greater than 0 (got 0); section.name: must not be blank (got ' ')"
    )


def test_a_missing_key_and_a_check_across_fields_have_no_value_to_show():
    assert said({"name": "x"}) == "section.count: Field required"
    assert said({"count": 1, "name": "x", "low": 3}, name=lambda loc: ".".join(map(str, loc))) == (
        "low (3) must not exceed high (1)"
    )
