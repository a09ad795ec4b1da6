"""An annotator's answers to a WorldMemBench human study (Appendix F), as the annotation page's
Export button and the simulated annotators write them, ``<annotator>.<study>.json``:

    static:  {"study": "static", "study_set": "<sha256>", "annotator": "ann1",
              "answers": [{"pair": "p0001", "choice": "A" | "tie" | "B"}]}
    dynamic: {"study": "dynamic", "study_set": "<sha256>", "annotator": "ann1",
              "answers": [{"instance": "d001", "started": true, "items": [1, 0, 1, 1, 0, 1, 1, 1]}]}

``study_set`` is the sha256 of the study-set file (static/pairs.json, dynamic/instances.json) the
page was built from (``file_digest``); the key records it too, so that exports are never read
against another draw of the study (another seed's pairs). ``items`` are the annotator's answers to
the eight checklist questions as asked, Yes = 1 and No = 0; the expected answers are in the key.
A browser that finds the name taken saves ``ann1.static (1).json``: the reader accepts that name.

``read_export`` checks a file against this contract and ``read_exports`` a directory of them
against the study set, before any table reads them, so that a hand-edited, truncated, misplaced or
duplicated export stops with the file, the field, the value and the fix rather than shifting an
agreement figure. The event gate of Appendix F (an event that has not started scores 0 on all
eight items) is part of the contract: an export that breaks it is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from worldmemory.common.ids import shown
from worldmemory.report.tables import DECIMALS

STUDIES = ("static", "dynamic")
# an annotator's name: one path component of the export's name (page/annotate.js asks for the same)
ANNOTATOR = re.compile(r"[A-Za-z0-9_-]+")
# <annotator>.<study>.json, or the browser's renamed copy <annotator>.<study> (1).json
EXPORT_NAME = re.compile(rf"(?P<annotator>{ANNOTATOR.pattern})\.(?P<study>static|dynamic)(?: \(\d+\))?\.json")
DIGEST = re.compile(r"[0-9a-f]{64}")
CHOICES = ("A", "tie", "B")
N_ITEMS = 8  # the checklist's eight binary questions (Section 4.3)
UNIT = {"static": "pair", "dynamic": "instance"}  # the field naming what an answer is about
# the six Static Memory metrics of Table 6, in the paper's order (pages.QUESTIONS asks one question each)
METRICS = ("human_identity", "human_appearance", "object_appearance", "object_geometry", "env_visible", "env_depth")
NAMESPACE = "worldmembench-human-study"  # the study's seeded draws (stable_rng)
# the study sets and their hidden keys, under the study's directory (study_sets.py writes them)
STUDY_FILES = ("static/pairs.json", "static/key.json", "dynamic/instances.json", "dynamic/key.json")
EVENT_FIELDS = ("initial_state", "action", "expected_next_state")  # the event as a dynamic instance words it
SET_FILES = {"static": "static/pairs.json", "dynamic": "dynamic/instances.json"}  # what annotators may see


def export_name(annotator: str, study: str) -> str:
    return f"{annotator}.{study}.json"


def file_digest(path) -> str:
    """The sha256 of a study-set file's bytes: the study set's identity in the key, the page and
    every export."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


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
    if not isinstance(data.get("study_set"), str) or not DIGEST.fullmatch(data["study_set"]):
        raise fail("study_set", data.get("study_set"), "the sha256 of the study set the page was built from "
                   "(pages older than this field do not write it)")
    annotator = data.get("annotator")
    if not isinstance(annotator, str) or not ANNOTATOR.fullmatch(annotator):
        raise fail("annotator", annotator, "letters, digits, '_' and '-' (one path component)")
    if name_annotator(path, data["study"]) != annotator:
        raise fail("the file's name", path.name, f"{export_name(annotator, data['study'])!r} (its annotator and "
                   f"study; a browser's renamed copy such as '{annotator}.{data['study']} (1).json' is read too)")
    answers = data.get("answers")
    if not isinstance(answers, list) or not answers:
        raise fail("answers", answers, "a non-empty list (an export with no answers counts no annotator)")
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


def name_annotator(path, study: str) -> str | None:
    """The annotator an export's file name gives (EXPORT_NAME), None if it is not an export of ``study``."""
    match = EXPORT_NAME.fullmatch(Path(path).name)
    return match["annotator"] if match and match["study"] == study else None


def read_exports(directory, study: str, set_file) -> list[dict]:
    """Every export of ``study`` in ``directory`` (its ``*.json``), each checked by read_export and
    against the study set at ``set_file``: made from it (``study_set``), answering only its ids,
    one export per annotator. ValueError naming the file and the fix otherwise."""
    directory, set_file = Path(directory), Path(set_file)
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise ValueError(f"{directory}: no annotator exports ({export_name('<annotator>', study)}) of the {study} "
                         f"study; put them there or unset worldmembench.human_study.exports to simulate them")
    digest, unit = file_digest(set_file), UNIT[study]
    ids = {entry[unit] for entry in json.loads(set_file.read_text())[f"{unit}s"]}
    exports, seen = [], {}
    for path in paths:
        match = EXPORT_NAME.fullmatch(path.name)
        if match is None or match["study"] != study:
            other = f"an export of the {match['study']} study; move it to that study's directory" if match else (
                f"not an export's name, expected {export_name('<annotator>', study)} (the page's Export) or the "
                f"browser's renamed copy '<annotator>.{study} (1).json'; rename it if it is one, or remove it")
            raise ValueError(f"{path}: {other}")
        export = read_export(path, study)
        if export["study_set"] != digest:
            raise ValueError(f"{path}: exported from the study set {export['study_set']}, but {set_file} is "
                             f"{digest}; read these exports against the study set their page was built from "
                             f"(its seed and models), or have them answered on the page built from {set_file}")
        unknown = [a[unit] for a in export["answers"] if a[unit] not in ids]
        if unknown:
            raise ValueError(f"{path}: answers {unit}s {', '.join(map(repr, unknown[:5]))}"
                             f"{' ...' if len(unknown) > 5 else ''} that {set_file} does not have; "
                             f"read it against the study set its page was built from, or remove those answers")
        if export["annotator"] in seen:
            raise ValueError(f"{path}: a second export of annotator {export['annotator']!r} (also "
                             f"{seen[export['annotator']]}); keep the one to count (the latest Export) and "
                             f"remove the other")
        seen[export["annotator"]] = path
        exports.append(export)
    return exports


def preference(score_a: float, score_b: float) -> str:
    """The automatic preference: the side with the higher score, 'tie' when equal to DECIMALS."""
    a, b = round(score_a, DECIMALS), round(score_b, DECIMALS)
    return "A" if a > b else "B" if b > a else "tie"


def write_json(data: dict, path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
