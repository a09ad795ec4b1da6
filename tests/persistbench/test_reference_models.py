"""The displaced and recoloured reference models on a small synthetic 360-degree scene: each moves
one metric in a known direction, their truth is what they drew, and with them the default
config's models make the aggregation ablation's Spearman rho defined (tables.table_ablation)."""

import math
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from worldmemory.common.equirect import direction_to_lonlat, equirect_directions, perspective
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.persistbench import metrics as pm
from worldmemory.persistbench.perception import MIN_PIXELS
from worldmemory.persistbench.reference_models import frames_away, hue_rotation, run_reference
from worldmemory.persistbench.tables import table_ablation

REPO = Path(__file__).resolve().parents[2]
T, PANO_W, SIZE, FOV = 12, 256, 64, 90.0
VISIBLE = np.array([True] * 4 + [False] * 8)  # the input camera turns away on frames 4-11
RADIUS_DEG = 20.0  # the target: a striped disc at longitude 0, latitude 0


@cache
def scene():
    """(panorama, instance, background, cameras) of a static striped target on a checkered room."""
    lon, lat = (np.degrees(a) for a in direction_to_lonlat(equirect_directions(PANO_W, PANO_W // 2)))
    checker = ((lon // 10 + lat // 10) % 2)[..., None]
    background = (np.array([70, 80, 110]) + 60 * checker).astype(np.uint8)
    target = np.degrees(np.arccos(np.cos(np.radians(lat)) * np.cos(np.radians(lon)))) < RADIUS_DEG
    stripes = np.where(((lon // 4) % 2)[..., None] == 0, [220, 40, 40], [230, 200, 30])
    frame = np.where(target[..., None], stripes, background).astype(np.uint8)
    cameras = {"fov_deg": FOV, "width": SIZE, "height": SIZE, "reference_yaw": [0.0] * T,
               "reference_pitch": [0.0] * T, "input_yaw": [0.0 if v else 180.0 for v in VISIBLE],
               "input_pitch": [0.0] * T}
    return (np.repeat(frame[None], T, axis=0), np.repeat(target[None].astype(np.int16), T, axis=0),
            background, cameras)


def rollout(model, params):
    return run_reference(model, params, *scene(), 1, VISIBLE)


def score_rows(model, params) -> list[dict]:
    """metrics.sequence_rows of ``model`` scored against the omniscient view (the reference
    camera's crop) by the oracle, as score.py does."""
    reference, truth = rollout("omniscient", {})
    frames, drawn = rollout(model, params)
    ref_masks, masks = truth["instance"] == 1, drawn["instance"] == 1
    backend = ColourGradientPatches()
    per_frame = pm.frame_scores(masks.sum(axis=(1, 2)) >= MIN_PIXELS, drawn["same_entity"], masks,
                                ref_masks, pm.pooled_features(backend, frames, masks),
                                pm.pooled_features(backend, reference, ref_masks))
    return pm.sequence_rows(per_frame, VISIBLE)


def scores(model, params) -> dict:
    """(segment, metric, aggregation) -> value of ``score_rows``."""
    return {(r["segment"], r["metric"], r["aggregation"]): r["value"] for r in score_rows(model, params)}


def test_displaced_lowers_cont_below_omniscient_more_with_more_drift_and_keeps_perm():
    cont = {}
    for drift in (1.0, 3.0):
        s = scores("displaced", {"drift_deg_per_frame": drift})
        for segment in pm.SEGMENTS:
            assert s[(segment, "perm", "tracked")] == 1.0
        assert s[("visible", "cont", "tracked")] == 1.0
        assert s[("invisible", "cont", "all_frames")] == s[("invisible", "cont", "tracked")]
        cont[drift] = s[("invisible", "cont", "tracked")]
    assert cont[3.0] < cont[1.0] < 0.95
    assert scores("omniscient", {})[("invisible", "cont", "tracked")] == 1.0


def test_displaced_cont_is_that_of_the_known_centroid_offset():
    """The target turned by s degrees about the vertical sits f tan(s) px off (f: the focal
    length in px); Cont is exp(-offset / sqrt(mean reference area)) within a pixel's rounding."""
    drift = 2.0
    s = scores("displaced", {"drift_deg_per_frame": drift})
    _, truth = rollout("omniscient", {})
    scale = math.sqrt((truth["instance"] == 1).sum(axis=(1, 2)).mean())
    focal = SIZE / 2 / math.tan(math.radians(FOV / 2))
    offsets = focal * np.tan(np.radians(drift * frames_away(VISIBLE)[~VISIBLE]))
    assert s[("invisible", "cont", "tracked")] == pytest.approx(np.exp(-offsets / scale).mean(), abs=0.03)


def test_displaced_truth_is_the_target_drawn_where_it_was_moved():
    pano, instance, background, cameras = scene()
    frames, truth = rollout("displaced", {"drift_deg_per_frame": 2.0})
    drawn = truth["instance"] == 1
    away = frames_away(VISIBLE)
    columns = [np.nonzero(m)[1].mean() for m in drawn]
    assert np.diff(columns)[4:].min() > 0 and columns[3] == pytest.approx(SIZE / 2 - 0.5, abs=0.5)
    empty_room = perspective(background, 0.0, 0.0, FOV, SIZE, SIZE)
    for t in np.flatnonzero(away):
        turned = perspective(instance[t] == 1, -2.0 * away[t], 0.0, FOV, SIZE, SIZE, nearest=True)
        np.testing.assert_array_equal(drawn[t], turned)
        np.testing.assert_array_equal(frames[t][~drawn[t]], empty_room[~drawn[t]])
    assert truth["same_entity"].all()


def test_recoloured_lowers_app_more_with_a_larger_hue_turn_and_keeps_perm_and_cont():
    app = {}
    for degrees in (45.0, 180.0):
        s = scores("recoloured", {"hue_shift_deg": degrees})
        for segment in pm.SEGMENTS:
            for metric in ("perm", "cont"):
                for aggregation in pm.AGGREGATIONS:
                    assert s[(segment, metric, aggregation)] == 1.0
        assert s[("visible", "app", "tracked")] == pytest.approx(1.0, abs=1e-6)
        app[degrees] = s[("invisible", "app", "tracked")]
    assert app[180.0] < app[45.0] < 0.99
    _, omniscient = rollout("omniscient", {})
    _, truth = rollout("recoloured", {"hue_shift_deg": 120.0})
    np.testing.assert_array_equal(truth["instance"], omniscient["instance"])


def test_hue_rotation_turns_colours_about_the_grey_axis():
    assert np.allclose(hue_rotation(0.0), np.eye(3))
    assert np.allclose(hue_rotation(120.0) @ [255, 0, 0], [0, 255, 0])  # the channels cycle
    assert np.allclose(hue_rotation(77.0) @ [90, 90, 90], [90, 90, 90])  # grey stays
    assert np.allclose(hue_rotation(30.0) @ hue_rotation(30.0), hue_rotation(60.0))
    np.testing.assert_array_equal(frames_away([False, True, False, False, True]), [1, 0, 1, 2, 0])


def test_the_default_configs_models_make_the_aggregation_rho_defined():
    """tables.table_ablation needs >= 3 models with both means on a cell and a spread under each
    rule; without displaced and recoloured, Cont is 100 for every model that tracks anything."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    models = config["persistbench"]["models"]
    assert {"displaced", "recoloured"} <= set(models)
    rows = [pm.scores_frame(score_rows(spec["reference"], spec.get("params", {})), name, "static_000",
                            "static", "sphere-object")
            for name, spec in models.items() if spec["kind"] == "reference"]
    rho = table_ablation(pd.concat(rows)).drop_duplicates(["kind", "segment", "metric"])
    rho = rho.set_index(["kind", "segment", "metric"])
    for metric in ("cont", "app"):
        row = rho.loc[("all", "invisible", metric)]
        assert np.isfinite(row["rho"]) and row["n_models"] >= 3, row
    before = [r for r in rows if r["model"].iloc[0] not in ("displaced", "recoloured")]
    cont = table_ablation(pd.concat(before)).set_index(["kind", "segment", "metric"])
    cont = cont.loc[("all", "invisible", "cont")]
    assert cont["rho"].isna().all() and "same value" in cont["reason"].iloc[0]
