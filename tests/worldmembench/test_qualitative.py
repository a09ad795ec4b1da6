"""The qualitative figures' choices (worldmembench/qualitative.py): which frames, which scores, which
cases. The layout on real rollouts is tested on the tiny workflow run
(tests/workflow/test_worldmembench_workflow.py)."""

import math

import pandas as pd
import pytest
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.qualitative import Column, columns, figure_selection, score_labels

PARAMS = {"n_frames": 241, "hold_frames": 32, "final_hold_frames": 9}
CASES = {  # the embedded default's plan, sorted by id as the workflow lists it
    "dynamic_000": {"family": "dynamic", "trajectories": ["LR-Hold"]},
    "environment_000": {"family": "environment", "trajectories": ["LRLR", "LRLRLR"]},
    "human_000": {"family": "human", "trajectories": ["LRLR", "LRLRLR", "LRUD"]},
    "human_001": {"family": "human", "trajectories": ["LRLR"]},
    "object_000": {"family": "object", "trajectories": ["LRLR", "translation"]},
}
MODELS = ["omniscient", "amnesic"]
RUNS = {"omniscient": {}, "amnesic": {}, "omniscient.replay": {}}


def test_columns_are_the_initial_frame_the_turn_point_and_each_return():
    """V = [0, 32), D1 = [32, 82), R1 = [82, 132), D2, R2 = [182, 232), H = [232, 241)."""
    lrlr = tj.build("LRLR", **PARAMS)
    assert columns(lrlr, "human") == [Column("initial", 0), Column("departure", 81), Column("R1", 131, 1),
                                      Column("R2", 231, 2)]
    assert [c.frame for c in columns(tj.build("LRLRLR", **PARAMS), "object")] == [0, 81, 131, 231, 331]


def test_a_dynamic_case_shows_the_hold_it_leaves_and_the_final_state():
    """Figure 10's LR-Hold: the last frame of the initial hold, the turn point, the return, the end."""
    assert columns(tj.build("LR-Hold", **PARAMS), "dynamic") == [
        Column("initial hold", 31), Column("departure", 81), Column("R1", 131, 1), Column("final hold", 240)]


def _rows(metric, target, revisit, value, valid=True):
    return {"model": "m", "case": "c", "family": "human", "trajectory": "LRLR", "metric": metric,
            "target": target, "revisit": revisit, "value": value, "valid": valid, "reason": ""}


def test_revisit_labels_average_targets_and_score_an_unseen_one_zero():
    """R_k of one rollout (Eq. 1 with K = 1): (0.9 + 0) / 2 at R1, where person_1 was not seen; a
    valid NaN (no face backend) reads n/a, never 0."""
    scores = pd.DataFrame([
        _rows("human_appearance", "person_0", 1, 0.9), _rows("human_appearance", "person_1", 1, math.nan, False),
        _rows("human_appearance", "person_0", 2, 0.8), _rows("human_appearance", "person_1", 2, 0.6),
        *(_rows("human_identity", t, k, math.nan) for t in ("person_0", "person_1") for k in (1, 2)),
    ])
    assert score_labels(scores, "human", "LRLR") == {1: "Id n/a · App 0.45", 2: "Id n/a · App 0.70"}


def test_dynamic_labels_are_the_gated_checklist_scores_in_two_lines():
    rows = [{**_rows(m, "", 0, v), "trajectory": "LR-Hold"} for m, v in (
        ("dyn_return_progress", 1.0), ("dyn_persistence_reset", 0.5), ("dyn_final_state", 0.0),
        ("dyn_causal_physical", 1.0), ("dyn_overall", 0.625), ("dyn_started", 1.0))]
    assert score_labels(pd.DataFrame(rows), "dynamic", "LR-Hold") == {
        1: "Prog. 1.00 · Persist. 0.50 · Final 0.00\nPhys. 1.00 · Overall 0.62"}


def test_defaults_are_one_case_per_family_every_model_and_the_papers_three_revisits():
    chosen = figure_selection({}, CASES, MODELS, RUNS)
    assert chosen == {"dynamic_000": ("LR-Hold", MODELS), "environment_000": ("LRLRLR", MODELS),
                      "human_000": ("LRLRLR", MODELS), "object_000": ("LRLR", MODELS)}
    configured = {"cases": ["human_001", "human_000"], "models": ["omniscient.replay"],
                  "trajectories": {"human_000": "LRUD"}}
    assert figure_selection(configured, CASES, MODELS, RUNS) == {
        "human_001": ("LRLR", ["omniscient.replay"]), "human_000": ("LRUD", ["omniscient.replay"])}


@pytest.mark.parametrize("figures, named", [
    ({"cases": ["human_999"]}, "worldmembench.figures.cases: 'human_999' is not one of this config's cases"),
    ({"cases": ["../human_000"]}, "worldmembench.figures.cases: id '../human_000' is not a valid id"),
    ({"models": ["drifting"]}, "worldmembench.figures.models: 'drifting' is not one of this config's models"),
    ({"cases": ["human_000"], "trajectories": {"human_000": "LR-Hold"}},
     "worldmembench.figures.trajectories.human_000 = 'LR-Hold': expected a case of worldmembench.figures.cases"),
])
def test_a_bad_figure_config_is_refused_naming_the_key_and_the_value(figures, named):
    with pytest.raises(ValueError, match="fix") as refused:
        figure_selection(figures, CASES, MODELS, RUNS)
    assert named in str(refused.value)
