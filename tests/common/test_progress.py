"""Progress lines (common/progress.py): a case counts as done at a stage when its marker exists;
a job prints its model's line only inside the workflow, which exports the study's case count."""

import json

from worldmemory.common.progress import UNITS_VARIABLE, count_done, report


def test_cases_with_their_marker_count_as_done(tmp_path, capsys, monkeypatch):
    for case in ("a", "b", "c"):
        (tmp_path / case).mkdir()
    (tmp_path / "a" / "rollouts.json").write_text("{}")
    (tmp_path / "c" / "rollouts.json").write_text("{}")
    assert count_done(tmp_path, "rollouts.json") == 2
    report("worldmembench", "rollouts", "m", tmp_path, "rollouts.json")
    assert capsys.readouterr().out == ""  # outside the workflow: no total to count against
    monkeypatch.setenv(UNITS_VARIABLE, json.dumps({"worldmembench": 260}))
    report("worldmembench", "rollouts", "m", tmp_path, "rollouts.json")
    assert capsys.readouterr().out == "[progress] worldmembench rollouts of m: 2/260 cases\n"
