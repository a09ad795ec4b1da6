"""Whether a target is in a view: PersistBench's visibility test (Method 1).

PersistBench's input camera must hold the target's angular box fully inside its frustum before
the invisible window and fully outside within it (L_inc / L_exc); ``camera_paths`` plans the
yaw/pitch paths against this exact, continuous signed distance. The panorama geometry it stands
on (views, pinhole K, conventions) is ``common.equirect``.
"""

from __future__ import annotations

import numpy as np

from worldmemory.common.equirect import half_fov_deg, lonlat_to_direction

__all__ = ["frustum_signed_distance", "angular_box_in_view"]


def _to_camera(d, yaw_deg, pitch_deg) -> np.ndarray:
    """R^T d for views broadcast with directions (..., 3): camera coordinates, written out
    (x = cy dx - sy dz, ...) because the path optimiser calls this thousands of times."""
    y = np.radians(np.asarray(yaw_deg, dtype=float))
    p = np.radians(np.asarray(pitch_deg, dtype=float))
    cy, sy, cp, sp = np.cos(y), np.sin(y), np.cos(p), np.sin(p)
    dx, dy, dz = d[..., 0], d[..., 1], d[..., 2]
    horiz = sy * dx + cy * dz  # component along the yawed forward axis before pitching
    return np.stack([cy * dx - sy * dz, sp * horiz + cp * dy, cp * horiz - sp * dy], axis=-1)


def _frustum_normals(fov_deg: float, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Inward unit normals (4, 3) of the right, left, bottom, top side planes and the unit
    corner rays (4, 3) of the pinhole frustum, in camera coordinates."""
    hx, hy = np.radians(half_fov_deg(fov_deg, width, height))
    normals = np.array([[-np.cos(hx), 0.0, np.sin(hx)], [np.cos(hx), 0.0, np.sin(hx)],
                        [0.0, -np.cos(hy), np.sin(hy)], [0.0, np.cos(hy), np.sin(hy)]])
    tx, ty = np.tan(hx), np.tan(hy)
    corners = np.array([[sx * tx, sy * ty, 1.0] for sx in (-1, 1) for sy in (-1, 1)])
    return normals, corners / np.linalg.norm(corners, axis=1, keepdims=True)


def frustum_signed_distance(directions, yaw_deg, pitch_deg, fov_deg: float, width: int,
                            height: int) -> np.ndarray:
    """Signed angular distance (degrees) from directions to a view's frustum; negative inside.

    Outside, it is the exact great-circle angle to the nearest direction the camera sees (the
    nearest point of the frustum cone lies on a side plane or on a corner ray; both are tried).
    Inside, it is minus the angle to the nearest side plane. So a spherical cap of centre d and
    angular radius r is fully in view iff the value is <= -r and fully out of view iff it is
    >= r: the exact test PersistBench's visibility schedule needs (Method 1), with no
    conservative bounding cone that would make the input camera swing further than necessary.
    The function is continuous (zero on the frustum's boundary), which the path optimiser
    relies on. directions (..., 3) broadcast with yaw_deg and pitch_deg (...).
    """
    d = np.asarray(directions, dtype=float)
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    cam = _to_camera(d, yaw_deg, pitch_deg)
    normals, corners = _frustum_normals(fov_deg, width, height)
    s = cam @ normals.T  # sines of the signed angles to the four side planes
    smin = s.min(axis=-1)
    inside = -np.degrees(np.arcsin(np.clip(smin, -1.0, 1.0)))
    # Outside: project onto each violated plane; keep projections that satisfy the other planes.
    nn = normals @ normals.T
    proj = s[..., None, :] - s[..., :, None] * nn  # [k, j]: n_j . (c - s_k n_k)
    valid = (s < 0) & (s > -1 + 1e-12) & np.all(proj >= -1e-12, axis=-1)
    face = np.where(valid, np.arcsin(np.clip(-s, 0.0, 1.0)), np.inf).min(axis=-1)
    corner = np.arccos(np.clip(cam @ corners.T, -1.0, 1.0)).min(axis=-1)
    outside = np.degrees(np.minimum(face, corner))
    out = np.where(smin >= 0, inside, outside)
    return float(out) if out.ndim == 0 else out


def angular_box_in_view(lon_deg, lat_deg, radius_deg, yaw_deg, pitch_deg, fov_deg: float,
                        width: int, height: int,
                        margin_deg: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(fully_inside, fully_outside) of a target's angular box in a view (broadcast arrays).

    The target is the spherical cap of centre (lon_deg, lat_deg) and angular radius radius_deg,
    the box PersistBench's L_inc / L_exc speak of (Method 1): the input camera must hold it
    fully inside before its invisible window and fully outside within it. ``margin_deg`` widens
    the cap for both tests (demand clearance from the image border). NaN targets are neither.
    """
    centre = lonlat_to_direction(np.radians(np.asarray(lon_deg, dtype=float)),
                                 np.radians(np.asarray(lat_deg, dtype=float)))
    sd = frustum_signed_distance(centre, yaw_deg, pitch_deg, fov_deg, width, height)
    r = np.asarray(radius_deg, dtype=float) + margin_deg
    with np.errstate(invalid="ignore"):
        return sd <= -r, sd >= r
