"""Readouts of the belief probe and their aggregation over scenes.

*Tracking Is Not Permanence*, Section 3.2 ("Readout"), Equation 1, and Appendix I ("Projection
coefficient"). The frozen predictor infers hidden tokens ``pred`` (z-hat); the encoder's tokens of
the two worlds are ``z_present`` and ``z_absent``. Every token array is one scene, one tubelet
slot and one readout region: a float array of shape (n_tokens, D).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from worldmemory.common.stats import binomial_ci, paired_t

CONDITIONS = [
    "moving",
    "moving_never_rendered",
    "moving_never_visible",
    "moving_copy_last_view",
    "moving_exit",
    "stationary",
    "stationary_never_rendered",
    "stationary_never_visible",
    "stationary_copy_last_view",
]
# The geometry-matched never-rendered control is the floor for a model without memory
# (Appendix I); the never-visible and exit rows are bias controls themselves and have no control.
CONTROL_OF = {
    "moving": "moving_never_rendered",
    "moving_copy_last_view": "moving_never_rendered",
    "stationary": "stationary_never_rendered",
    "stationary_copy_last_view": "stationary_never_rendered",
}
BANDS = ("moving", "static", "gone")  # the three worlds of Section 3.3


def mean_token_l1(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over tokens of the per-token L1 distance, the decision metric of Section 3.2."""
    return float(np.abs(np.asarray(a, float) - np.asarray(b, float)).sum(axis=-1).mean())


# Relative tolerance of a tie in the decision (see decides_present).
TIE_RTOL = 1e-9


def _rounding_bound(pred) -> float:
    """How far rounding ``pred`` to its own float dtype can move d_absent - d_present.

    Each element of a rounded prediction is off by at most eps/2 of its magnitude and moves
    |pred - z_present| and |pred - z_absent| by as much in opposite directions, so the difference of
    the mean per-token L1 distances moves by at most eps times the prediction's mean per-token L1
    norm. Zero for exact (integer) inputs; float64 gives ~2e-16 of that norm.
    """
    pred = np.asarray(pred)
    if not np.issubdtype(pred.dtype, np.floating):
        return 0.0
    return float(np.finfo(pred.dtype).eps) * float(np.abs(pred.astype(float)).sum(axis=-1).mean())


def decides_present(pred: np.ndarray, z_present: np.ndarray, z_absent: np.ndarray) -> bool:
    """Whether the prediction is strictly nearer the present world (Section 3.2).

    A tie counts as absent: a prediction that carries no information must not score as memory.
    A tie is |d_present - d_absent| <= max(TIE_RTOL * (d_present + d_absent), rounding bound),
    where the rounding bound (_rounding_bound) is what storing the prediction in its float dtype
    can change: an exact midpoint (z_present + z_absent) / 2 computed in float32 lands on either
    side by a few 1e-9 relative for regions of a few hundred values (up to ~1e-7 when the features
    are large against their difference), beyond TIE_RTOL alone, and must still read absent.
    """
    d_present, d_absent = mean_token_l1(pred, z_present), mean_token_l1(pred, z_absent)
    tolerance = max(TIE_RTOL * (d_present + d_absent), _rounding_bound(pred))
    return d_absent - d_present > tolerance


def signed_distance(pred: np.ndarray, z_present: np.ndarray, z_absent: np.ndarray) -> float:
    """Equation 1: e = (|pred - za|_1 - |pred - zp|_1) / |zp - za|_1, L1 over the whole region.

    +1 at the present world, -1 at the absent one, 0 when equidistant; NaN when the worlds
    coincide in the region. The token count cancels, so the mean per-token L1 gives the same ratio.
    """
    separation = mean_token_l1(z_present, z_absent)
    if separation == 0:
        return math.nan
    return (mean_token_l1(pred, z_absent) - mean_token_l1(pred, z_present)) / separation


def projection(pred: np.ndarray, z_present: np.ndarray, z_absent: np.ndarray) -> float:
    """Appendix I: alpha = <m(pred) - m(za), m(zp) - m(za)> / |m(zp) - m(za)|^2.

    m() is the mean over the region's tokens. Unlike e, alpha is not compressed by prediction
    error orthogonal to the axis between the worlds (1: present world, 0: absent world).
    NaN when the region means of the two worlds coincide.
    """
    m_pred, m_present, m_absent = (np.asarray(x, float).mean(axis=0) for x in (pred, z_present, z_absent))
    axis = m_present - m_absent
    norm2 = float(axis @ axis)
    if norm2 == 0:
        return math.nan
    return float((m_pred - m_absent) @ axis) / norm2


def nearest_world(pred: np.ndarray, refs: dict[str, np.ndarray]) -> str:
    """Key of the reference nearest in mean per-token L1 (three-world readout, Section 3.3).

    Ties go to the first key in dict order.
    """
    return min(refs, key=lambda name: mean_token_l1(pred, refs[name]))


def scene_row(pred: np.ndarray, z_present: np.ndarray, z_absent: np.ndarray) -> dict:
    """All two-world readouts of one scene at one slot, as one row of the per-scene table."""
    return {
        "d_present": mean_token_l1(pred, z_present),
        "d_absent": mean_token_l1(pred, z_absent),
        "e": signed_distance(pred, z_present, z_absent),
        "alpha": projection(pred, z_present, z_absent),
        "present": decides_present(pred, z_present, z_absent),
    }


def _band_fractions(bands: pd.Series) -> dict:
    """Fraction of scenes nearest each world, over the scenes where the readout was computed."""
    computed = bands.dropna().astype(str)
    computed = computed[computed != ""]
    if computed.empty:
        return {f"frac_{band}": math.nan for band in BANDS}
    return {f"frac_{band}": float((computed == band).mean()) for band in BANDS}


def belief_curve(df: pd.DataFrame) -> pd.DataFrame:
    """Aggregate the per-scene table into one row per (model, condition, slot, t_s).

    P(present) with its Clopper-Pearson interval, mean e and alpha, the three-world fractions, and
    for conditions with a control a paired t-test of e against that control over the scenes both
    hold at the slot (Section 3.2). Sorted by model, condition in CONDITIONS order (others after,
    alphabetically), slot.
    """
    scene_keys = ["model", "condition", "slot", "scene_id"]
    if df.duplicated(scene_keys).any():
        raise ValueError("per-scene table has more than one row per (model, condition, slot, scene_id)")
    e_of = {key: group.set_index("scene_id")["e"] for key, group in df.groupby(["model", "condition", "slot"])}

    rows = []
    for (model, condition, slot, t_s), group in df.groupby(["model", "condition", "slot", "t_s"]):
        n = len(group)
        n_present = int(group["present"].astype(bool).sum())
        lo, hi = binomial_ci(n_present, n)
        t, p = math.nan, math.nan
        control = e_of.get((model, CONTROL_OF.get(condition), slot))
        if control is not None:
            pairs = pd.concat([e_of[(model, condition, slot)], control], axis=1, join="inner")
            t, p = paired_t(pairs.iloc[:, 0], pairs.iloc[:, 1])
        rows.append({
            "model": model, "condition": condition, "slot": int(slot), "t_s": float(t_s),
            "n": n, "n_present": n_present, "p_present": n_present / n, "ci_lo": lo, "ci_hi": hi,
            "e_mean": float(group["e"].mean()), "alpha_mean": float(group["alpha"].mean()),
            **_band_fractions(group["nearest_band"]),
            "ttest_t": t, "ttest_p": p,
        })
    curve = pd.DataFrame(rows)
    rank = curve["condition"].map({c: i for i, c in enumerate(CONDITIONS)}).fillna(len(CONDITIONS))
    order = curve.assign(_rank=rank).sort_values(["model", "_rank", "condition", "slot"]).index
    return curve.loc[order].reset_index(drop=True)


def carry_over(curve: pd.DataFrame, model: str, condition: str) -> float:
    """Carry-over of Section 3.2, in seconds (start time of the tubelet).

    The literal last time point at which P(present) >= 0.5 while the control reads < 0.5 at the
    same slot; an earlier run that ends and a later isolated point count as the later point, not
    the end of the first contiguous run. NaN if there is no such point, if the condition has no
    control, or if the control was not run.
    """
    control = CONTROL_OF.get(condition)
    if control is None:
        return math.nan

    def p_present(cond: str) -> pd.DataFrame:
        rows = curve[(curve["model"] == model) & (curve["condition"] == cond)]
        return rows.set_index("slot")[["t_s", "p_present"]]

    both = p_present(condition).join(p_present(control)["p_present"].rename("p_control"), how="inner")
    hits = both[(both["p_present"] >= 0.5) & (both["p_control"] < 0.5)]
    return float(hits["t_s"].max()) if len(hits) else math.nan
