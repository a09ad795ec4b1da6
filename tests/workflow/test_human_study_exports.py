"""A real study's exports as Snakemake inputs (Appendix F, Tables 6 and 7), on
tests/config/tiny_worldmembench.yaml with worldmembench.human_study.exports set: only the tables'
rule runs (--allowed-rules), over a hand-written study set. An export corrected in place reruns
the tables with the corrected answer; a browser's second copy of an annotator's export, and
exports of another study set, stop the run naming the files."""

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "config" / "tiny_worldmembench.yaml"
TABLE6 = "results/worldmembench/table6.csv"
ITEMS = ["return_progress"] * 2 + ["persistence_reset"] * 2 + ["final_state"] * 2 + ["causal_physical"] * 2
pytestmark = pytest.mark.workflow


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _study(workdir: Path) -> dict:
    """The study set of one pair (omniscient as A, preferred) and one instance; its digests."""
    study = workdir / "results" / "worldmembench" / "human_study"
    pairs = _write(study / "static/pairs.json", {"study": "static", "pairs": [
        {"pair": "p0001", "metric": "human_appearance"}]})
    instances = _write(study / "dynamic/instances.json", {"study": "dynamic", "instances": [
        {"instance": "d001", "questions": [{"aspect": a, "text": "?"} for a in ITEMS]}]})
    _write(study / "static/key.json", {"study": "static", "seed": 0, "study_set": _digest(pairs), "pairs": [
        {"pair": "p0001", "model_a": "omniscient", "model_b": "amnesic", "score_a": 1.0, "score_b": 0.0,
         "automatic": "A"}]})
    _write(study / "dynamic/key.json", {"study": "dynamic", "seed": 0, "study_set": _digest(instances),
                                        "instances": [{"instance": "d001", "model": "omniscient",
                                                       "expected": [1, 0] * 4,
                                                       "judge": {"started": True, "items": [1] * 8}}]})
    return {"static": _digest(pairs), "dynamic": _digest(instances)}


def _export(exports: Path, study: str, digest: str, answers: list, name: str = "ann1") -> Path:
    return _write(exports / study / f"{name}.{study}.json",
                  {"study": study, "study_set": digest, "annotator": "ann1", "answers": answers})


def test_an_export_corrected_in_place_reruns_the_tables_and_duplicates_are_refused(tmp_path, snakemake):
    digests = _study(tmp_path)
    exports = tmp_path / "exports"
    static = _export(exports, "static", digests["static"], [{"pair": "p0001", "choice": "A"}])
    _export(exports, "dynamic", digests["dynamic"], [{"instance": "d001", "started": True, "items": [1, 0] * 4}])
    config = yaml.safe_load(TINY.read_text())
    config["worldmembench"]["human_study"] = {"exports": str(exports)}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))

    def tables(*flags, check=True):
        return snakemake(tmp_path, tmp_path / "config.yaml", TABLE6, *flags, "--allowed-rules",
                         "worldmembench_human_tables", check=check)

    def agreement():
        return pd.read_csv(tmp_path / TABLE6).set_index("metric").loc["human_appearance", "agreement_pct"]

    tables()
    assert agreement() == 100.0
    static.write_text(static.read_text().replace('"A"', '"B"'))  # corrected in place
    assert f"Updated input files: {static}" in tables("-n").stdout
    tables()
    assert agreement() == 0.0
    assert "Nothing to be done" in tables("-n").stdout
    copy = static.with_name("ann1.static (1).json")  # the browser's second copy
    copy.write_text(static.read_text())
    failed = tables(check=False)
    assert failed.returncode != 0
    assert f"{static}: a second export of annotator 'ann1' (also {copy})" in failed.stdout + failed.stderr
    copy.unlink()
    _export(exports, "static", "0" * 64, [{"pair": "p0001", "choice": "A"}])  # another study set's
    failed = tables(check=False)
    assert (f"{static}: exported from the study set {'0' * 64}, but results/worldmembench/human_study/static/"
            f"pairs.json is {digests['static']}") in failed.stdout + failed.stderr
