"""Equirectangular (360-degree) geometry and pinhole crops of a panorama (PersistBench, Method 1).

PersistBench, Method 1, uses a 360-degree video as an omniscient observer: every perspective
camera of a (input, reference) pair is a virtual pinhole camera that only rotates (yaw, pitch,
no roll) at the panorama's centre, so each of its frames is a resampling of the equirectangular
frame. This module holds that geometry. It sits in ``common`` because both the synthetic 360-degree
worlds (``worlds.world360``, which render panoramas) and the study (``persistbench``, which
crops and plans views: ``camera_paths``, ``frustum``) stand on it.

Conventions (shared by the whole package)
-----------------------------------------
* World axes as OpenCV and the rest of ``worldmemory``: x right, y DOWN, z forward.
* A view (yaw_deg, pitch_deg): yaw 0, pitch 0 looks along +z; positive yaw turns right (towards
  +x); positive pitch looks up (towards -y); no roll. Camera axes are OpenCV (x right, y down,
  z forward), and the view's camera-to-world rotation is rot_y(yaw) @ rot_x(pitch).
* Equirectangular image W x H (W = 2H). Pixel index (u, v) has longitude
  lon = ((u + 0.5) / W) 2 pi - pi and latitude lat = pi/2 - ((v + 0.5) / H) pi: lon 0 is +z,
  increasing towards +x (so lon of a direction equals the yaw that looks at it), lat positive up
  (equal to the pitch that looks at it). Direction of (lon, lat):
  (cos lat sin lon, -sin lat, cos lat cos lon).
* Two pixel-coordinate conventions, each the natural one for its image:
  - equirectangular coordinates from ``direction_to_pixel`` are *index space*: the inverse of
    the pixel-centre rule above, so pixel index u's centre is at exactly u (range [-0.5, W - 0.5));
  - perspective coordinates from ``project`` are those of the pinhole K of
    ``common.geometry.intrinsics`` (principal point at (width/2, height/2)): the image
    spans [0, width] x [0, height] and pixel index i's centre is at i + 0.5.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from worldmemory.common.geometry import intrinsics, rot_x, rot_y

__all__ = [
    "view_rotation",
    "view_rotations",
    "view_forward",
    "lonlat_to_direction",
    "direction_to_lonlat",
    "equirect_directions",
    "direction_to_pixel",
    "half_fov_deg",
    "perspective",
    "project",
    "wrap_deg",
]


def wrap_deg(angle) -> np.ndarray | float:
    """Angle(s) in degrees wrapped to [-180, 180): views are 360-periodic in yaw."""
    out = (np.asarray(angle, dtype=float) + 180.0) % 360.0 - 180.0
    return float(out) if out.ndim == 0 else out


def view_rotation(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """Camera-to-world rotation (3, 3) of the view (yaw_deg, pitch_deg) (PersistBench, Method 1).

    rot_y(yaw) @ rot_x(pitch): pitch first tilts the optical axis up within the camera's own
    vertical plane, then yaw turns that plane about the world's vertical axis, so the camera's x
    axis stays horizontal (no roll), as for a person turning their head. The third column (the
    optical axis) is lonlat_to_direction(yaw, pitch): a view looks at the panorama point whose
    longitude/latitude equal its yaw/pitch.
    """
    return rot_y(np.radians(float(yaw_deg))) @ rot_x(np.radians(float(pitch_deg)))


def view_rotations(yaw_deg, pitch_deg) -> np.ndarray:
    """Vectorised ``view_rotation``: yaw and pitch broadcast to a shape S, result (*S, 3, 3)."""
    y, p = np.broadcast_arrays(np.radians(np.asarray(yaw_deg, dtype=float)),
                               np.radians(np.asarray(pitch_deg, dtype=float)))
    cy, sy, cp, sp = np.cos(y), np.sin(y), np.cos(p), np.sin(p)
    zero = np.zeros_like(y)
    rows = [[cy, sy * sp, sy * cp], [zero, cp, -sp], [-sy, cy * sp, cy * cp]]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def view_forward(yaw_deg, pitch_deg) -> np.ndarray:
    """Optical axes (..., 3) of views (the third column of ``view_rotations``)."""
    return lonlat_to_direction(np.radians(np.asarray(yaw_deg, dtype=float)),
                               np.radians(np.asarray(pitch_deg, dtype=float)))


def lonlat_to_direction(lon, lat) -> np.ndarray:
    """Unit directions (..., 3) of longitude/latitude in radians (conventions above)."""
    lon, lat = np.broadcast_arrays(np.asarray(lon, dtype=float), np.asarray(lat, dtype=float))
    cl = np.cos(lat)
    return np.stack([cl * np.sin(lon), -np.sin(lat), cl * np.cos(lon)], axis=-1)


def direction_to_lonlat(d) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) in radians of directions (..., 3), any length; lon in [-pi, pi].

    atan2 on both angles keeps full precision near the poles and needs no normalisation.
    """
    d = np.asarray(d, dtype=float)
    x, y, z = d[..., 0], d[..., 1], d[..., 2]
    return np.arctan2(x, z), np.arctan2(-y, np.hypot(x, z))


@lru_cache(maxsize=16)
def _equirect_directions(width: int, height: int) -> np.ndarray:
    u = (np.arange(width) + 0.5) / width * 2 * np.pi - np.pi
    v = np.pi / 2 - (np.arange(height) + 0.5) / height * np.pi
    out = lonlat_to_direction(u[None, :], v[:, None])
    out.setflags(write=False)
    return out


def equirect_directions(width: int, height: int) -> np.ndarray:
    """Unit direction (H, W, 3) of every equirectangular pixel centre (read-only, cached)."""
    return _equirect_directions(int(width), int(height))


def direction_to_pixel(d, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Continuous equirectangular (u, v) of directions (..., 3), in *index space*.

    The exact inverse of the pixel-centre rule lon = ((u + 0.5)/W) 2 pi - pi,
    lat = pi/2 - ((v + 0.5)/H) pi, so a pixel centre's direction maps back to its integer index
    (np.rint gives the pixel hit). u lies in [-0.5, W - 0.5] (the seam at lon = +-pi is
    u = -0.5 = W - 0.5 modulo W), v in [-0.5, H - 0.5].
    """
    lon, lat = direction_to_lonlat(d)
    u = (lon + np.pi) / (2 * np.pi) * width - 0.5
    v = (np.pi / 2 - lat) / np.pi * height - 0.5
    return u, v


def half_fov_deg(fov_deg: float, width: int, height: int) -> tuple[float, float]:
    """Horizontal and vertical half field of view (degrees) of the pinhole K of
    ``common.geometry.intrinsics`` (square pixels, centred principal point)."""
    hx = float(fov_deg) / 2
    hy = float(np.degrees(np.arctan(np.tan(np.radians(hx)) * height / width)))
    return hx, hy


@lru_cache(maxsize=32)
def _camera_rays(width: int, height: int, fov_deg: float) -> np.ndarray:
    """Unit camera-frame rays (height, width, 3) through the pixel centres (i + 0.5, j + 0.5)."""
    K = intrinsics(width, height, fov_deg)
    x = (np.arange(width) + 0.5 - K[0, 2]) / K[0, 0]
    y = (np.arange(height) + 0.5 - K[1, 2]) / K[1, 1]
    rays = np.stack(np.broadcast_arrays(x[None, :], y[:, None], np.ones((1, 1))), axis=-1)
    rays = rays / np.linalg.norm(rays, axis=-1, keepdims=True)
    rays.setflags(write=False)
    return rays


def view_directions(yaw_deg: float, pitch_deg: float, fov_deg: float, width: int,
                    height: int) -> np.ndarray:
    """(height, width, 3) world directions of a view's pixel centres (not normalised)."""
    return _camera_rays(int(width), int(height), float(fov_deg)) @ view_rotation(yaw_deg, pitch_deg).T


def perspective(pano, yaw_deg: float, pitch_deg: float, fov_deg: float, width: int,
                height: int, nearest: bool = False) -> np.ndarray:
    """Pinhole crop (height, width, ...) of an equirectangular image (PersistBench, Method 1).

    This is how PersistBench turns one 360-degree frame into the frame the input or the
    reference camera would have filmed: each crop pixel centre's ray (intrinsics of
    ``common.geometry.intrinsics``, horizontal FoV fov_deg) is rotated by the view
    and looked up in ``pano`` (H, W) or (H, W, C). Images are sampled bilinearly; longitude wraps
    across the left/right seam (the panorama is periodic there, so a view at yaw 180 is
    continuous) while latitude is clamped at the poles (rows beyond the first/last pixel centre
    repeat it). Masks and label maps must use ``nearest=True``, which picks the nearest pixel and
    never invents labels by blending. Integer images are rounded back to their dtype; boolean
    images require ``nearest``.
    """
    pano = np.asarray(pano)
    if pano.ndim not in (2, 3):
        raise ValueError(f"pano must be (H, W) or (H, W, C), got {pano.shape}")
    if pano.dtype == bool and not nearest:
        raise ValueError("boolean masks must be cropped with nearest=True")
    H, W = pano.shape[:2]
    u, v = direction_to_pixel(view_directions(yaw_deg, pitch_deg, fov_deg, width, height), W, H)
    if nearest:
        ui = np.floor(u + 0.5).astype(np.intp) % W
        vi = np.clip(np.floor(v + 0.5).astype(np.intp), 0, H - 1)
        return pano[vi, ui]
    u0f = np.floor(u)
    du = u - u0f
    u0 = u0f.astype(np.intp) % W
    u1 = (u0 + 1) % W
    v = np.clip(v, 0, H - 1)
    v0 = np.minimum(np.floor(v).astype(np.intp), H - 2) if H > 1 else np.zeros_like(u0)
    dv = v - v0
    v1 = np.minimum(v0 + 1, H - 1)
    if pano.ndim == 3:
        du, dv = du[..., None], dv[..., None]

    def tap(vi, ui):  # gather first, convert after: never copies the whole panorama
        return pano[vi, ui].astype(np.float64, copy=False)

    out = ((1 - dv) * ((1 - du) * tap(v0, u0) + du * tap(v0, u1))
           + dv * ((1 - du) * tap(v1, u0) + du * tap(v1, u1)))
    if np.issubdtype(pano.dtype, np.integer):
        info = np.iinfo(pano.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(pano.dtype)
    return out.astype(pano.dtype, copy=False)


def project(directions, yaw_deg: float, pitch_deg: float, fov_deg: float, width: int,
            height: int) -> tuple[np.ndarray, np.ndarray]:
    """Where world directions (..., 3) land in a view's image: (pixels (..., 2), in_front (...)).

    Pixels are continuous coordinates of the pinhole K (``intrinsics(width, height, fov_deg)``):
    the image spans [0, width] x [0, height], pixel i's centre is at i + 0.5. Directions behind
    the camera (camera z <= 0) have in_front False and NaN pixels, since a pinhole image of
    them does not exist; callers test containment with in_front & 0 <= u <= width & ....
    """
    d = np.asarray(directions, dtype=float)
    cam = d @ view_rotation(yaw_deg, pitch_deg)  # R^T d for every row
    K = intrinsics(int(width), int(height), float(fov_deg))
    z = cam[..., 2]
    in_front = z > 0
    safe = np.where(in_front, z, 1.0)
    px = np.stack([K[0, 0] * cam[..., 0] / safe + K[0, 2],
                   K[1, 1] * cam[..., 1] / safe + K[1, 2]], axis=-1)
    px[~in_front] = np.nan
    return px, in_front
