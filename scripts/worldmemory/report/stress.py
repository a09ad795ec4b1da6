"""The stress gallery's check: each stress model's expected reading against what was measured.

The expectations are data (worldmemory/external/stress_expectations.yaml): per study, rows of
model, column, kind (``>=``, ``<=``, ``between``, ``near``), value, an optional reference row whose
reading of the same column is the bound, and why. The studies measure the columns
(worldmembench/stress.py, persistbench/stress.py); this module writes the table both share:
per expectation the bound, the measurement and whether it holds (empty where either is NaN:
nothing was measured, which the note says).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from worldmemory.report.tables import DECIMALS

EXPECTATIONS = Path(__file__).parents[1] / "external" / "stress_expectations.yaml"
KINDS = (">=", "<=", "between", "near")
COLUMNS = ["model", "column", "expected", "reference", "bound", "measured", "holds", "why", "note"]


@dataclass(frozen=True)
class Expectation:
    """What the estimators should read of one stress model's column (module doc)."""

    model: str
    column: str
    kind: str
    value: float | list
    why: str
    reference: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"stress expectation {self.model}/{self.column}: kind {self.kind!r} is not one of "
                             f"{', '.join(KINDS)}")

    def bounds(self, reference: float = 0.0) -> tuple[float, float]:
        """The (low, high) the measurement must lie in, given the reference row's reading."""
        if self.kind == "between":
            low, high = self.value
            return float(low), float(high)
        if self.kind == "near":
            return reference - self.value, reference + self.value
        bound = reference + self.value if self.reference else self.value
        return (bound, math.inf) if self.kind == ">=" else (-math.inf, bound)

    def describe(self) -> str:
        """The expectation in words: ``>= 0.9``, ``near omniscient.replay +- 0.05``."""
        if self.kind == "between":
            return f"between {self.value[0]} and {self.value[1]}"
        if self.kind == "near":
            return f"within {self.value} of {self.reference}"
        return f"{self.kind} {self.reference + ' + ' if self.reference else ''}{self.value}"


def expectations(study: str, path: Path = EXPECTATIONS) -> list[Expectation]:
    """The study's expectations, in file order."""
    return [Expectation(**row) for row in yaml.safe_load(Path(path).read_text())[study]]


def check(expected: list[Expectation], measured: dict[str, dict[str, float]], references: dict[str, str],
          notes: dict[str, str] | None = None) -> pd.DataFrame:
    """The stress table (COLUMNS): each expectation of a model in ``measured`` (row -> column ->
    reading; the rows are the stress models and the reference rows) with its bound and whether it
    holds; ``references`` maps an expectation's reference (``omniscient.replay``) to its row in
    ``measured``; ``notes``: row -> why its readings are missing, if they are."""
    notes = notes or {}
    rows = []
    for e in expected:
        if e.model not in measured:
            continue
        value = measured[e.model].get(e.column, math.nan)
        reference = measured.get(references.get(e.reference), {}).get(e.column, math.nan) if e.reference else 0.0
        low, high = e.bounds(reference)
        unknown = math.isnan(value) or math.isnan(low) or math.isnan(high)
        note = notes.get(e.model, "") if math.isnan(value) else ""
        if math.isnan(reference):
            note = f"{e.reference} has no reading of {e.column}"
        bound = ((low + high) / 2 if e.kind == "near" else low if e.kind == ">=" else high
                 if e.kind == "<=" else math.nan)
        rows.append({"model": e.model, "column": e.column, "expected": e.describe(), "reference": e.reference or "",
                     "bound": bound, "measured": value, "holds": "" if unknown else bool(low <= value <= high),
                     "why": e.why, "note": note})
    return pd.DataFrame(rows, columns=COLUMNS).round(DECIMALS)
