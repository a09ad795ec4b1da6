"""PersistBench metrics (Method 2-3): Perm, Cont and App per frame, per segment, per sequence.

A sequence is one model's generated video along the reference camera path, compared with the
reference video (the ground-truth crop of the 360-degree video along the same path). Per frame t:

  * Perm_t = 1[tracker has a valid mask at t AND the judge says it is the same entity]. The
    tracker is initialised on the generated sequence's first frame by feature matching to the
    reference target (SAM2 + DINO matching and the VLM judge are a later issue); here the two
    booleans come in as arrays. A tracked frame with an empty predicted mask has no valid mask,
    so its Perm_t is 0.
  * Cont_t = exp(-alpha ||c_t^pred - c_t^ref||_2 / sqrt(A_ref)): c are mask centroids in pixels
    (mean row and column of the mask's pixels), A_ref the mean reference mask area in pixels over
    the frames of the whole sequence (both segments) where the reference shows the target (below):
    one scale per sequence, as the paper's overline A suggests, which a frame where the reference
    tracker missed the target does not shrink. The paper gives no alpha; ALPHA = 1.0, so a
    centroid off by one object size (sqrt of its area) scores exp(-1) = 0.37 and half a size 0.61.
  * App_t = cos(phi(F_t^pred), phi(F_t^ref)): full-frame patch features of each frame pooled
    under that frame's own target mask (the predicted mask for the generated frame, the reference
    mask for the reference frame) with features.pool_under_mask (soft, area-weighted: the
    paper's "downsampled target mask"), then features.cosine.

The frames on which Cont and App are averaged ("仅在目标成功追踪的有效帧集合上统计", the tracked
frames) are those with Perm_t = 1, tracker AND judge, not the tracker-valid frames: the AND is
there because a tracker keeps giving a mask on a degraded blob or on the background, and the
centroid and features of such a mask are not the target's, which is the spurious continuity the
paper says the AND removes. It also makes the all-frame variant exactly Cont/App "mechanically
bound" to Perm, as the paper's ablation puts it: all_frames = tracked x (tracked frames / frames).
Frames where the reference view does not show the target (its mask has fewer than min_pixels,
perception.MIN_PIXELS, the tracker's own bar for a valid mask: the target occluded or outside the
reference crop of the 360-degree video) have no ground truth and leave all three metrics,
numerator and denominator, under both rules (their Perm_t, Cont_t and App_t are NaN). PersistBench
(Method 2/3) averages Perm over the reference's frames and is silent on frames where the
reference itself lacks the target; counting them would score a perfect copy of the reference
below 1 there, since its tracker cannot find what the reference does not show.

Aggregation per segment (visible or invisible: whether the target is visible in the INPUT camera
at t), ``sequence_rows``:
  * perm: mean of Perm_t over the segment's frames where the reference shows the target; the same
    under both rules (rows for both are written so that every (segment, metric, aggregation) has
    a row).
  * cont, app, rule "tracked": mean over the segment's tracked frames (each has a reference mask);
    NaN with reason NO_TRACKED when no frame is tracked, which tables leave out of a model's mean
    (Perm carries that failure).
  * cont, app, rule "all_frames" (the paper's ablation): mean over the segment's frames with a
    reference mask, an untracked frame counting 0; defined even when nothing is tracked.
  * every metric and rule is NaN with reason NO_REFERENCE when no frame of the segment has a
    reference mask (tables leave it out of a model's mean like NO_TRACKED); the reason of a value
    says how many of the segment's frames were left out for want of one.
  * a metric that was not computed (no feature backend: App without features) is NaN under both
    rules with reason NO_FEATURES; NaN is never read as 0.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from worldmemory.perception.features import cosine, patch_features_of, pool_under_mask
from worldmemory.persistbench.perception import MIN_PIXELS

ALPHA = 1.0  # Cont's decay; the paper gives none (see module doc)
SEGMENTS = ("invisible", "visible")  # the paper's order: invisible value, visible in parentheses
METRICS = ("perm", "cont", "app")
AGGREGATIONS = ("tracked", "all_frames")
KINDS = ("static", "dynamic")
COLUMNS = ["model", "sequence", "kind", "category", "segment", "metric", "aggregation", "value",
           "n_frames", "n_tracked", "reason"]
FRAME_COLUMNS = ["model", "sequence", "kind", "frame", "frame_from_exit", "visible_in_input",
                 "perm", "cont", "app"]
ROW_KEYS = ["model", "sequence", "segment", "metric", "aggregation"]
FLOAT_FORMAT = "%.10g"

NO_FRAMES = "no frame in the segment"
NO_TRACKED = "target not tracked in any frame of the segment (tracked-frame rule)"
NO_REFERENCE = "no reference mask in the segment's frames to score"
NO_FEATURES = "no appearance features (feature backend not run)"
# A NaN with one of these reasons means there was no frame to average (not an uncomputed value):
# tables leave such a sequence out of a model's mean instead of propagating the NaN.
NOTHING_TO_AVERAGE = (NO_FRAMES, NO_TRACKED, NO_REFERENCE)


def _bools(x, name: str, length: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 1 or (length is not None and len(x) != length):
        raise ValueError(f"{name}: expected shape ({length if length is not None else 'T'},), got {x.shape}")
    return x.astype(bool)


def centroid(mask: np.ndarray) -> np.ndarray:
    """(row, column) mean of the mask's pixel indices; raises for an empty mask."""
    rows, cols = np.nonzero(mask)
    if rows.size == 0:
        raise ValueError("centroid of an empty mask")
    return np.array([rows.mean(), cols.mean()])


def _features(features, name: str, n: int, valid: np.ndarray) -> np.ndarray:
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 2 or len(features) != n:
        raise ValueError(f"{name}: expected shape ({n}, D), got {features.shape}")
    if not np.isfinite(features[valid]).all():
        raise ValueError(f"{name}: NaN features under a non-empty mask")
    return features


def frame_scores(tracked, same_entity, pred_masks, ref_masks, pred_features=None,
                 ref_features=None, alpha: float = ALPHA,
                 min_pixels: int = MIN_PIXELS) -> dict[str, np.ndarray]:
    """Per-frame Perm, Cont and App of one sequence (see module doc).

    tracked, same_entity: (T,) bool (tracker gave a mask; judge says same entity);
    pred_masks, ref_masks: (T, H, W) bool; pred_features, ref_features: (T, D) pooled features
    (``pooled_features``), NaN rows allowed only where that side's mask is empty, or None when no
    feature backend ran (App is then NaN and flagged as not computed); min_pixels: the reference
    shows the target where its mask has at least this many pixels.
    Returns (T,) arrays: perm (0/1 float, NaN where the reference does not show the target), cont
    and app (NaN where Perm_t is not 1 or a mask is empty), ref_valid (bool: the reference shows
    the target) and app_computed (bool).
    """
    pred_masks, ref_masks = np.asarray(pred_masks, dtype=bool), np.asarray(ref_masks, dtype=bool)
    if pred_masks.ndim != 3 or pred_masks.shape != ref_masks.shape:
        raise ValueError(f"masks must be (T, H, W) of the same shape, got {pred_masks.shape} "
                         f"and {ref_masks.shape}")
    n = len(pred_masks)
    tracked = _bools(tracked, "tracked", n)
    same_entity = _bools(same_entity, "same_entity", n)
    pred_valid = pred_masks.reshape(n, -1).any(axis=1)
    ref_area = ref_masks.reshape(n, -1).sum(axis=1)
    ref_valid = ref_area >= max(min_pixels, 1)
    kept = tracked & same_entity & pred_valid
    scored = kept & ref_valid

    cont = np.full(n, np.nan)
    if ref_valid.any():
        scale = math.sqrt(ref_area[ref_valid].mean())
        for t in np.flatnonzero(scored):
            offset = np.linalg.norm(centroid(pred_masks[t]) - centroid(ref_masks[t]))
            cont[t] = math.exp(-alpha * offset / scale)

    app = np.full(n, np.nan)
    computed = pred_features is not None and ref_features is not None
    if computed:
        pred_features = _features(pred_features, "pred_features", n, pred_valid)
        ref_features = _features(ref_features, "ref_features", n, ref_valid)
        for t in np.flatnonzero(scored):
            app[t] = cosine(pred_features[t], ref_features[t])
    perm = np.where(ref_valid, kept, np.nan)
    return {"perm": perm, "cont": cont, "app": app, "ref_valid": ref_valid,
            "app_computed": np.full(n, computed)}


def pooled_features(backend, frames, masks, batch: int = 8) -> np.ndarray:
    """(T, D) float32 features of each frame pooled under its own mask; NaN rows where it is empty.

    ``backend`` has the PatchFeatures contract (``patch_grid(uint8 (B, H, W, 3)) -> (features
    (B, gh, gw, D), grid)``); only frames with a non-empty mask are sent to it, ``batch`` at a
    time, and features.pool_under_mask maps the mask onto the backend's cells. With no non-empty
    mask at all the result is (T, 0): there is nothing to pool and no backend call to learn D from.
    """
    frames, masks = np.asarray(frames), np.asarray(masks, dtype=bool)
    if frames.shape[:3] != masks.shape or frames.ndim != 4:
        raise ValueError(f"frames (T, H, W, 3) and masks (T, H, W) differ: {frames.shape}, {masks.shape}")
    todo = np.flatnonzero(masks.reshape(len(masks), -1).any(axis=1))
    features, grid = patch_features_of(backend, frames, todo, batch)
    if not features:
        return np.full((len(frames), 0), np.nan, dtype=np.float32)
    out = np.full((len(frames), next(iter(features.values())).shape[-1]), np.nan, dtype=np.float32)
    for t, patches in features.items():
        out[t] = pool_under_mask(patches, masks[t], grid)
    return out


def _segment_value(metric: str, values, kept, ref_valid, computed, aggregation: str):
    """(value, reason) of one metric over one segment's frames (arrays already restricted; kept
    only where ref_valid)."""
    if len(values) == 0:
        return math.nan, NO_FRAMES
    if not computed.all():
        return math.nan, NO_FEATURES
    if not ref_valid.any():
        return math.nan, NO_REFERENCE
    if metric == "perm":
        value = float(values[ref_valid].mean())
    elif aggregation == "tracked":
        if not kept.any():
            return math.nan, NO_TRACKED
        value = float(values[kept].mean())
    else:
        value = float(np.where(kept, values, 0.0)[ref_valid].mean())
    left_out = int((~ref_valid).sum())
    note = f"{left_out} frame(s) without a reference mask left out" if left_out else ""
    return value, note


def sequence_rows(per_frame: dict, visible_in_input) -> list[dict]:
    """Tidy rows (segment, metric, aggregation, value, n_frames, n_tracked, reason) of a sequence.

    ``per_frame`` is ``frame_scores``'s output; visible_in_input (T,) bool says whether the target
    is visible in the input camera at t. Rows in the order SEGMENTS x METRICS x AGGREGATIONS;
    n_frames counts the segment's frames, n_tracked its frames with Perm_t = 1; values are
    fractions in [0, 1]. See the module doc for the two rules, the frames left out and the NaN
    reasons.
    """
    perm = np.asarray(per_frame["perm"], dtype=float)
    n = len(perm)
    visible = _bools(visible_in_input, "visible_in_input", n)
    ref_valid = np.asarray(per_frame.get("ref_valid", np.ones(n, bool)), dtype=bool)
    kept = (perm > 0) & ref_valid
    rows = []
    for segment in SEGMENTS:
        inside = visible if segment == "visible" else ~visible
        count, n_kept = int(inside.sum()), int(kept[inside].sum())
        for metric in METRICS:
            computed = np.asarray(per_frame.get(f"{metric}_computed", np.ones(n, bool)), bool)
            for aggregation in AGGREGATIONS:
                value, reason = _segment_value(metric, np.asarray(per_frame[metric], float)[inside],
                                               kept[inside], ref_valid[inside], computed[inside],
                                               aggregation)
                rows.append({"segment": segment, "metric": metric, "aggregation": aggregation,
                             "value": value, "n_frames": count, "n_tracked": n_kept,
                             "reason": reason})
    return rows


def exit_frame(visible_in_input) -> int | None:
    """The frame at which the target leaves the input view: the first t with visible[t-1] and not
    visible[t] (the input camera may start without the target, "invisible-visible-invisible");
    None if it never leaves."""
    visible = _bools(visible_in_input, "visible_in_input")
    exits = np.flatnonzero(visible[:-1] & ~visible[1:])
    return int(exits[0]) + 1 if exits.size else None


def frame_rows(per_frame: dict, visible_in_input) -> list[dict]:
    """Per-frame rows (frame, frame_from_exit, visible_in_input, perm, cont, app) for the figure;
    frame_from_exit = t - exit_frame, None when the target never leaves the input view."""
    visible = _bools(visible_in_input, "visible_in_input", len(per_frame["perm"]))
    exit_at = exit_frame(visible)
    return [{"frame": t, "frame_from_exit": None if exit_at is None else t - exit_at,
             "visible_in_input": bool(visible[t]), "perm": float(per_frame["perm"][t]),
             "cont": float(per_frame["cont"][t]), "app": float(per_frame["app"][t])}
            for t in range(len(visible))]


def scores_frame(rows: list[dict], model: str, sequence: str, kind: str, category: str) -> pd.DataFrame:
    """``sequence_rows`` output with the sequence's identity, as a COLUMNS frame."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {KINDS}")
    keys = {"model": model, "sequence": sequence, "kind": kind, "category": category}
    return pd.DataFrame([{**keys, **r} for r in rows], columns=COLUMNS)


def frames_frame(rows: list[dict], model: str, sequence: str, kind: str) -> pd.DataFrame:
    """``frame_rows`` output with the sequence's identity, as a FRAME_COLUMNS frame."""
    table = pd.DataFrame([{"model": model, "sequence": sequence, "kind": kind, **r} for r in rows],
                         columns=FRAME_COLUMNS)
    table["frame_from_exit"] = table["frame_from_exit"].astype("Int64")
    return table


def write_scores(scores: pd.DataFrame, path) -> None:
    """Per-sequence score rows (COLUMNS) with a fixed float format and line terminator."""
    _write(scores[COLUMNS], path)


def write_frames(frames: pd.DataFrame, path) -> None:
    """Per-frame rows (FRAME_COLUMNS) with a fixed float format and line terminator."""
    _write(frames[FRAME_COLUMNS], path)


def _write(table: pd.DataFrame, path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False, lineterminator="\n", float_format=FLOAT_FORMAT)
