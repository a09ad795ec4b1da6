"""The reference models read as designed at every revisit, through the real pipeline (issue:
benchmark fidelity). Cases *_002 are used by no other test: embedded cases rendered, rolled out by
the three memory reference models, scored by the oracle (static family), R_k per revisit
(revisits.revisit_scores), on a shorter frame budget than the main job (same geometry, 24-frame
moves instead of 50). The perfect model's floor is also read on ten more cases (DRAWN), since one
case per family hid how low small objects read (issue 28)."""

import math

import pandas as pd
import pytest
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.worldmembench import score
from worldmemory.worldmembench.cases import write_embedded_case
from worldmemory.worldmembench.revisits import CROSS_AXIS, revisit_scores
from worldmemory.worldmembench.rollout import write_rollouts
from worldmemory.worldmembench.tables import STATIC

ENTITY = ["LRLR", "LRLRLR", "LRUD", "translation"]
TRAJECTORIES = {"human": ENTITY, "object": ENTITY, "environment": ["LRLR", "LRLRLR", "LRUD"],
                "dynamic": ["LR-Hold"]}
PARAMS = {"n_frames": 121, "hold_frames": 16, "final_hold_frames": 9}
MODELS = ("omniscient", "drifting", "amnesic")  # in their designed order
CASES = ("human_002", "object_002", "environment_002")
# Drawn once: np.random.default_rng(28).choice(np.arange(3, 60), 3, replace=False) per family, in
# this order (ids 000-002 serve other tests), plus object_009, which issue 28 found below the
# former floor. Rolled out by the perfect model alone on LRUD and translation: for a perfect memory
# every return of LRLR and LRLRLR repeats LRUD's first (the horizontal sweep back), so these two
# read every return the floor depends on, at about 1.2 s a case.
DRAWN = ("human_015", "human_039", "human_050", "object_004", "object_045", "object_046", "object_009",
         "environment_021", "environment_023", "environment_048")
DRAWN_TRAJECTORIES = {family: [t for t in ("LRUD", "translation") if t in names]
                      for family, names in TRAJECTORIES.items()}


def write_cases(out_dir, case_ids, trajectories):
    for case_id in case_ids:
        family = case_id.rsplit("_", 1)[0]
        write_embedded_case(out_dir / case_id, case_id, family, None, 128, 96, trajectories[family], PARAMS)


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    root = tmp_path_factory.mktemp("calibration")
    write_cases(root / "cases", CASES, TRAJECTORIES)
    parts = []
    for model in MODELS:
        write_rollouts(root / "cases", model, "reference", {}, PARAMS, root / model)
        parts.append(score.score_model(root / "cases", root / model, "static", ColourGradientPatches()))
    return pd.concat(parts, ignore_index=True)


def revisit_table(scores):
    """{(trajectory, metric, k): {model: R_k}} over the trajectories and metrics with values."""
    table = {}
    for trajectory in ENTITY:
        for row in revisit_scores(scores, trajectory).itertuples():
            if not math.isnan(row.score):
                table.setdefault((trajectory, row.metric, row.revisit), {})[row.model] = row.score
    return table


def test_every_static_metric_is_read_at_every_revisit(scores):
    table = revisit_table(scores)
    metrics = {metric for _, metric, _ in table}
    assert metrics == set(STATIC) - {"human_identity"}  # no faces on the procedural people
    for (trajectory, metric, k), by_model in table.items():
        assert set(by_model) == set(MODELS), (trajectory, metric, k)
    assert {k for t, _, k in table if t == "LRLRLR"} == {1, 2, 3}


@pytest.fixture(scope="module")
def perfect_scores(tmp_path_factory, scores):
    """The omniscient model's rows on CASES and DRAWN."""
    root = tmp_path_factory.mktemp("perfect")
    write_cases(root / "cases", DRAWN, DRAWN_TRAJECTORIES)
    write_rollouts(root / "cases", "omniscient", "reference", {}, PARAMS, root / "omniscient")
    drawn = score.score_model(root / "cases", root / "omniscient", "static", ColourGradientPatches())
    return pd.concat([scores[scores["model"] == "omniscient"], drawn], ignore_index=True)


# The perfect model's floor at 128 x 96 per (metric, rotation or translation): its lowest R_k over
# CASES and DRAWN less 0.01, rounded down to 0.01. The objects are 11-25 px wide: Object Geometry
# quantises their silhouettes, and a sphere seen off-axis is an ellipse (lowest 0.906, object_045, a
# 15 px sphere 17 degrees left of the axis); the hand-made descriptor's 14 px cells take in more or
# less background as an object moves across them (Object Appearance lowest 0.967, object_004); a
# translation also shows other faces (0.881, object_046; 0.949, object_045). The main job's 50-frame
# moves read 0.898, 0.875, 0.964 and 0.949 on these cases, within the same floors. docs/design.md "WorldMemBench".
FLOOR = {("object_geometry", "rotation"): 0.89, ("object_geometry", "translation"): 0.87,
         ("object_appearance", "rotation"): 0.95, ("object_appearance", "translation"): 0.93}
PERFECT = 0.99  # every other static metric
GEOMETRY_TOLERANCE = 0.06  # a pixel column more or less moves a 9-25 px silhouette's IoU by 3-5%


def test_perfect_memory_reads_its_floor_on_every_case_and_revisit(perfect_scores):
    """Omniscient >= FLOOR (Object Geometry and Appearance) or PERFECT (every other static metric)
    on every case, trajectory and revisit; an invalid revisit scores 0 (Eq. 1), so it fails too."""
    low, read = {}, set()
    for case, rows in perfect_scores.groupby("case"):
        for trajectory in ENTITY:
            kind = "translation" if trajectory == "translation" else "rotation"
            for row in revisit_scores(rows, trajectory).itertuples():
                if math.isnan(row.score):
                    continue
                read.add(case)
                if row.score < FLOOR.get((row.metric, kind), PERFECT):
                    low[(case, trajectory, row.metric, row.revisit)] = round(row.score, 3)
    assert read == set(CASES + DRAWN)
    assert not low


def test_the_designed_order_holds_at_every_revisit_slot(scores):
    """omniscient >= drifting >= amnesic at every (trajectory, metric, revisit); Object Geometry's
    drift is within a pixel column, so there only the perfect model beats the amnesic one."""
    broken = {}
    for key, by_model in revisit_table(scores).items():
        omniscient, drifting, amnesic = (by_model[m] for m in MODELS)
        ordered = omniscient > amnesic if key[1] == "object_geometry" else omniscient >= drifting >= amnesic
        if not ordered:
            broken[key] = by_model
    assert not broken


def test_forgetting_shows_on_translation(scores):
    """Section 3.3: the loop takes every target out of view, so the amnesic model forgets."""
    table = revisit_table(scores)
    for metric in ("human_appearance", "object_appearance", "object_geometry"):
        assert table[("translation", metric, 1)]["amnesic"] < table[("translation", metric, 1)]["omniscient"], metric


def test_perfect_memory_has_no_revisit_or_cross_axis_effect(scores):
    """d = R_1 - R_2 and Delta_axis = d_LRUD - d_LRLR within 0.02 of 0 for omniscient (Table 10)."""
    table = revisit_table(scores)
    d = {t: {m: table[(t, m, 1)]["omniscient"] - table[(t, m, 2)]["omniscient"]
             for (tt, m, k) in table if tt == t and k == 1} for t in CROSS_AXIS}
    assert d["LRLR"] and set(d["LRLR"]) == set(d["LRUD"])
    for metric in d["LRLR"]:
        tolerance = GEOMETRY_TOLERANCE if metric == "object_geometry" else 0.02
        assert abs(d["LRLR"][metric]) <= tolerance and abs(d["LRUD"][metric]) <= tolerance, metric
        assert abs(d["LRUD"][metric] - d["LRLR"][metric]) <= tolerance, metric
