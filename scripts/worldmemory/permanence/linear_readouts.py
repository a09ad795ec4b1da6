"""The symmetric linear readouts of *Tracking Is Not Permanence* (Appendix I, Table 9).

Section 4.3 asks whether a linear readout finds the hidden object in the predictor's inference
z-hat where the L1 rule of Section 3.2 does not. Appendix I reports two such readouts:

(a) *Encoder probe on z-hat*: a logistic probe fitted on the encoder's references for the hidden
    region (z_present -> 1, z_absent -> 0, one probe per motion and time point) is applied
    unchanged to z-hat of the same region; we report the fraction of scenes read as present per
    condition, next to the probe's own grouped-CV accuracy on the references.
(b) *Probe on z-hat*: a probe fitted on z-hat itself, main condition (1) against a control (0),
    per time point; we report its held-out accuracy (chance 0.5).

(The copy-last-view row of Table 9, under the L1 rule, comes from the belief probe, not from here.)

Choices, after Appendix C ("Linear probes"):

* Features are region means: the mean over the readout region's tokens of each (D,) token
  vector, because the region's token count varies with the ball radius and a probe needs one
  feature length. The probe (permanence.probe) writes them; this module only reads them.
* Probe: scikit-learn LogisticRegression, C = 0.5 (L2, intercept unpenalised), solver lbfgs
  (deterministic), max_iter 10000, tol 1e-6, on float64 copies of the features. No feature
  scaling: the probe is a linear function of the raw features, so the encoder probe applies to
  z-hat exactly as it was fitted, and the regularisation acts in the encoder's units.
* Folds: five, fixed, by group (scene id): the sorted unique scene ids, fold = position in that
  list modulo 5 (interleaved, so radius-major ids such as r16_k2_s3 spread every radius over the
  folds). Both rows of a scene (present/absent, or main/control) always share a fold. The fold
  rule is ours and not scikit-learn's because its default grouped splitter changed between
  releases and moved accuracy by up to 0.16 on identical data (Appendix C).
* Accuracy pools the held-out predictions of all five folds (correct / all rows), not the mean
  of per-fold accuracies.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from worldmemory.report.tables import DECIMALS, write_csv

N_FOLDS = 5
C = 0.5  # inverse regularisation strength, Appendix C
MAX_ITER = 10_000
TOL = 1e-6
# (main, control) pairs of the probe on z-hat (Appendix I): never-rendered for both motions, the
# exit control for the moving ball, and for a box the never-shown box and the exit control.
PAIRS = (
    ("moving", "moving_never_rendered"),
    ("moving", "moving_exit"),
    ("stationary", "stationary_never_rendered"),
    *((f"container_{m}", f"container_{m}_{c}") for m in ("moving", "stationary") for c in ("never_shown", "exit")),
)
COLUMNS = ["model", "motion", "readout", "condition", "against", "slot", "t_s", "n_scenes", "value"]
KEYS = ["model", "motion", "readout", "condition", "against", "slot"]
PRED_KEYS = ("condition", "motion", "scene_id", "slot", "t_s", "pred")
REF_KEYS = ("ref_motion", "ref_scene_id", "ref_slot", "ref_t_s", "z_present", "z_absent")


def fold_of(groups: Sequence) -> np.ndarray:
    """Fold (0..4) of each sample: the position of its group in the sorted unique groups, modulo 5
    (Appendix C, "assigned to five folds by their sorted index"). Independent of the sample order
    and of the scikit-learn version; every group lies in exactly one fold."""
    _, position = np.unique(np.asarray(groups), return_inverse=True)
    return (position.reshape(-1) % N_FOLDS).astype(np.int64)


def fit_probe(X: np.ndarray, y: np.ndarray, C: float = C) -> LogisticRegression:
    """The logistic probe of Appendix C on raw (unscaled) features."""
    probe = LogisticRegression(C=C, solver="lbfgs", max_iter=MAX_ITER, tol=TOL)
    return probe.fit(np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64))


def grouped_cv_accuracy(X: np.ndarray, y: np.ndarray, groups: Sequence, C: float = C) -> float:
    """Held-out accuracy of the probe over the five fixed grouped folds (Appendix C), pooled over
    all held-out rows. A fold with no rows is skipped; one whose training part holds a single
    class cannot be fitted and raises ValueError."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)
    folds = fold_of(groups)
    if not (len(X) == len(y) == len(folds)):
        raise ValueError(f"X, y and groups differ in length: {len(X)}, {len(y)}, {len(folds)}")
    predicted = np.empty_like(y)
    for fold in range(N_FOLDS):
        test = folds == fold
        if not test.any():
            continue
        classes = np.unique(y[~test])
        if len(classes) < 2:
            raise ValueError(f"fold {fold}: its training part holds only class {classes.tolist()}; "
                             "a probe needs both classes")
        predicted[test] = fit_probe(X[~test], y[~test], C).predict(X[test])
    return float(np.mean(predicted == y))


def load_features(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of one model's feature file (written by permanence.probe), checked for the keys
    this module reads and for one reference per (motion, scene, slot)."""
    with np.load(path, allow_pickle=False) as npz:
        data = {key: npz[key] for key in npz.files}
    missing = [key for key in PRED_KEYS + REF_KEYS if key not in data]
    if missing:
        raise ValueError(f"{path}: missing arrays {missing}")
    refs = pd.DataFrame({"motion": data["ref_motion"], "scene_id": data["ref_scene_id"], "slot": data["ref_slot"]})
    if refs.duplicated().any():
        raise ValueError(f"{path}: more than one reference for some (motion, scene, slot)")
    return data


def _t_of(t_s: np.ndarray) -> float:
    """The one time of a slot's rows (equal to 6 decimals)."""
    t_s = np.asarray(t_s, dtype=np.float64)
    times = np.unique(np.round(t_s, DECIMALS))
    if len(times) != 1:
        raise ValueError(f"rows of one slot have several times: {times.tolist()}")
    return float(t_s[0])


def _row(model, motion, readout, condition, against, slot, t_s, n_scenes, value) -> dict:
    return dict(zip(COLUMNS, [model, motion, readout, condition, against, int(slot), t_s, int(n_scenes),
                              float(value)]))


def encoder_probe_table(data: Mapping[str, np.ndarray], model: str) -> pd.DataFrame:
    """Appendix I (a), per motion and slot: the grouped-CV accuracy of the encoder probe
    (z_present 1 vs z_absent 0 of all scenes; readout encoder_probe_cv, condition reference), and
    for each condition of that motion the fraction of scenes whose z-hat the probe fitted on all
    references reads as present (readout encoder_probe_on_prediction)."""
    ref_motion, ref_slot = np.asarray(data["ref_motion"]), np.asarray(data["ref_slot"])
    motion, slot, condition = np.asarray(data["motion"]), np.asarray(data["slot"]), np.asarray(data["condition"])
    rows = []
    for m, s in sorted({(str(a), int(b)) for a, b in zip(ref_motion, ref_slot)}):
        ref = (ref_motion == m) & (ref_slot == s)
        scenes = np.asarray(data["ref_scene_id"])[ref]
        X = np.concatenate([data["z_present"][ref], data["z_absent"][ref]])
        y = np.r_[np.ones(len(scenes), dtype=np.int64), np.zeros(len(scenes), dtype=np.int64)]
        groups = np.r_[scenes, scenes]
        t = _t_of(data["ref_t_s"][ref])
        n = len(np.unique(scenes))
        rows.append(_row(model, m, "encoder_probe_cv", "reference", "", s, t, n, grouped_cv_accuracy(X, y, groups)))
        probe = fit_probe(X, y)
        for c in sorted(set(condition[(motion == m) & (slot == s)].tolist())):
            sel = (condition == c) & (motion == m) & (slot == s)
            present = probe.predict(np.asarray(data["pred"][sel], dtype=np.float64)) == 1
            rows.append(_row(model, m, "encoder_probe_on_prediction", c, "", s, _t_of(data["t_s"][sel]),
                             len(np.unique(data["scene_id"][sel])), present.mean()))
    return pd.DataFrame(rows, columns=COLUMNS)


def prediction_probe_table(data: Mapping[str, np.ndarray], model: str,
                           pairs: Sequence[tuple[str, str]] = PAIRS) -> pd.DataFrame:
    """Appendix I (b), per (main, control) pair present in the data and per slot both have: the
    grouped-CV accuracy of a probe fitted on z-hat, main 1 vs control 0, grouped by scene so that
    a scene's two rows are never split (readout probe_on_prediction, condition main, against
    control)."""
    condition, slot = np.asarray(data["condition"]), np.asarray(data["slot"])
    rows = []
    for main, control in pairs:
        slots = sorted(set(slot[condition == main].tolist()) & set(slot[condition == control].tolist()))
        for s in slots:
            is_main, is_control = (condition == main) & (slot == s), (condition == control) & (slot == s)
            sel = is_main | is_control
            motions = np.unique(data["motion"][sel])
            if len(motions) != 1:
                raise ValueError(f"{main} vs {control} mixes motions {motions.tolist()}")
            X, y, groups = data["pred"][sel], is_main[sel].astype(np.int64), data["scene_id"][sel]
            rows.append(_row(model, str(motions[0]), "probe_on_prediction", main, control, s, _t_of(data["t_s"][sel]),
                             len(np.unique(groups)), grouped_cv_accuracy(X, y, groups)))
    return pd.DataFrame(rows, columns=COLUMNS)


def table9(features: Mapping[str, Mapping[str, np.ndarray]], pairs: Sequence[tuple[str, str]] = PAIRS
           ) -> pd.DataFrame:
    """Table 9 (Appendix I) as one long table from {model: feature arrays}: both readouts, with
    columns COLUMNS, rounded to 6 decimals and sorted by model, motion, readout, condition, against
    and slot."""
    parts = [table for model, data in features.items()
             for table in (encoder_probe_table(data, model), prediction_probe_table(data, model, pairs))]
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    return table.sort_values(KEYS, kind="mergesort").reset_index(drop=True).round(DECIMALS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", nargs="+", required=True,
                        help="per-model feature files (.npz) of the probe; the model is the file stem")
    parser.add_argument("--out", required=True, help="Table 9 as a long CSV")
    args = parser.parse_args(argv)

    stems = [Path(path).stem for path in args.features]
    if len(set(stems)) != len(stems):
        parser.error(f"two feature files name the same model: {stems}")
    table = table9({stem: load_features(path) for stem, path in zip(stems, args.features)})
    write_csv(table, args.out)
    wide = table.pivot(index=["model", "motion", "readout", "condition", "against"], columns="t_s", values="value")
    wide.columns = [f"{t:.2f}" for t in wide.columns]
    print(wide.to_string(float_format="%.2f"))


if __name__ == "__main__":
    main()
