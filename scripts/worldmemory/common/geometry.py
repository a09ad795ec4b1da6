"""Rigid and similarity transforms of camera poses (pure numpy).

Poses are 4x4 camera-to-world matrices in the OpenCV convention (x right, y down, z forward),
stacked as arrays of shape (T, 4, 4): the rotation block maps camera axes to world axes and the
last column is the camera centre in world coordinates. These are the objects Q_t of
WorldMemBench Section 4.3, used to score the trajectories of Section 3.3.
"""

from __future__ import annotations

import numpy as np


def rotation_angle(R) -> float | np.ndarray:
    """SO(3) geodesic angle in [0, pi] of R (3, 3) or a batch (..., 3, 3), in radians.

    This is theta(.) of Section 4.3, Eq. 3: arccos((trace R - 1) / 2). It is evaluated as
    atan2(|vee(R - R^T)|, trace R - 1), which is the same angle for a rotation (the two
    arguments are 2 sin(theta) and 2 cos(theta)) but keeps full precision near 0 and pi, where
    arccos loses half the digits (a 1e-9 rad step would read as 0), and needs no clipping for
    slightly non-orthonormal estimates, where the arccos argument leaves [-1, 1].
    """
    R = np.asarray(R, dtype=float)
    cos2 = np.trace(R, axis1=-2, axis2=-1) - 1.0
    skew = R - np.swapaxes(R, -1, -2)
    axis = np.stack([skew[..., 2, 1], skew[..., 0, 2], skew[..., 1, 0]], axis=-1)
    sin2 = np.linalg.norm(axis, axis=-1)
    angle = np.arctan2(sin2, cos2)
    return float(angle) if angle.ndim == 0 else angle


def rot_x(angle: float) -> np.ndarray:
    """Right-handed rotation by ``angle`` radians about the x axis (pitch in OpenCV)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle: float) -> np.ndarray:
    """Right-handed rotation by ``angle`` radians about the y axis (yaw in OpenCV)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(angle: float) -> np.ndarray:
    """Right-handed rotation by ``angle`` radians about the z axis (roll in OpenCV)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def pose(R, t) -> np.ndarray:
    """4x4 transform(s) with rotation R (..., 3, 3) and translation t (..., 3)."""
    R = np.asarray(R, dtype=float)
    t = np.asarray(t, dtype=float)
    batch = np.broadcast_shapes(R.shape[:-2], t.shape[:-1])
    T = np.zeros(batch + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = t
    T[..., 3, 3] = 1.0
    return T


def invert(T) -> np.ndarray:
    """Rigid inverse [R^T, -R^T t] of T (..., 4, 4); exact, unlike a general matrix inverse."""
    T = np.asarray(T, dtype=float)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    return pose(Rt, -np.einsum("...ij,...j->...i", Rt, T[..., :3, 3]))


def relative_motions(poses) -> np.ndarray:
    """Adjacent motions Delta Q_t = Q_t^{-1} Q_{t+1}, t = 0..T-2 (Section 4.3): shape (T-1, 4, 4).

    Each motion is expressed in the frame of camera t, so it does not depend on where the
    trajectory sits in the world.
    """
    poses = np.asarray(poses, dtype=float)
    return invert(poses[:-1]) @ poses[1:]


def umeyama(src, dst, with_scale: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
    """Least-squares similarity (s, R, t) minimising sum |dst - (s R src + t)|^2 (Umeyama 1991).

    src and dst are corresponding points (N, 3), or (N, 2) in the image plane (a face's landmarks
    onto ArcFace's template, perception.faces). R is always a proper rotation: when the best
    orthogonal fit would be a reflection, the sign of the smallest singular direction is flipped
    (Umeyama's S matrix), as a reflection cannot relate two camera trajectories (nor a face and
    its template). Without ``with_scale`` s is 1 (a rigid fit). Raises ValueError when the source
    points all coincide, where the scale is undefined.
    """
    src = np.asarray(src, dtype=float)
    dst = np.asarray(dst, dtype=float)
    if src.shape != dst.shape or src.ndim != 2 or src.shape[1] not in (2, 3):
        raise ValueError(f"umeyama needs two (N, 3) or two (N, 2) arrays, got {src.shape} and {dst.shape}")
    mu_src, mu_dst = src.mean(0), dst.mean(0)
    x, y = src - mu_src, dst - mu_dst
    var_src = (x**2).sum(1).mean()
    if var_src == 0:
        raise ValueError("umeyama: all source points coincide")
    U, D, Vt = np.linalg.svd(y.T @ x / len(src))
    S = np.diag([1.0] * (src.shape[1] - 1) + [np.sign(np.linalg.det(U) * np.linalg.det(Vt))])
    R = U @ S @ Vt
    s = float(np.trace(np.diag(D) @ S) / var_src) if with_scale else 1.0
    return s, R, mu_dst - s * R @ mu_src


def apply_sim3(s: float, R, t, poses) -> np.ndarray:
    """Map camera-to-world poses (..., 4, 4) through x -> s R x + t.

    Centres become s R p + t and orientations R R_c: the whole camera is moved, so relative
    motions keep their rotation and only their translation is scaled by s.
    """
    poses = np.asarray(poses, dtype=float)
    R = np.asarray(R, dtype=float)
    centres = s * np.einsum("ij,...j->...i", R, poses[..., :3, 3]) + np.asarray(t, dtype=float)
    return pose(R @ poses[..., :3, :3], centres)


def path_length(positions) -> float:
    """Summed length of the segments joining consecutive positions (N, 3)."""
    positions = np.asarray(positions, dtype=float)
    return float(np.linalg.norm(np.diff(positions, axis=0), axis=1).sum())


def intrinsics(width: int, height: int, fov_deg: float) -> np.ndarray:
    """Pinhole K with horizontal field of view fov_deg, square pixels, principal point at the
    image centre (width/2, height/2) in continuous pixel coordinates."""
    if not 0 < fov_deg < 180:
        raise ValueError("fov_deg must be in (0, 180)")
    f = 0.5 * width / np.tan(np.radians(fov_deg) / 2)
    return np.array([[f, 0.0, width / 2], [0.0, f, height / 2], [0.0, 0.0, 1.0]])
