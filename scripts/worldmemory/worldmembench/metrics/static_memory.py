"""Static Memory metrics of WorldMemBench (Section 4.4, Eqs. 4-6) and the pose/tracking filters of
Appendix G.1.

Every function scores ONE prescribed revisit k against the fixed initial reference, or returns
None when the revisit has no valid observation; aggregate.revisit_mean / rollout_score (Eq. 1)
then turn None into 0 and still count the revisit in K. Inputs are features, masks, depth maps,
intrinsics and poses computed elsewhere (ArcFace, DINOv2, the tracker, DA3): no model code here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from worldmemory.worldmembench.metrics.aggregate import revisit_mean

Field = tuple[np.ndarray, np.ndarray]  # (occupied (n_el, n_az) bool, log_range (n_el, n_az))
MIN_AREA = 0.8  # whole_in_view: share of a border-cut conditioning mask a frame must still cover


def _unit_rows(features) -> np.ndarray:
    """Rows scaled to unit length; a zero vector has no direction, so it is an error."""
    x = np.atleast_2d(np.asarray(features, dtype=float))
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a zero feature vector has no cosine similarity")
    return x / norms


def revisit_similarity(reference_features, revisit_features) -> float | None:
    """s_k of Eq. 4: mean over t in R_k of clip_[0,1](max_{r in V} cos(phi(I_r), phi(I_t))).

    reference_features (V, D): the fixed initial reference set V. revisit_features (n, D): one row
    per VALID observation in the k-th revisit window R_k (the caller drops frames where the face or
    mask was not found). The max over V lets a revisit match whichever reference view it resembles
    most; clipping keeps anti-correlated features from scoring below a missing one. Returns None
    when R_k is empty, so Eq. 1 scores the revisit 0. Used for Human Identity (ArcFace), Human
    Appearance and Object Appearance (DINOv2 within masks).
    """
    if len(reference_features) == 0:
        raise ValueError("the reference set V is empty")
    if len(revisit_features) == 0:
        return None
    best = (_unit_rows(revisit_features) @ _unit_rows(reference_features).T).max(axis=1)
    return float(np.mean(np.clip(best, 0.0, 1.0)))


def normalise_silhouette(mask, canvas: int = 64) -> np.ndarray:
    """C(.) of Eq. 5: crop to the tight bounding box, resize keeping the aspect ratio so the longer
    side spans the canvas, centre on a canvas x canvas grid.

    This removes image-plane translation and uniform scale while keeping shape changes. Resizing is
    nearest-neighbour (output pixel centre (i + 1/2) samples source row floor((i + 1/2) h / out_h)),
    so the result stays binary and a mask upsampled by an integer factor normalises to exactly the
    same canvas. The shorter side is rounded to the nearest pixel (at least 1); centring floors the
    leftover margin. The paper does not give the canvas size; 64 is our choice. An empty mask has no
    bounding box: ValueError.
    """
    mask = np.asarray(mask, dtype=bool)
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        raise ValueError("an empty mask has no silhouette")
    crop = mask[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    h, w = crop.shape
    longer = max(h, w)
    out_h = max(1, round(h * canvas / longer))
    out_w = max(1, round(w * canvas / longer))
    src_r = ((2 * np.arange(out_h) + 1) * h) // (2 * out_h)
    src_c = ((2 * np.arange(out_w) + 1) * w) // (2 * out_w)
    out = np.zeros((canvas, canvas), dtype=bool)
    top, left = (canvas - out_h) // 2, (canvas - out_w) // 2
    out[top : top + out_h, left : left + out_w] = crop[np.ix_(src_r, src_c)]
    return out


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.logical_and(a, b).sum() / np.logical_or(a, b).sum())


def borders_touched(masks) -> np.ndarray:
    """Which image borders each mask touches: (T, 4) bool for top, bottom, left, right of (T, H, W)
    masks (or (4,) for one (H, W) mask)."""
    masks = np.asarray(masks, dtype=bool)
    return np.stack([masks[..., 0, :].any(-1), masks[..., -1, :].any(-1),
                     masks[..., :, 0].any(-1), masks[..., :, -1].any(-1)], axis=-1)


def whole_in_view(masks, conditioning_mask, min_pixels: int, min_area: float = MIN_AREA) -> np.ndarray:
    """Which frames observe the target as whole as the conditioning frame does (T,) bool: its mask
    covers at least ``min_pixels`` pixels, touches no image border that its conditioning mask does
    not, and, where the conditioning mask touches a border, covers at least ``min_area`` of the
    conditioning mask's pixels.

    Our validity rule for the V and R_k of Eqs. 4-5 (the paper gives none): a target cut by the
    image edge is only partly seen, so its pooled appearance and its silhouette differ from the
    reference even for a model with perfect memory (they read 0.95 and 0.83 when such frames
    counted). A border the target already touches in the conditioning frame (a person cut at the
    bottom of the view) stays allowed, but a view that hides more of it behind that border (the
    camera pitched up) is cut too: the area bound, which a resampled person's 7% height spread
    leaves unaffected.
    """
    masks = np.asarray(masks, dtype=bool)
    allowed = borders_touched(conditioning_mask)
    area = masks.sum(axis=(-2, -1))
    whole = (area >= min_pixels) & ~(borders_touched(masks) & ~allowed).any(axis=-1)
    if allowed.any():
        whole &= area >= min_area * np.count_nonzero(conditioning_mask)
    return whole


def revisit_geometry(reference_masks, revisit_masks, canvas: int = 64) -> float | None:
    """s_k^geo of Eq. 5: mean over valid frames t in R_k of max_{r in V} IoU(C(M_r), C(M_t)).

    A frame whose mask is empty is not a valid observation (the tracker lost the object) and is
    left out of R_k; None when no valid frame remains, so Eq. 1 scores the revisit 0. The reference
    set must contain at least one non-empty mask.
    """
    references = [normalise_silhouette(m, canvas) for m in reference_masks if np.any(m)]
    if not references:
        raise ValueError("the reference set V has no non-empty mask")
    revisits = [normalise_silhouette(m, canvas) for m in revisit_masks if np.any(m)]
    if not revisits:
        return None
    return float(np.mean([max(_iou(r, t) for r in references) for t in revisits]))


def return_similarity(
    conditioning_feature, window_features, angles_to_conditioning
) -> float | None:
    """Visible Memory for one return window (Section 4.4, Environment 1)).

    Selects the frame whose estimated camera orientation is closest to the conditioning frame's,
    i.e. the smallest SO(3) geodesic angle in angles_to_conditioning (n,) (computed from DA3 poses
    by the caller; any unit), and returns the clipped cosine similarity of its global feature with
    the conditioning frame's. Frames without an orientation (NaN angle) cannot be selected; ties go
    to the earliest frame. None when no frame can be selected.
    """
    angles = np.asarray(angles_to_conditioning, dtype=float).reshape(-1)
    features = np.asarray(window_features, dtype=float)
    if len(features) != angles.size:
        raise ValueError(f"{len(features)} features for {angles.size} angles")
    posed = np.flatnonzero(np.isfinite(angles))
    if posed.size == 0:
        return None
    selected = posed[np.argmin(angles[posed])]
    cosine = (_unit_rows(features[selected]) @ _unit_rows(conditioning_feature).T).item()
    return float(np.clip(cosine, 0.0, 1.0))


def visible_memory(
    conditioning_feature, return_windows: Sequence[tuple[np.ndarray, np.ndarray]]
) -> float:
    """Visible Memory (Section 4.4): mean over the prescribed return windows of return_similarity.

    return_windows holds one (features (n, D), angles_to_conditioning (n,)) pair per prescribed
    rotational return, so K = len(return_windows). A window with no selectable frame scores 0 and
    still counts in K, the zero rule of Eq. 1.
    """
    scores = [return_similarity(conditioning_feature, f, a) for f, a in return_windows]
    return revisit_mean(scores, len(return_windows))


def depth_spearman(depth_initial, depth_revisit, valid=None) -> float | None:
    """rho_S(d_0, d_{r_k}) of Eq. 6: Spearman rank correlation of depth at the same pixel locations.

    Ranks make it invariant to any monotone depth rescaling, so only depth ORDERING is compared.
    Pixels are used where both depths are finite and `valid` (H, W) is true; mark missing depth as
    NaN or through `valid`. Returns None when the correlation is undefined (fewer than two pixels
    or a constant map), which Eq. 1 scores 0. The paper does not clip rho_S, so it lies in [-1, 1].
    S_depth = aggregate.revisit_mean([rho_1, ..., rho_K], K): the 1/K sum of Eq. 6 with the zero
    rule for invalid revisits (Appendix G.1 keeps that rule for the Environment metrics).
    """
    d0 = np.asarray(depth_initial, dtype=float)
    d1 = np.asarray(depth_revisit, dtype=float)
    if d0.shape != d1.shape:
        raise ValueError(f"depth maps differ in shape: {d0.shape} vs {d1.shape}")
    keep = np.isfinite(d0) & np.isfinite(d1)
    if valid is not None:
        keep &= np.asarray(valid, dtype=bool)
    a, b = d0[keep], d1[keep]
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return None
    from scipy import stats  # here: importing scipy.stats takes 1-3 s, which every other score job would pay

    return float(stats.spearmanr(a, b).statistic)


def spherical_field(depth, K, c2w, grid: tuple[int, int], origin) -> Field:
    """One depth map on the shared spherical grid of the Spherical Reconstruction Score (Eq. 6).

    Each pixel (u, v) with finite positive depth is back-projected with the OpenCV pinhole model,
    X_cam = depth * K^-1 [u + 1/2, v + 1/2, 1] (depth is z-depth, pixel centres at half-integers),
    moved to world by the camera-to-world pose c2w (4, 4) and expressed relative to `origin` (3,).
    Pass the reference camera centre as origin for the reference AND every revisit field, so that
    all fields share one grid. Bins are equal-angle on the full sphere, in world axes with OpenCV
    orientation (y down): azimuth = atan2(x, z) in n_az bins over [-pi, pi), elevation =
    atan2(-y, hypot(x, z)) in n_el bins over [-pi/2, pi/2]. Each bin keeps the NEAREST log-range
    (the visible surface). The paper gives no grid resolution, so `grid` = (n_az, n_el) is required.

    Returns (occupied (n_el, n_az) bool, log_range (n_el, n_az) float, NaN where unoccupied).
    """
    depth = np.asarray(depth, dtype=float)
    c2w = np.asarray(c2w, dtype=float)
    n_az, n_el = grid
    v, u = np.indices(depth.shape)
    z = depth.ravel()
    keep = np.isfinite(z) & (z > 0)
    pixels = np.stack([u.ravel() + 0.5, v.ravel() + 0.5, np.ones(z.size)], axis=1)[keep]
    camera = (pixels @ np.linalg.inv(np.asarray(K, dtype=float)).T) * z[keep, None]
    rel = camera @ c2w[:3, :3].T + c2w[:3, 3] - np.asarray(origin, dtype=float)
    distance = np.linalg.norm(rel, axis=1)
    rel, distance = rel[distance > 0], distance[distance > 0]
    azimuth = np.arctan2(rel[:, 0], rel[:, 2])
    elevation = np.arctan2(-rel[:, 1], np.hypot(rel[:, 0], rel[:, 2]))
    i_az = np.floor((azimuth + np.pi) / (2 * np.pi) * n_az).astype(int) % n_az
    i_el = np.minimum(np.floor((elevation + np.pi / 2) / np.pi * n_el).astype(int), n_el - 1)
    log_range = np.full((n_el, n_az), np.inf)
    np.minimum.at(log_range, (i_el, i_az), np.log(distance))
    occupied = np.isfinite(log_range)
    log_range[~occupied] = np.nan
    return occupied, log_range


def reconstruction_similarity(reference: Field, revisit: Field) -> float:
    """s_k of the Spherical Reconstruction Score (Eq. 6) for one revisit field G_k against H.

    |C_k|/|U_k| penalises missing and additional surfaces;
    delta_k = median_{b in C_k}(H_b - G_{k,b}) removes the global depth scale (a scale factor is a
    constant log-range shift), and
    exp(-|H_b - (G_{k,b} + delta_k)|) penalises the remaining distance discrepancies. 0 when the two
    fields share no occupied bin.
    """
    occupied_h, log_h = reference
    occupied_g, log_g = revisit
    if occupied_h.shape != occupied_g.shape:
        raise ValueError(f"fields differ in grid: {occupied_h.shape} vs {occupied_g.shape}")
    common = occupied_h & occupied_g
    if not common.any():
        return 0.0
    diff = log_h[common] - log_g[common]
    agreement = np.exp(-np.abs(diff - np.median(diff)))
    return float(common.sum() / (occupied_h | occupied_g).sum() * agreement.mean())


def reconstruction_score(reference: Field, revisits: Sequence[Field | None]) -> float:
    """S_rec of Eq. 6: (1/K) sum_k s_k over the K prescribed revisits.

    A revisit without a field (None: no valid depth/pose) scores 0 and counts in K, the zero rule
    that Appendix G.1 says Reconstruction keeps for invalid revisits.
    """
    scores = [None if g is None else reconstruction_similarity(reference, g) for g in revisits]
    return revisit_mean(scores, len(revisits))


def pose_qualified(
    departure_angles_deg,
    return_angles_deg,
    departure_min_deg: float = 30.0,
    return_tol_deg: float = 30.0,
) -> bool:
    """Appendix G.1 Environment filter Q_30 for one revisit: departure >= 30 deg from the initial
    orientation AND return within 30 deg of it (15 and 5 deg in the sensitivity study, Tab. 13).

    Angles are SO(3) geodesic angles (degrees) of the DA3 orientations to the initial one, over the
    departure phase D_k and the return window R_k. The departure is the largest angle in D_k; the
    return error is the smallest angle in R_k, the frame Visible Memory selects. Frames without a
    pose (NaN) are ignored; a phase with no posed frame fails the filter.
    """
    departure = np.asarray(departure_angles_deg, dtype=float)
    returned = np.asarray(return_angles_deg, dtype=float)
    departure, returned = departure[np.isfinite(departure)], returned[np.isfinite(returned)]
    if departure.size == 0 or returned.size == 0:
        return False
    return bool(departure.max() >= departure_min_deg and returned.min() <= return_tol_deg)


def tracking_qualified(visible_during_departure, n_valid_return_frames: int) -> bool:
    """Appendix G.1 Human/Object filter for one target at one revisit: the tracker shows the target
    leaving view during the departure (some departure frame without it; a target that stays visible
    throughout does not qualify) and gives at least one valid observation after the return.

    A video is retained when this holds for every initially evaluated target at every compared
    revisit (the caller's all()).
    """
    visible = np.asarray(visible_during_departure, dtype=bool)
    return bool(visible.size > 0 and not visible.all() and n_valid_return_frames > 0)
