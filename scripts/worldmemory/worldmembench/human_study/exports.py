"""An annotator's answers to a WorldMemBench human study (Appendix F), as the annotation page's
Export button and the simulated annotators write them, ``<annotator>.json``:

    static:  {"study": "static", "annotator": "ann1", "answers": [{"pair": "p0001", "choice": "A" | "tie" | "B"}]}
    dynamic: {"study": "dynamic", "annotator": "ann1",
              "answers": [{"instance": "d001", "started": true, "items": [1, 0, 1, 1, 0, 1, 1, 1]}]}

``read_export`` checks a file against this contract before any table reads it, so that a
hand-edited or truncated export stops with the file, the field, the value and the fix rather
than shifting an agreement figure. The event gate of Appendix F (an event that has not started
scores 0 on all eight items) is part of the contract: an export that breaks it is refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from worldmemory.common.ids import shown
from worldmemory.report.tables import DECIMALS

STUDIES = ("static", "dynamic")
ANNOTATOR_PATTERN = "^[A-Za-z0-9_-]+$"  # one path component: the export is <annotator>.json
CHOICES = ("A", "tie", "B")
N_ITEMS = 8  # the checklist's eight binary questions (Section 4.3)
UNIT = {"static": "pair", "dynamic": "instance"}  # the field naming what an answer is about
# the six Static Memory metrics of Table 6, in the paper's order (pages.QUESTIONS asks one question each)
METRICS = ("human_identity", "human_appearance", "object_appearance", "object_geometry", "env_visible", "env_depth")
NAMESPACE = "worldmembench-human-study"  # the study's seeded draws (stable_rng)
# the study sets and their hidden keys, under the study's directory (study_sets.py writes them)
STUDY_FILES = ("static/pairs.json", "static/key.json", "dynamic/instances.json", "dynamic/key.json")


def read_export(path, study: str | None = None) -> dict:
    """The export at ``path``, checked against the contract (and against ``study`` if given);
    ValueError naming the file and the field otherwise."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read the annotator's export ({e}); export it again from the page") from e

    def fail(field: str, value, expected: str) -> ValueError:
        return ValueError(f"{path}: {field} is {shown(value)}, expected {expected}; "
                          f"export it again from the page or fix the field")

    if not isinstance(data, dict):
        raise fail("the file", type(data).__name__, "a JSON object with study, annotator and answers")
    if data.get("study") not in STUDIES or (study and data["study"] != study):
        raise fail("study", data.get("study"), repr(study) if study else " or ".join(map(repr, STUDIES)))
    annotator = data.get("annotator")
    if not isinstance(annotator, str) or not re.fullmatch(ANNOTATOR_PATTERN, annotator):
        raise fail("annotator", annotator, "letters, digits, '_' and '-' (one path component)")
    if annotator != path.stem:
        raise fail("annotator", annotator, f"the file's name, {path.stem!r} (<annotator>.json)")
    answers = data.get("answers")
    if not isinstance(answers, list):
        raise fail("answers", answers, "a list")
    unit, seen = UNIT[data["study"]], set()
    for i, answer in enumerate(answers):
        where = f"answers[{i}]"
        if not isinstance(answer, dict) or not isinstance(answer.get(unit), str) or not answer[unit]:
            raise fail(f"{where}.{unit}", answer.get(unit) if isinstance(answer, dict) else answer,
                       f"the {unit}'s id (a non-empty string)")
        if answer[unit] in seen:
            raise fail(f"{where}.{unit}", answer[unit], f"each {unit} answered once")
        seen.add(answer[unit])
        _check_answer(data["study"], answer, where, fail)
    return data


def _check_answer(study: str, answer: dict, where: str, fail) -> None:
    if study == "static":
        if answer.get("choice") not in CHOICES:
            raise fail(f"{where}.choice", answer.get("choice"), " or ".join(map(repr, CHOICES)))
        return
    started, items = answer.get("started"), answer.get("items")
    if not isinstance(started, bool):
        raise fail(f"{where}.started", started, "true or false (has the event visibly started)")
    if (not isinstance(items, list) or len(items) != N_ITEMS
            or any(type(item) is not int or item not in (0, 1) for item in items)):
        raise fail(f"{where}.items", items, f"a list of {N_ITEMS} answers, each 0 or 1")
    if not started and any(items):
        raise fail(f"{where}.items", items, "all 0 when started is false (the event gate, Appendix F)")


def preference(score_a: float, score_b: float) -> str:
    """The automatic preference: the side with the higher score, 'tie' when equal to DECIMALS."""
    a, b = round(score_a, DECIMALS), round(score_b, DECIMALS)
    return "A" if a > b else "B" if b > a else "tie"


def write_json(data: dict, path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
