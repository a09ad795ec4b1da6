"""The symmetric linear readouts of Appendix I (Table 9): fixed grouped folds, the encoder probe
applied to z-hat, and the probe fitted on z-hat."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from worldmemory.permanence.linear_readouts import (
    COLUMNS,
    encoder_probe_table,
    fit_probe,
    fold_of,
    grouped_cv_accuracy,
    main,
    prediction_probe_table,
    table9,
)

D = 6
SLOT_S = 2 / 7.5  # seconds per tubelet slot


def scene_ids(n: int) -> np.ndarray:
    return np.array([f"r{(4, 8)[i % 2]}_k2_s{i}" for i in range(n)])


def features(pred_of: dict[str, tuple[str, object]], n_scenes: int = 20, slots=(0,), seed: int = 0) -> dict:
    """Feature arrays as the probe writes them. References for both motions: z_absent is noise,
    z_present the same plus 5 on axis 0. ``pred_of`` maps a condition to (motion, f) with
    f(z_present, z_absent, scene index, rng) -> z-hat of that scene."""
    rng = np.random.default_rng(seed)
    scenes = scene_ids(n_scenes)
    refs = {}
    for motion in ("moving", "stationary"):
        for slot in slots:
            for scene in scenes:
                absent = rng.normal(0, 0.1, D).astype(np.float32)
                present = absent.copy()
                present[0] += 5
                refs[motion, scene, slot] = (present, absent)
    pred_rows = [(c, motion, scene, slot, f(*refs[motion, scene, slot], i, rng))
                 for c, (motion, f) in pred_of.items() for slot in slots for i, scene in enumerate(scenes)]
    keys = list(refs)
    return {
        "condition": np.array([r[0] for r in pred_rows]),
        "motion": np.array([r[1] for r in pred_rows]),
        "scene_id": np.array([r[2] for r in pred_rows]),
        "slot": np.array([r[3] for r in pred_rows], dtype=np.int64),
        "t_s": np.array([r[3] * SLOT_S for r in pred_rows]),
        "pred": np.stack([r[4] for r in pred_rows]).astype(np.float32),
        "ref_motion": np.array([k[0] for k in keys]),
        "ref_scene_id": np.array([k[1] for k in keys]),
        "ref_slot": np.array([k[2] for k in keys], dtype=np.int64),
        "ref_t_s": np.array([k[2] * SLOT_S for k in keys]),
        "z_present": np.stack([refs[k][0] for k in keys]),
        "z_absent": np.stack([refs[k][1] for k in keys]),
    }


def present(zp, za, i, rng):
    return zp


def absent(zp, za, i, rng):
    return za


def half_and_half(zp, za, i, rng):
    return zp if i % 2 else za


# -- folds ------------------------------------------------------------------------------------------
def test_fold_is_the_position_among_the_sorted_groups_modulo_five():
    groups = ["b", "a", "c", "a", "f", "e", "d", "g"]  # sorted: a b c d e f g -> 0 1 2 3 4 0 1
    assert fold_of(groups).tolist() == [1, 0, 2, 0, 0, 4, 3, 1]


def test_folds_do_not_depend_on_the_sample_order():
    groups = np.repeat(scene_ids(23), 2)
    order = np.random.default_rng(3).permutation(len(groups))
    assert np.array_equal(fold_of(groups[order]), fold_of(groups)[order])


def test_every_scene_is_in_one_fold_and_every_radius_in_every_fold():
    """60 radius-major ids: the interleaved rule puts 3 scenes of each radius in each fold."""
    ids = [f"r{r}_k2_s{s}" for r in (4, 8, 16, 32) for s in range(15)]
    groups = np.array(ids * 2)  # two rows per scene (present/absent, main/control)
    folds = fold_of(groups)
    assert all(len(set(folds[groups == g])) == 1 for g in ids)
    one_row = pd.DataFrame({"fold": folds[:60], "radius": [i.split("_")[0] for i in ids]})
    assert (one_row.groupby(["fold", "radius"]).size() == 3).all() and len(one_row.groupby(["fold", "radius"])) == 20


# -- the probe --------------------------------------------------------------------------------------
def test_probe_is_fitted_on_unscaled_features_with_c_one_half():
    """x = +a (label 1) and -a (label 0), n each: the L2 logistic optimum w solves
    w = C * 2n * a * sigmoid(-w a) in the raw units; standardising x would give a = 1 instead."""
    a, n = 0.1, 10
    X = np.r_[np.full(n, a), np.full(n, -a)][:, None]
    y = np.r_[np.ones(n), np.zeros(n)]
    w = brentq(lambda w: w - 0.5 * 2 * n * a / (1 + math.exp(w * a)), 0, 100)
    p = fit_probe(X, y).predict_proba([[a]])[0, 1]
    assert p == pytest.approx(1 / (1 + math.exp(-w * a)), abs=1e-6)
    assert p < 0.52  # the scaled fit would say 0.84


def test_accuracy_pools_the_held_out_rows_of_all_folds():
    """Six scenes, two rows each: fold 0 holds a and f, folds 1-4 one scene each. Scene f has its
    labels flipped, so fold 0 reads 2 of 4 rows and the others all theirs: pooled 10/12, where
    the mean of the fold accuracies would be 0.9."""
    groups = np.repeat(list("abcdef"), 2)
    y = np.tile([1, 0], 6)
    X = np.where(groups == "f", 1 - 2 * y, 2 * y - 1)[:, None].astype(float)
    assert grouped_cv_accuracy(X, y, groups) == pytest.approx(10 / 12)


def test_a_training_fold_with_one_class_is_refused_by_name():
    groups = np.array(["a", "b", "c", "d", "e"])  # folds 0..4
    y = np.array([0, 1, 1, 1, 1])  # fold 0 holds the only 0: its training part is all 1
    with pytest.raises(ValueError, match="fold 0"):
        grouped_cv_accuracy(np.eye(5), y, groups)


# -- (a) the encoder probe on z-hat -----------------------------------------------------------------
def test_encoder_probe_reads_present_absent_and_a_half_mixture():
    data = features({"moving": ("moving", present), "moving_never_rendered": ("moving", absent),
                     "moving_copy_last_view": ("moving", half_and_half),
                     "stationary": ("stationary", absent)}, slots=(0, 1))
    table = encoder_probe_table(data, "m")
    assert list(table.columns) == COLUMNS and set(table["model"]) == {"m"}
    cv = table[table["readout"] == "encoder_probe_cv"]
    assert len(cv) == 4 and set(cv["condition"]) == {"reference"} and (cv["value"] == 1.0).all()
    assert (cv["n_scenes"] == 20).all()
    read = table[table["readout"] == "encoder_probe_on_prediction"].set_index(["motion", "condition", "slot"])
    assert len(read) == 8 and (read["n_scenes"] == 20).all()
    for slot in (0, 1):
        assert read.loc[("moving", "moving", slot), "value"] == 1.0
        assert read.loc[("moving", "moving_never_rendered", slot), "value"] == 0.0
        assert read.loc[("moving", "moving_copy_last_view", slot), "value"] == 0.5
        assert read.loc[("stationary", "stationary", slot), "value"] == 0.0
        assert read.loc[("moving", "moving", slot), "t_s"] == pytest.approx(slot * SLOT_S)


# -- (b) the probe on z-hat -------------------------------------------------------------------------
def test_probe_on_prediction_separates_a_shifted_main_condition():
    data = features({"moving": ("moving", lambda zp, za, i, rng: rng.normal(0, 1, D) + 10),
                     "moving_never_rendered": ("moving", lambda zp, za, i, rng: rng.normal(0, 1, D))})
    table = prediction_probe_table(data, "m")
    assert table[["motion", "readout", "condition", "against", "slot", "n_scenes", "value"]].values.tolist() == [
        ["moving", "probe_on_prediction", "moving", "moving_never_rendered", 0, 20, 1.0]]


def test_probe_on_prediction_of_one_distribution_is_near_chance():
    """60 scenes, 64 dimensions of noise for both conditions: held out near 0.5 (in-sample the
    probe would fit most rows)."""
    rng = np.random.default_rng(0)
    n, dims = 60, 64
    X, y = rng.normal(size=(2 * n, dims)), np.r_[np.ones(n), np.zeros(n)]
    groups = np.r_[scene_ids(n), scene_ids(n)]
    assert 0.3 <= grouped_cv_accuracy(X, y, groups) <= 0.7


def test_identical_main_and_control_read_exactly_chance_because_a_scene_is_never_split():
    """Each scene's main and control rows are equal (scene-specific features, no signal): in one
    fold they get one prediction, one of the two right. Split by row instead, each held-out row's
    twin would sit in training with the other label, and the probe would read 0.0."""
    rng = np.random.default_rng(1)
    n, dims = 42, 64
    offsets = rng.normal(size=(n, dims))
    X, y = np.r_[offsets, offsets], np.r_[np.ones(n), np.zeros(n)]
    groups = np.r_[scene_ids(n), scene_ids(n)]
    folds = fold_of(groups)
    assert np.array_equal(folds[:n], folds[n:])
    assert grouped_cv_accuracy(X, y, groups) == 0.5
    assert grouped_cv_accuracy(X, y, np.arange(2 * n)) < 0.2  # the leak the grouping prevents


def test_only_the_pairs_in_the_data_are_read():
    data = features({"moving": ("moving", present), "moving_exit": ("moving", absent),
                     "stationary": ("stationary", present)})
    table = prediction_probe_table(data, "m")
    assert table[["condition", "against"]].values.tolist() == [["moving", "moving_exit"]]
    assert table["value"].tolist() == [1.0]


# -- Table 9 and the CLI ----------------------------------------------------------------------------
def tiny(seed: int) -> dict:
    """Slot 0: z-hat of the main conditions is z_present, of the controls z_absent; slot 1:
    every condition noise about the absent world (the ball forgotten)."""
    data = features({"moving": ("moving", present), "moving_never_rendered": ("moving", absent),
                     "stationary": ("stationary", present), "stationary_never_rendered": ("stationary", absent)},
                    n_scenes=10, slots=(0, 1), seed=seed)
    late = data["slot"] == 1
    data["pred"][late] = np.random.default_rng(seed).normal(0, 0.1, (late.sum(), D)).astype(np.float32)
    return data


def test_cli_writes_table9(tmp_path, capsys):
    paths = []
    for seed, name in enumerate(["vith", "toy"]):
        paths.append(tmp_path / f"{name}.npz")
        np.savez(paths[-1], **tiny(seed))
    out = tmp_path / "t" / "table9.csv"
    main(["--features", *map(str, paths), "--out", str(out)])
    table = pd.read_csv(out, keep_default_na=False)
    assert list(table.columns) == COLUMNS
    assert list(table["model"].unique()) == ["toy", "vith"]
    # per model: 2 motions x 2 slots x (cv + 2 conditions) + 2 pairs x 2 slots
    assert len(table) == 2 * (2 * 2 * 3 + 2 * 2)
    assert table.equals(table.sort_values(["model", "motion", "readout", "condition", "against", "slot"]))
    for model in ("toy", "vith"):
        rows = table[table["model"] == model].set_index(["readout", "condition", "against", "slot"])["value"]
        assert rows[("encoder_probe_cv", "reference", "", 0)].tolist() == [1.0, 1.0]
        assert rows[("encoder_probe_on_prediction", "moving", "", 0)] == 1.0
        assert rows[("encoder_probe_on_prediction", "moving", "", 1)] == 0.0
        assert rows[("encoder_probe_on_prediction", "stationary_never_rendered", "", 0)] == 0.0
        assert rows[("probe_on_prediction", "moving", "moving_never_rendered", 0)] == 1.0
        assert rows[("probe_on_prediction", "stationary", "stationary_never_rendered", 0)] == 1.0
        assert rows[("probe_on_prediction", "moving", "moving_never_rendered", 1)] <= 0.8
    assert set(table["t_s"].round(2)) == {0.0, 0.27}
    printed = capsys.readouterr().out
    assert "probe_on_prediction" in printed and "0.27" in printed


def test_table9_rounds_and_sorts():
    data = features({"moving": ("moving", half_and_half), "moving_never_rendered": ("moving", absent)}, n_scenes=7)
    table = table9({"b": data, "a": data})
    assert list(table["model"]) == ["a"] * (len(table) // 2) + ["b"] * (len(table) // 2)
    assert table.loc[table["condition"] == "moving", "value"].iloc[0] == round(3 / 7, 6)
