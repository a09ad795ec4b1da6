"""Camera Following: relative pose errors against the prescribed trajectory (Section 4.3).

Q_t are the target camera-to-world poses of the trajectories in Section 3.3 (translation square
loops, LR/UD rotation sweeps) and Q^_t the poses a pose estimator (DA3, ViPE) recovers from the
generated video; both are (T, 4, 4) arrays in the conventions of ``common.geometry``. Both
metrics are dimensionless and lower is better.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from worldmemory.common.geometry import (
    apply_sim3,
    invert,
    path_length,
    relative_motions,
    rotation_angle,
    umeyama,
)

# A target path below this (position units for Eq. 2, radians for Eq. 3) is float noise, not motion.
ZERO_PATH = 1e-9


def rpe_trans(target_poses, estimated: Mapping[str, np.ndarray]) -> float:
    """Translation RPE, Section 4.3 Eq. 2, averaged over the given estimators.

    The target centres are scaled so that their path has unit length; each estimator's
    trajectory is then aligned to that target independently by the Umeyama Sim(3) fit of its
    camera centres, and scores sum_t |trans((Delta Q_t)^{-1} Delta Q^_t)|_2. The paper averages
    DA3 and ViPE (its factor 1/2); here the mean runs over the keys of ``estimated``.

    The Sim(3) is applied to the whole estimated pose (centres s R p + t, orientations R R_c),
    so its rotation and translation cancel in the relative motions and only its scale remains,
    as the paper intends ("removing differences in global coordinate frame and scale").
    Moving the centres alone would rotate every estimated step by R inside the camera frame.

    Returns NaN for a pure-rotation target (path length below ``ZERO_PATH``): the unit-length
    normalisation is undefined there, and without it the alignment scale collapses to 0
    (the target centres have no spread), which would score every estimate 0 whatever its
    motion. Such cases are therefore left out rather than reported as perfect.

    An estimate whose camera never moves (one centre, e.g. a still video) scores the limit of
    the Sim(3) fit as its scale goes to 0: the target's unit path length, 1. Raises ValueError,
    naming the estimator, for non-finite poses, a frame count differing from the target, or two
    distinct camera centres (no Sim(3) fit).
    """
    target = _checked(target_poses, "target")
    if not estimated:
        raise ValueError("rpe_trans needs at least one estimator")
    estimates = {name: _checked(poses, name, len(target)) for name, poses in estimated.items()}
    length = path_length(target[:, :3, 3])
    if length < ZERO_PATH:
        return math.nan
    target = apply_sim3(1.0 / length, np.eye(3), np.zeros(3), target)
    target_motions = relative_motions(target)
    errors = []
    for name, poses in estimates.items():
        centres = poses[:, :3, 3]
        if len(np.unique(centres, axis=0)) == 1:
            # a camera that never moves (a still video): the Sim(3) fit's limit as its scale goes
            # to 0, every target step missed in full, i.e. the target's unit path length
            errors.append(float(np.linalg.norm(target_motions[:, :3, 3], axis=1).sum()))
            continue
        if len(np.unique(centres, axis=0)) < 3:
            raise ValueError(f"{name!r}: fewer than 3 distinct camera centres, cannot Sim(3)-align")
        aligned = apply_sim3(*umeyama(centres, target[:, :3, 3]), poses)
        residual = invert(target_motions) @ relative_motions(aligned)
        errors.append(np.linalg.norm(residual[:, :3, 3], axis=1).sum())
    return float(np.mean(errors))


def rpe_rot(target_poses, estimated_poses) -> float:
    """Rotation RPE, Section 4.3 Eq. 3: sum_t theta(dR_t^T dR^_t) / sum_t theta(dR_t).

    dR_t = R_t^T R_{t+1} are the adjacent rotation increments; no alignment is applied, since
    they do not depend on the world frame. The paper uses DA3's orientations only, so pass
    those. Returns NaN when the target's angular path is below ``ZERO_PATH`` (a
    translation-only trajectory), where the ratio is undefined. Raises ValueError for
    non-finite estimated poses or a frame count differing from the target.
    """
    target = _checked(target_poses, "target")
    estimate = _checked(estimated_poses, "estimate", len(target))
    target_steps = relative_motions(target)[:, :3, :3]
    estimate_steps = relative_motions(estimate)[:, :3, :3]
    angular_path = rotation_angle(target_steps).sum()
    if angular_path < ZERO_PATH:
        return math.nan
    disagreement = rotation_angle(np.swapaxes(target_steps, -1, -2) @ estimate_steps).sum()
    return float(disagreement / angular_path)


def _checked(poses, name: str, frames: int | None = None) -> np.ndarray:
    """Poses as a finite (T, 4, 4) float array with T >= 2 (and T == frames when given)."""
    poses = np.asarray(poses, dtype=float)
    if poses.ndim != 3 or poses.shape[1:] != (4, 4) or len(poses) < 2:
        raise ValueError(f"{name!r}: poses must have shape (T>=2, 4, 4), got {poses.shape}")
    if frames is not None and len(poses) != frames:
        raise ValueError(f"{name!r}: {len(poses)} poses, but the target has {frames}")
    if not np.isfinite(poses).all():
        raise ValueError(f"{name!r}: poses contain NaN or inf")
    return poses
