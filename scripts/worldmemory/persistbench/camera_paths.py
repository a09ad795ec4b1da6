"""Input / reference camera paths over a 360-degree video (PersistBench, Method 1).

PersistBench turns one equirectangular video into a (input, reference) pair of perspective
videos. The *input* camera sees the target, loses it for a prescribed invisible window and (if
the window ends before the clip) finds it again; the *reference* camera, the omniscient ground
truth the 4D model's probe render is scored against, keeps the target in view throughout. Both
cameras only rotate at the panorama's centre, so a path is yaw and pitch per frame
(theta_t, phi_t), rendered with ``equirect.perspective``.

Following the paper, each angle is a cubic B-spline (clamped, uniform knots, evaluated at the
frame indices) whose control points minimise, with SciPy's L-BFGS-B,

    L = l_vis (L_inc + L_exc) + l_smooth (L_vel + L_acc + L_jerk)
        + l_cont L_continuity + l_center L_center,

and the path is then low-pass filtered in the frequency domain. The paper states the terms but
no numbers and no exact forms; the choices made here are:

* Visibility uses the exact signed angular distance sd_t of the target's centre to the view's
  frustum (``equirect.frustum_signed_distance``), the target being a spherical cap of angular
  radius r_t (``TargetTrack``). Fully in view is sd <= -r, fully out of view sd >= r.
  L_inc = (1/T) sum over frames that must see it of relu(r + m_in + sd)^2 and
  L_exc = (1/T) sum over the invisible window of relu(r + m_out - sd)^2 (degrees^2): hinges,
  so a target already safely inside / outside costs nothing, with margins m_in, m_out
  (``Schedule``) that the optimiser aims for and the final check does not demand.
* Smoothness: mean squared first, second and third frame differences of yaw and pitch
  ((deg/frame)^2, (deg/frame^2)^2, (deg/frame^3)^2), weighted by ``PathParams.smooth_weights``.
* L_center = (1/T) sum of the squared chord between view axis and target centre, in degrees^2
  (~ the squared angle, but smooth at 0): on every frame for the reference camera, on the frames
  that must see the target for the input camera. It picks the centred solution among the many
  that satisfy the hinges, which also keeps the target away from the crop's border where the
  4D model's crop is least reliable.
* L_continuity: the input and reference cameras start at the same view, (yaw_0, pitch_0) of the
  input pulled to the reference's by a squared, wrap-aware angle difference. The reference is
  planned first (it does not depend on the input). A shared first frame means the probe camera
  the 4D model renders along the reference path starts from a view it was given (when the
  window starts at frame 0 the input must not see the target there, and the term is dropped).
  Frame-to-frame continuity (no yaw jump) needs no term: yaw is optimised unwrapped (a real
  number, not modulo 360), so crossing the panorama's seam is an ordinary step, and the
  smoothness terms bound it.
* Low-pass: each angle is detrended by the line through its end values, odd-extended (so value
  and slope stay continuous across the periodic boundary, no edge ringing), rfft'd, bins above
  ``lowpass_cutoff`` x Nyquist are zeroed and the result is irfft'd back (``lowpass``). The
  filter is linear, so the optimiser works directly on the filtered path (basis = filter @
  B-spline basis) plus a small penalty on what the filter removes: the schedule is met by the
  path that is actually rendered, and filtering cannot silently break it.
* ``check_schedule`` then verifies the filtered paths exactly (zero margin); ``plan_pair``
  reports every violating frame and sets ``ok`` False: a pair that misses its schedule is
  reported and must be dropped, never silently kept.

Everything is deterministic: fixed initialisation (yaw following the target; for the input
camera a yaw swing away from it over the invisible window, to the left when the target moves
right during the window, otherwise to the right) and no randomness.
"""

from __future__ import annotations

import ctypes
import glob
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import scipy
from scipy.interpolate import BSpline
from scipy.optimize import minimize

from worldmemory.persistbench.equirect import (
    equirect_directions,
    frustum_signed_distance,
    half_fov_deg,
    lonlat_to_direction,
    view_forward,
    wrap_deg,
)

__all__ = [
    "TargetTrack",
    "Schedule",
    "PathParams",
    "CameraPair",
    "plan_pair",
    "plan_camera",
    "check_schedule",
    "lowpass",
    "jerk",
    "bspline_basis",
]

_DEG2 = (180.0 / np.pi) ** 2


@dataclass(frozen=True, eq=False)  # eq=False: generated __eq__ cannot compare arrays
class TargetTrack:
    """The target's angular centre (lon_deg, lat_deg) and angular radius radius_deg per frame.

    Angles follow ``equirect`` (lon 0 = +z, towards +x; lat positive up), shape (T,) each; NaN
    where the target is untracked. The radius is that of a spherical cap enclosing the target,
    the angular "box" of PersistBench's L_inc / L_exc.
    """

    lon_deg: np.ndarray
    lat_deg: np.ndarray
    radius_deg: np.ndarray

    def __post_init__(self):
        arrays = [np.asarray(a, dtype=float).reshape(-1) if np.ndim(a) else None
                  for a in (self.lon_deg, self.lat_deg, self.radius_deg)]
        if any(a is None for a in arrays) or len({len(a) for a in arrays}) != 1:
            raise ValueError("lon_deg, lat_deg and radius_deg must be 1-D arrays of one length")
        for name, a in zip(("lon_deg", "lat_deg", "radius_deg"), arrays):
            object.__setattr__(self, name, a)
        with np.errstate(invalid="ignore"):
            if np.any(self.radius_deg < 0):
                raise ValueError("radius_deg must be non-negative")

    @property
    def n_frames(self) -> int:
        return len(self.lon_deg)

    @property
    def tracked(self) -> np.ndarray:
        """(T,) bool: frames where centre and radius are known."""
        return np.isfinite(self.lon_deg) & np.isfinite(self.lat_deg) & np.isfinite(self.radius_deg)

    @classmethod
    def static(cls, lon_deg: float, lat_deg: float, radius_deg: float,
               n_frames: int) -> TargetTrack:
        """A target that does not move (convenience for tests and static sequences)."""
        return cls(np.full(n_frames, float(lon_deg)), np.full(n_frames, float(lat_deg)),
                   np.full(n_frames, float(radius_deg)))

    @classmethod
    def from_masks(cls, masks) -> TargetTrack:
        """Track from a (T, H, W) boolean mask video of the equirectangular panorama.

        The centre is the area-weighted mean of the mask pixels' unit directions (weights
        cos(lat), an equirectangular pixel's solid angle), renormalised: the spherical
        generalisation of a circular mean of longitudes, so a mask split across the left/right
        seam, or around a pole, gets its true centre rather than the far side of the sphere.
        The radius is the largest angle from that centre to a mask pixel centre, plus half a
        pixel diagonal (a pixel's extent beyond its centre), so the cap encloses the mask.
        Empty frames are NaN (untracked).
        """
        m = np.asarray(masks, dtype=bool)
        if m.ndim != 3:
            raise ValueError(f"masks must be (T, H, W), got {m.shape}")
        T, H, W = m.shape
        dirs = equirect_directions(W, H)
        weight = np.cos(np.pi / 2 - (np.arange(H) + 0.5) / H * np.pi)
        half_pixel = np.degrees(0.5 * np.sqrt(2.0) * np.pi / H)
        lon, lat, rad = (np.full(T, np.nan) for _ in range(3))
        for t in range(T):
            rows, cols = np.nonzero(m[t])
            if len(rows) == 0:
                continue
            d = dirs[rows, cols]
            mean = (weight[rows, None] * d).sum(axis=0)
            norm = np.linalg.norm(mean)
            if norm < 1e-9 * len(rows):  # mask symmetric about the centre: no defined direction
                continue
            c = mean / norm
            lon[t] = np.degrees(np.arctan2(c[0], c[2]))
            lat[t] = np.degrees(np.arctan2(-c[1], np.hypot(c[0], c[2])))
            rad[t] = np.degrees(np.arccos(np.clip(d @ c, -1.0, 1.0)).max()) + half_pixel
        return cls(lon, lat, rad)

    def filled(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lon_unwrapped, lat, radius) in degrees with untracked frames interpolated.

        Longitude is unwrapped (no 360-degree jumps, so it is the yaw that follows the target
        continuously across the seam); gaps are interpolated linearly and the ends held. The
        planner needs a target on every frame; ``check_schedule`` lists the untracked ones.
        """
        ok = self.tracked
        if not ok.any():
            raise ValueError("the target is never tracked")
        t = np.arange(self.n_frames)
        lon_u = np.degrees(np.unwrap(np.radians(self.lon_deg[ok])))
        return (np.interp(t, t[ok], lon_u), np.interp(t, t[ok], self.lat_deg[ok]),
                np.interp(t, t[ok], self.radius_deg[ok]))


@dataclass(frozen=True)
class Schedule:
    """When the input camera must see the target (PersistBench, Method 1).

    Frames [0, invisible_start) and [invisible_end, n_frames) must hold the target fully in
    view, frames [invisible_start, invisible_end) fully out of view. An empty window
    (invisible_start == invisible_end) means always in view: the reference camera's schedule
    (``for_reference``). The margins (degrees) are clearances the optimiser aims for, inside
    the image border and outside it: slack for the tracker's radius error and for rounding in
    the crop. The default 1 degree is about one crop pixel at 96 px and 90 degrees FoV; each
    degree of margin adds one degree to the unavoidable one-frame jump at the window's edges
    (2 r + m_in + m_out, see ``PathParams``), so larger margins cost smoothness.
    ``check_schedule`` demands zero margin.
    """

    n_frames: int
    invisible_start: int
    invisible_end: int
    inside_margin_deg: float = 1.0
    outside_margin_deg: float = 1.0

    def __post_init__(self):
        if self.n_frames < 1:
            raise ValueError("n_frames must be positive")
        if not 0 <= self.invisible_start <= self.invisible_end <= self.n_frames:
            raise ValueError("need 0 <= invisible_start <= invisible_end <= n_frames, got "
                             f"{self.invisible_start}, {self.invisible_end}, {self.n_frames}")
        if self.inside_margin_deg < 0 or self.outside_margin_deg < 0:
            raise ValueError("margins must be non-negative")

    @property
    def invisible(self) -> np.ndarray:
        """(T,) bool: frames where the target must be fully out of view."""
        mask = np.zeros(self.n_frames, dtype=bool)
        mask[self.invisible_start:self.invisible_end] = True
        return mask

    @property
    def visible(self) -> np.ndarray:
        """(T,) bool: frames where the target must be fully in view."""
        return ~self.invisible

    def for_reference(self) -> Schedule:
        """The reference camera's schedule: the target in view on every frame."""
        return Schedule(self.n_frames, self.n_frames, self.n_frames,
                        self.inside_margin_deg, self.outside_margin_deg)


@dataclass(frozen=True)
class PathParams:
    """Camera and optimiser settings. The paper gives no numbers; these defaults are choices,
    tuned on constructed static, moving, seam-crossing and short-window cases.

    * fov_deg, width, height: the perspective crops (horizontal FoV; intrinsics of
      ``worldmembench.trajectories.intrinsics``). 90 degrees, the usual 360-to-perspective
      FoV, can hold targets up to nearly 90 degrees across; 96 x 96 px matches the small
      crops of the reduced workflow (the config overrides all three).
    * n_knots: cubic B-spline control points per angle; None (default) picks
      ceil((T - 1) / knot_spacing_frames) + 3, i.e. knots every ``knot_spacing_frames`` = 5.5
      frames (12 control points at T = 48, 25 at T = 120), capped at T. At each window edge
      the input camera must move the target from fully in to fully out of view between two
      frames, a jump of at least 2 r + m_in + m_out degrees, and it has to ramp into and out
      of that jump inside the window; a fixed count would make the knot spacing of long clips
      too coarse for short windows (12 knots at T = 120 cannot fit a 10-frame window), while
      denser knots only buy sharper, jerkier swings.
    * lambda_vis 300, lambda_smooth 1, lambda_cont 1, lambda_center 0.01. Visibility
      dominates (a 1-degree violation costs lambda_vis / T per frame, more than the whole
      swing's smoothness), so the hinges end within ~0.1 degree of their margins; the centring
      weight is small, so it picks among feasible paths without forcing a last-moment exit.
    * smooth_weights (0.1, 1, 10): weights of L_vel, L_acc, L_jerk inside the smoothness term.
      Jerk-heavy on purpose: a velocity penalty limits how far the input camera swings out and
      forces a sharp turn-around: the paper's plain sum (1, 1, 1) gave more than twice the
      peak jerk (1.2 vs 0.53 deg/frame^3 on a 48-frame, 16-frame-window case) and, at equal
      lambda_vis, missed the schedule on long or late windows that these weights meet.
    * lowpass_cutoff 0.25 of Nyquist (periods shorter than 8 frames are removed): above the
      content of the spline's ~5.5-frame knot spacing, so the filter only strips ripple.
    * pitch_bounds_deg (-60, 60): keeps cameras from looking at the zenith/nadir, where
      equirectangular content is most distorted; enforced on the control points by L-BFGS-B
      (a cubic B-spline stays within its control points' range), then the filtered path is
      clipped to them.
    * max_iter 500, ftol 1e-9: L-BFGS-B stopping rules per camera; typical plans stop after
      150-350 iterations, 0.05-0.3 s per pair on one CPU core.
    """

    fov_deg: float = 90.0
    width: int = 96
    height: int = 96
    n_knots: int | None = None
    knot_spacing_frames: float = 5.5
    lambda_vis: float = 300.0
    lambda_smooth: float = 1.0
    lambda_cont: float = 1.0
    lambda_center: float = 0.01
    smooth_weights: tuple[float, float, float] = (0.1, 1.0, 10.0)
    lowpass_cutoff: float = 0.25
    pitch_bounds_deg: tuple[float, float] = (-60.0, 60.0)
    max_iter: int = 500
    ftol: float = 1e-9

    def __post_init__(self):
        if not 0 < self.fov_deg < 180:
            raise ValueError("fov_deg must be in (0, 180)")
        if self.n_knots is not None and self.n_knots < 4:
            raise ValueError("a cubic B-spline needs at least 4 control points")
        if self.knot_spacing_frames <= 0:
            raise ValueError("knot_spacing_frames must be positive")
        if not 0 < self.lowpass_cutoff <= 1:
            raise ValueError("lowpass_cutoff is a fraction of Nyquist in (0, 1]")
        lo, hi = self.pitch_bounds_deg
        if not -90 <= lo < hi <= 90:
            raise ValueError("pitch_bounds_deg must satisfy -90 <= low < high <= 90")

    def knots_for(self, n_frames: int) -> int:
        """Control points per angle for a clip of n_frames frames (see n_knots)."""
        n = self.n_knots
        if n is None:
            n = int(np.ceil((n_frames - 1) / self.knot_spacing_frames)) + 3
        return max(4, min(int(n), n_frames))


@dataclass(eq=False)
class CameraPair:
    """Planned yaw/pitch paths (degrees, (T,)) of the input and reference cameras.

    Yaw is unwrapped (continuous across the panorama seam, may leave [-180, 180); any value is
    a valid view). ``ok`` is False when either camera misses its schedule; ``report`` holds, per
    camera, the violating frames, clearances, final loss and iterations, and the reasons.
    """

    input_yaw: np.ndarray
    input_pitch: np.ndarray
    reference_yaw: np.ndarray
    reference_pitch: np.ndarray
    ok: bool
    report: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """Plain JSON-serialisable dict (angles rounded to 1e-6 degrees)."""
        def r(a):
            return [round(float(x), 6) for x in a]
        return {"input_yaw": r(self.input_yaw), "input_pitch": r(self.input_pitch),
                "reference_yaw": r(self.reference_yaw),
                "reference_pitch": r(self.reference_pitch),
                "ok": bool(self.ok), "report": self.report}


def jerk(yaw, pitch) -> np.ndarray:
    """Angular jerk per frame (T - 3,), degrees/frame^3: |third differences of (yaw, pitch)|.

    Yaw is unwrapped first, so a path stored modulo 360 does not read as a 360-degree jerk
    (a step of more than 180 degrees between frames is read as the shorter turn, as a viewer
    would see it).
    """
    y = np.degrees(np.unwrap(np.radians(np.asarray(yaw, dtype=float))))
    p = np.asarray(pitch, dtype=float)
    return np.hypot(np.diff(y, n=3), np.diff(p, n=3))


def lowpass(x, cutoff: float, axis: int = 0) -> np.ndarray:
    """Frequency-domain low-pass of a path along ``axis`` (PersistBench, Method 1).

    The path is detrended by the line through its two end values, odd-extended to a periodic
    signal of length 2 (T - 1) (value and slope continuous at the junctions, so the FFT sees no
    edge jump and the result does not ring at the ends), every rfft bin above cutoff x Nyquist
    (cutoff x 0.5 cycles/frame) is zeroed, and the inverse transform plus the trend is returned.
    End values and linear trends pass unchanged. Linear in x.
    """
    x = np.moveaxis(np.asarray(x, dtype=float), axis, 0)
    T = x.shape[0]
    if T < 3:
        return np.moveaxis(x.copy(), 0, axis)
    s = np.linspace(0.0, 1.0, T).reshape((T,) + (1,) * (x.ndim - 1))
    trend = x[:1] + s * (x[-1:] - x[:1])
    y = x - trend
    ext = np.concatenate([y, -y[-2:0:-1]], axis=0)
    spec = np.fft.rfft(ext, axis=0)
    freq = np.fft.rfftfreq(ext.shape[0])
    spec[freq > cutoff * 0.5 + 1e-12] = 0
    out = np.fft.irfft(spec, n=ext.shape[0], axis=0)[:T] + trend
    return np.moveaxis(out, 0, axis)


@lru_cache(maxsize=32)
def _lowpass_matrix(T: int, cutoff: float) -> np.ndarray:
    F = lowpass(np.eye(T), cutoff, axis=0)
    F.setflags(write=False)
    return F


@lru_cache(maxsize=32)
def bspline_basis(n_frames: int, n_knots: int) -> np.ndarray:
    """(T, n) cubic B-spline design matrix: clamped uniform knots on [0, T - 1], evaluated at
    the frame indices, so path = basis @ control_points (a path starts/ends at its end points)."""
    n = min(n_knots, n_frames)
    if n < 4:
        raise ValueError("need at least 4 frames for a cubic B-spline path")
    knots = np.concatenate([[0.0] * 3, np.linspace(0.0, n_frames - 1.0, n - 2),
                            [n_frames - 1.0] * 3])
    B = BSpline.design_matrix(np.arange(n_frames, dtype=float), knots, 3).toarray()
    B.setflags(write=False)
    return B


def _smooth_matrix(T: int, weights, lam: float) -> np.ndarray:
    """Q with path^T Q path = lam * sum_k w_k mean((k-th differences)^2)."""
    Q = np.zeros((T, T))
    for k, w in enumerate(weights, start=1):
        if w and T > k:
            D = np.diff(np.eye(T), n=k, axis=0)
            Q += w * D.T @ D / (T - k)
    return lam * Q


class _Objective:
    """L of the module docstring for one camera, as a function of its control points.

    Per-frame terms (visibility hinges, centring) depend on frame t's (yaw, pitch) only, so
    their gradient is taken by vectorised central differences per frame (4 extra evaluations
    of the whole path, not 2n) and mapped to control points through the linear basis; the
    smoothness terms are quadratic and exact.
    """

    STEP = 1e-3  # degrees; sd is accurate to ~1e-6 deg, so the derivative to ~1e-3 relative

    def __init__(self, G, M, dirs, radius, w_inc, w_exc, w_center, cont, params, schedule):
        self.G, self.M, self.dirs, self.radius = G, M, dirs, radius
        T = len(dirs)
        self.a = params.lambda_vis * w_inc / T
        self.b = params.lambda_vis * w_exc / T
        self.e = params.lambda_center * w_center / T * _DEG2
        self.cont = cont
        self.params, self.schedule = params, schedule
        self.n = G.shape[1]

    def per_frame(self, yaw, pitch):
        p = self.params
        sd = frustum_signed_distance(self.dirs, yaw, pitch, p.fov_deg, p.width, p.height)
        inc = np.maximum(self.radius + self.schedule.inside_margin_deg + sd, 0.0) ** 2
        exc = np.maximum(self.radius + self.schedule.outside_margin_deg - sd, 0.0) ** 2
        chord = 2.0 - 2.0 * np.sum(view_forward(yaw, pitch) * self.dirs, axis=-1)
        return self.a * inc + self.b * exc + self.e * chord

    def paths(self, x):
        return self.G @ x[: self.n], self.G @ x[self.n:]

    def __call__(self, x):
        yaw, pitch = self.paths(x)
        h = self.STEP
        dy = np.array([0.0, h, -h, 0.0, 0.0])[:, None]
        dp = np.array([0.0, 0.0, 0.0, h, -h])[:, None]
        ell = self.per_frame(yaw + dy, pitch + dp)
        f = ell[0].sum()
        gy = (ell[1] - ell[2]) / (2 * h)
        gp = (ell[3] - ell[4]) / (2 * h)
        if self.cont is not None:
            lam = self.params.lambda_cont
            ey = wrap_deg(yaw[0] - self.cont[0])
            ep = pitch[0] - self.cont[1]
            f += lam * (ey**2 + ep**2)
            gy[0] += 2 * lam * ey
            gp[0] += 2 * lam * ep
        My, Mp = self.M @ x[: self.n], self.M @ x[self.n:]
        f += x[: self.n] @ My + x[self.n:] @ Mp
        grad = np.concatenate([self.G.T @ gy + 2 * My, self.G.T @ gp + 2 * Mp])
        return float(f), grad


@lru_cache(maxsize=1)
def _scipy_openblas():
    """SciPy's bundled OpenBLAS (the one L-BFGS-B links), or None where SciPy uses another."""
    pattern = os.path.join(os.path.dirname(scipy.__file__) + ".libs", "libscipy_openblas*.so*")
    for path in sorted(glob.glob(pattern)):
        try:
            lib = ctypes.CDLL(path)
            lib.scipy_openblas_get_num_threads.restype = ctypes.c_int
            lib.scipy_openblas_set_num_threads.argtypes = [ctypes.c_int]
            return lib
        except (OSError, AttributeError):
            continue
    return None


@contextmanager
def _single_threaded_lbfgsb():
    """Run L-BFGS-B with one BLAS thread, restoring the previous count afterwards.

    Its BLAS calls are on vectors of a few dozen numbers; with several OpenBLAS threads on a
    loaded machine (the workflow runs jobs in parallel) each call waits for the other threads,
    and a 0.2 s plan took 1.5-3 s on this project's 2-core machine. A no-op where SciPy's
    BLAS is not its bundled OpenBLAS.
    """
    lib = _scipy_openblas()
    if lib is None:
        yield
        return
    previous = lib.scipy_openblas_get_num_threads()
    lib.scipy_openblas_set_num_threads(1)
    try:
        yield
    finally:
        lib.scipy_openblas_set_num_threads(max(int(previous), 1))


def _initial_yaw_offset(lon_u, lat, radius, schedule, params) -> np.ndarray:
    """The deterministic starting swing of the input camera: zero outside the window, inside it
    a yaw offset that puts the target (at the camera's pitch) a few degrees beyond the border."""
    offset = np.zeros(schedule.n_frames)
    s, e = schedule.invisible_start, schedule.invisible_end
    if e <= s:
        return offset
    hx, _ = half_fov_deg(params.fov_deg, params.width, params.height)
    net = lon_u[e - 1] - lon_u[s]
    sign = -1.0 if net > 0 else 1.0  # away from the target's motion; right when it is static
    need = hx + radius[s:e] + schedule.outside_margin_deg + 5.0
    offset[s:e] = sign * np.minimum(need / np.maximum(np.cos(np.radians(lat[s:e])), 0.2), 180.0)
    return offset


def plan_camera(track: TargetTrack, schedule: Schedule, params: PathParams = PathParams(),
                cont: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Optimise one camera's (yaw, pitch) for ``schedule``; returns (yaw, pitch, report).

    The target must be in view on the schedule's visible frames (L_inc) and out of view in its
    window (L_exc); L_center acts on the visible frames; ``cont`` = (yaw, pitch) of another
    camera's first frame adds L_continuity. The returned paths are the low-pass filtered ones
    and the report is ``check_schedule``'s plus the optimiser's loss, iterations and time.
    """
    t0 = time.perf_counter()
    T = track.n_frames
    if schedule.n_frames != T:
        raise ValueError(f"schedule has {schedule.n_frames} frames, the track {T}")
    lon_u, lat, radius = track.filled()
    lo, hi = params.pitch_bounds_deg
    B = bspline_basis(T, params.knots_for(T))
    F = _lowpass_matrix(T, float(params.lowpass_cutoff))
    G = F @ B
    H = B - G  # what the filter removes from the spline path
    M = G.T @ _smooth_matrix(T, params.smooth_weights, params.lambda_smooth) @ G
    M += params.lambda_smooth * H.T @ H / T
    dirs = lonlat_to_direction(np.radians(lon_u), np.radians(lat))
    vis = schedule.visible.astype(float)
    obj = _Objective(G, M, dirs, radius, vis, 1.0 - vis, vis, cont, params, schedule)

    yaw0 = lon_u + _initial_yaw_offset(lon_u, lat, radius, schedule, params)
    if cont is not None:  # start in the same 360-degree branch as the other camera
        yaw0 = yaw0 + 360.0 * np.round((cont[0] - yaw0[0]) / 360.0)
    pitch0 = np.clip(lat, lo, hi)
    x0 = np.concatenate([np.linalg.lstsq(G, yaw0, rcond=None)[0],
                         np.clip(np.linalg.lstsq(G, pitch0, rcond=None)[0], lo, hi)])
    n = G.shape[1]
    with _single_threaded_lbfgsb():
        res = minimize(obj, x0, jac=True, method="L-BFGS-B",
                       bounds=[(None, None)] * n + [(lo, hi)] * n,
                       options={"maxiter": params.max_iter, "ftol": params.ftol,
                                "gtol": 1e-8})
    raw_yaw, raw_pitch = B @ res.x[:n], B @ res.x[n:]
    yaw = lowpass(raw_yaw, params.lowpass_cutoff)
    pitch = np.clip(lowpass(raw_pitch, params.lowpass_cutoff), lo, hi)
    report = check_schedule(track, yaw, pitch, schedule, params)
    report.update({
        "loss": float(res.fun),
        "iterations": int(res.nit),
        "evaluations": int(res.nfev),
        "converged": bool(res.success),
        "optimizer_message": str(res.message),
        "max_filter_change_deg": float(max(np.abs(raw_yaw - yaw).max(),
                                           np.abs(raw_pitch - pitch).max())),
        "seconds": time.perf_counter() - t0,
    })
    return yaw, pitch, report


def check_schedule(track: TargetTrack, yaw, pitch, schedule: Schedule,
                   params: PathParams = PathParams(), margin_deg: float = 0.0) -> dict:
    """Verify a camera path against a schedule, exactly, frame by frame (PersistBench, Method 1).

    A frame that must see the target fails unless the target's cap is fully inside the view
    (clearance -sd - r >= margin_deg), a frame of the invisible window fails unless it is fully
    outside (sd - r >= margin_deg). Untracked frames are checked against the interpolated track
    and listed under ``untracked_frames``. Returns a JSON-serialisable dict with ``ok``, the
    violating frames, the smallest clearances, the largest jerk and human-readable ``reasons``.
    """
    yaw = np.asarray(yaw, dtype=float)
    pitch = np.asarray(pitch, dtype=float)
    T = track.n_frames
    if yaw.shape != (T,) or pitch.shape != (T,) or schedule.n_frames != T:
        raise ValueError("track, yaw, pitch and schedule must all have n_frames frames")
    lon_u, lat, radius = track.filled()
    dirs = lonlat_to_direction(np.radians(lon_u), np.radians(lat))
    sd = frustum_signed_distance(dirs, yaw, pitch, params.fov_deg, params.width, params.height)
    inside, outside = -sd - radius, sd - radius
    vis, inv = schedule.visible, schedule.invisible
    vis_bad = np.flatnonzero(vis & (inside < margin_deg))
    inv_bad = np.flatnonzero(inv & (outside < margin_deg))
    hx, hy = half_fov_deg(params.fov_deg, params.width, params.height)
    reasons = []
    too_big = np.flatnonzero(vis & (radius > min(hx, hy)))
    if len(too_big):
        reasons.append(f"target radius up to {radius[too_big].max():.1f} deg exceeds the view's "
                       f"inscribed half-angle {min(hx, hy):.1f} deg on {len(too_big)} frame(s): "
                       "it cannot be fully in view")
    if len(vis_bad):
        reasons.append(f"target not fully in view on {len(vis_bad)} frame(s) that must see it: "
                       f"{_frames(vis_bad)}")
    if len(inv_bad):
        reasons.append(f"target not fully out of view on {len(inv_bad)} frame(s) of the "
                       f"invisible window: {_frames(inv_bad)}")
    j = jerk(yaw, pitch)
    return {
        "ok": not (len(vis_bad) or len(inv_bad)),
        "n_frames": T,
        "visible_violations": [int(t) for t in vis_bad],
        "invisible_violations": [int(t) for t in inv_bad],
        "min_inside_clearance_deg": float(inside[vis].min()) if vis.any() else None,
        "min_outside_clearance_deg": float(outside[inv].min()) if inv.any() else None,
        "untracked_frames": [int(t) for t in np.flatnonzero(~track.tracked)],
        "max_jerk_deg": float(j.max()) if len(j) else 0.0,
        "reasons": reasons,
    }


def _frames(idx) -> str:
    idx = [int(t) for t in idx]
    return str(idx) if len(idx) <= 12 else f"{idx[:12]} ..."


def plan_pair(track: TargetTrack, schedule: Schedule,
              params: PathParams = PathParams()) -> CameraPair:
    """Plan the (input, reference) camera pair of one PersistBench sequence (Method 1).

    The reference camera keeps the target in view on every frame; the input camera follows
    ``schedule`` and starts at the reference's first view (L_continuity). Both paths are
    low-pass filtered and then checked exactly; ``ok`` is False, with the reasons in
    ``report["reasons"]``, when either misses its schedule: such a pair must be dropped.
    """
    t0 = time.perf_counter()
    ref_yaw, ref_pitch, ref_report = plan_camera(track, schedule.for_reference(), params)
    # A window that starts at frame 0 forbids the shared first view: no continuity term then.
    starts_visible = bool(schedule.visible[0])
    in_yaw, in_pitch, in_report = plan_camera(
        track, schedule, params, cont=(ref_yaw[0], ref_pitch[0]) if starts_visible else None)
    reasons = [f"reference: {r}" for r in ref_report["reasons"]]
    reasons += [f"input: {r}" for r in in_report["reasons"]]
    ok = bool(ref_report["ok"] and in_report["ok"])
    report = {"ok": ok, "reasons": reasons, "input": in_report, "reference": ref_report,
              "start_view_gap_deg": float(np.hypot(wrap_deg(in_yaw[0] - ref_yaw[0]),
                                                   in_pitch[0] - ref_pitch[0])),
              "seconds": time.perf_counter() - t0}
    return CameraPair(in_yaw, in_pitch, ref_yaw, ref_pitch, ok, report)
