"""Input / reference camera paths over a 360-degree video (PersistBench, Method 1).

PersistBench turns one equirectangular video into a (input, reference) pair of perspective
videos. The *input* camera sees the target, loses it for a prescribed invisible window and (if
the window ends before the clip) finds it again, or follows another ``Schedule`` shape (e.g.
invisible-visible-invisible: it starts turned away); the *reference* camera, the omniscient ground
truth the 4D model's probe render is scored against, keeps the target in view throughout. Both
cameras only rotate at the panorama's centre, so a path is yaw and pitch per frame
(theta_t, phi_t), rendered with ``common.equirect.perspective``.

Reference camera, in the paper's form: yaw and pitch are cubic B-splines (clamped, uniform knots,
evaluated at the frame indices) whose control points minimise, with SciPy's L-BFGS-B,

    L = l_vis L_inc + l_smooth (L_vel + L_acc + L_jerk) + l_center L_center,

and the path is then low-pass filtered in the frequency domain. The paper states the terms but
no numbers and no exact forms; the choices made here are:

* Visibility uses the exact signed angular distance sd_t of the target's centre to the view's
  frustum (``frustum.frustum_signed_distance``), the target being a spherical cap of angular
  radius r_t (``TargetTrack``). Fully in view is sd <= -r, fully out of view sd >= r.
  L_inc = (1/T) sum_t relu(r + m_in + sd)^2 (degrees^2), a hinge with the margin m_in
  (``Schedule``) that the optimiser aims for and the final check does not demand.
* Smoothness: mean squared first, second and third frame differences of yaw and pitch,
  weighted by ``PathParams.smooth_weights``.
* L_center = (1/T) sum of the squared chord between view axis and target centre, in degrees^2
  (~ the squared angle, but smooth at 0): it keeps the target away from the crop's border.
  Yaw is optimised unwrapped (a real number, not modulo 360), so crossing the seam is an
  ordinary step.
* Low-pass: each angle is detrended by the line through its end values, odd-extended, rfft'd,
  bins above ``lowpass_cutoff`` x Nyquist are zeroed and the result is irfft'd back
  (``lowpass``). The filter is linear, so the optimiser works directly on the filtered path
  (basis = filter @ B-spline basis) plus a small penalty on what the filter removes.

Input camera: the reference path turned away from the target and back. Applied to the input
camera, the paper's penalties ask every frame for a hard in/out switch under a low-pass path:
the switch needs a turn of at least 2 r in one frame, which a smooth path can only make with a
swing far beyond it (108 degrees for a 5-degree radius). Here the paper's L_inc / L_exc become
hard constraints and its smoothness terms hard bounds plus an objective, in a linear programme
over a departure angle delta_t (degrees): the input camera's optical axis is the reference's
turned by delta_t along one great circle,

    axis_t = cos(delta_t) ref_t + sin(delta_t) u_t,

u_t the unit tangent at ref_t towards the image's right, left, top or bottom (a yaw or a pitch
turn at the start), so delta_t is the true angle between the two cameras' axes. Per frame,
delta_t is bounded (``_departure_limits``, to ~0.001 degree, on the safe side): on visible
frames up to the largest turn that keeps the target fully in view (its centre in
view on the transition frames, below), in the window from the smallest turn that takes the
whole target out of view to that plus ``margin_deg``, and pitch within ``pitch_bounds_deg``.
The axis' angular speed, acceleration and jerk (``angular_motion``) stay within
``max_speed_deg_per_frame``, ``max_accel_deg_per_frame2`` and ``max_jerk_deg_per_frame3``,
the reference's own motion on each frame subtracted from the bound. The objective is L1, so
the programme stays linear: 0.1 sum |velocity| + sum |acceleration| + 10 sum |jerk| (L_vel,
L_acc, L_jerk, weighted like the reference's smooth_weights; the velocity term also forbids
wandering) + 0.1 sum of delta on visible frames (L_center) - sum of delta in the window
(clearance, up to the margin). Of the four directions the one whose window needs the smallest
turn is tried first, the others in order of their need (ties: right, left, up, down). The path
starts at the reference's view (the paper's L_continuity) when frame 0 is visible and is back
at it on the last frame when the window ends before the clip. This is PersistBench, Method
1's description (a
smooth yaw/pitch path that meets the schedule with the least velocity, acceleration and jerk,
continuous with and centred like the reference), with the B-spline and low-pass kept where they
serve, the reference's path; the departure is one value per frame instead, since its bounds
are hard constraints (a spline's knots would only coarsen where the step into the window can
fall, and a low-pass would move the path off the limits it was planned against).

Transition frames: fully in on frame s - 1 and fully out on frame s needs a turn of 2 r in one
step, whatever the path. The ``transition_frames`` visible frames next to the window may
therefore show the target partly, with its centre in view: the centroid pixel is then in the
crop, so the frame still counts as visible by the rule the videos are cut with (``prepare``:
any target pixel in the crop), and the switch stays between frames s - 1 and s. The step into
the window still turns at least r degrees; the bounds must allow it.

``check_schedule`` verifies both paths exactly (zero margin): the visibility schedule and the
three motion bounds. ``plan_pair`` reports every violation with the bound it breaks and sets
``ok`` False: a pair that misses its schedule is reported and must be dropped, never silently
kept. Everything is deterministic (fixed initialisation, HiGHS's simplex, no randomness).
"""

from __future__ import annotations

import ctypes
import glob
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import scipy
from scipy.interpolate import BSpline
from scipy.optimize import linprog, minimize

from worldmemory.common.equirect import (
    direction_to_lonlat,
    equirect_directions,
    half_fov_deg,
    lonlat_to_direction,
    view_forward,
    wrap_deg,
)
from worldmemory.persistbench.frustum import frustum_signed_distance

__all__ = [
    "TargetTrack",
    "Schedule",
    "ScheduleSpec",
    "ScheduleError",
    "SHAPES",
    "PathParams",
    "CameraPair",
    "plan_pair",
    "plan_reference",
    "plan_input",
    "check_schedule",
    "lowpass",
    "angular_motion",
    "bspline_basis",
]

_DEG2 = (180.0 / np.pi) ** 2
# The input camera's departure: directions (bearing from the image's top, degrees) in tie order,
# the grid of turns its limits are read on and the bisection steps that refine them (1 / 2^10
# degree), the clearance those limits keep from a visibility threshold (above the linear
# programme's 1e-7 tolerance; also the slack on the pitch bounds, which the reference may
# touch), and the objective's weights (module docstring).
_DIRECTIONS = (("right", 90.0), ("left", -90.0), ("up", 0.0), ("down", 180.0))
_GRID_DEG, _BISECT_STEPS = 1.0, 10
_SAFE_DEG = 1e-3
_W_SMOOTH, _W_CENTER, _W_CLEAR = (0.1, 1.0, 10.0), 0.1, 1.0
_BOUNDS = (("max_speed_deg_per_frame", "speed", "deg/frame"),
           ("max_accel_deg_per_frame2", "acceleration", "deg/frame^2"),
           ("max_jerk_deg_per_frame3", "jerk", "deg/frame^3"))
_BOUND_TOL = 1e-6  # the check's slack over a bound: the programme meets it to ~1e-7


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

    Frames outside the invisible windows must hold the target in view (fully, except on the
    ``PathParams.transition_frames`` frames next to a window, which need its centre in view),
    frames inside a window fully out of view. ``Schedule(T, s, e)`` has the one window
    [s, e): visible, invisible, and visible again if the window ends before the clip.
    ``windows`` lists several, e.g. ((0, a), (b, T)) for "invisible-visible-invisible"
    (``from_windows``; ``ScheduleSpec`` builds a schedule from a shape and the fractions of a
    video's length where its segments meet); invisible_start and invisible_end are then the
    first invisible frame and one past the last. No window (invisible_start ==
    invisible_end) means always fully in view: the reference camera's schedule
    (``for_reference``). inside_margin_deg is the clearance inside the image border the
    reference camera's optimiser aims for: slack for the tracker's radius error and for
    rounding in the crop (1 degree is about one crop pixel at 96 px and 90 degrees FoV).
    ``check_schedule`` demands zero margin.
    """

    n_frames: int
    invisible_start: int
    invisible_end: int
    inside_margin_deg: float = 1.0
    windows: tuple[tuple[int, int], ...] | None = None  # None: the one window [start, end)

    def __post_init__(self):
        if self.n_frames < 1:
            raise ValueError("n_frames must be positive")
        if not 0 <= self.invisible_start <= self.invisible_end <= self.n_frames:
            raise ValueError("need 0 <= invisible_start <= invisible_end <= n_frames, got "
                             f"{self.invisible_start}, {self.invisible_end}, {self.n_frames}")
        if self.inside_margin_deg < 0:
            raise ValueError("inside_margin_deg must be non-negative")
        if self.windows is None:
            windows = (((self.invisible_start, self.invisible_end),)
                       if self.invisible_start < self.invisible_end else ())
        else:
            windows = tuple((int(a), int(b)) for a, b in self.windows)
            ends = [t for w in windows for t in w]
            if (any(a >= b for a, b in windows) or ends != sorted(ends)
                    or any(b == a for (_, b), (a, _) in zip(windows, windows[1:]))):
                raise ValueError(f"windows {list(windows)}: expected non-empty [start, end) "
                                 "windows in order, a visible frame between two")
            span = (ends[0], ends[-1]) if windows else (self.invisible_start,) * 2
            if span != (self.invisible_start, self.invisible_end) and windows:
                raise ValueError(f"windows {list(windows)} do not span [invisible_start, "
                                 f"invisible_end) = [{self.invisible_start}, "
                                 f"{self.invisible_end})")
            if not windows and self.invisible_start != self.invisible_end:
                raise ValueError("no window given but invisible_start < invisible_end")
        object.__setattr__(self, "windows", windows)

    @classmethod
    def from_windows(cls, n_frames: int, windows, inside_margin_deg: float = 1.0) -> Schedule:
        """A schedule with the invisible windows [start, end) (in order, disjoint)."""
        windows = tuple((int(a), int(b)) for a, b in windows)
        start, end = (windows[0][0], windows[-1][1]) if windows else (n_frames, n_frames)
        return cls(n_frames, start, end, inside_margin_deg, windows)

    @property
    def invisible(self) -> np.ndarray:
        """(T,) bool: frames where the target must be fully out of view."""
        mask = np.zeros(self.n_frames, dtype=bool)
        for start, end in self.windows:
            mask[start:end] = True
        return mask

    @property
    def visible(self) -> np.ndarray:
        """(T,) bool: frames where the target must be in view."""
        return ~self.invisible

    @property
    def shape(self) -> str:
        """The segments in order, e.g. "visible-invisible-visible" ("visible": no window)."""
        v = self.visible
        runs = [bool(v[0])] + [bool(b) for a, b in zip(v[:-1], v[1:]) if a != b]
        return "-".join("visible" if r else "invisible" for r in runs)

    def describe(self) -> str:
        """The windows as text: "window [16, 32)", "windows [0, 16), [32, 48)"."""
        text = ", ".join(f"[{a}, {b})" for a, b in self.windows) or "none"
        return f"window{'s' if len(self.windows) > 1 else ''} {text}"

    def transition(self, n: int) -> np.ndarray:
        """(T,) bool: the up to n visible frames on each side of each window."""
        mask = np.zeros(self.n_frames, dtype=bool)
        for start, end in self.windows:
            mask[max(start - n, 0):start] = True
            mask[end:end + n] = True
        return mask & self.visible

    def for_reference(self) -> Schedule:
        """The reference camera's schedule: the target in view on every frame."""
        return Schedule(self.n_frames, self.n_frames, self.n_frames, self.inside_margin_deg)

    def to_json(self) -> dict:
        """n_frames, invisible_start, invisible_end, inside_margin_deg and, with more than one
        window, ``windows`` (what sequence.json records)."""
        out = {"n_frames": self.n_frames, "invisible_start": self.invisible_start,
               "invisible_end": self.invisible_end, "inside_margin_deg": self.inside_margin_deg}
        if len(self.windows) > 1:
            out["windows"] = [list(w) for w in self.windows]
        return out


# A schedule's shapes (PersistBench: "visible, then out of view", and "invisible-visible-
# invisible"; the third, visible again at the end, is this workflow's default): the input
# camera's segments in order, True = the target is out of view.
SHAPES = {
    "visible-invisible-visible": (False, True, False),
    "visible-invisible": (False, True),
    "invisible-visible-invisible": (True, False, True),
}
DEFAULT_SHAPE = "visible-invisible-visible"
MIN_FRAMES = 4  # a cubic B-spline path (``bspline_basis``) needs 4 frames


class ScheduleError(ValueError):
    """A video too short for its schedule (it is dropped with this reason, not prepared)."""


@dataclass(frozen=True)
class ScheduleSpec:
    """The configured schedule (``persistbench.sequences``), resolved per video by ``resolve``.

    Relative (``schedule: {shape, bounds}``): ``shape`` one of ``SHAPES``; ``bounds`` the
    fractions (strictly increasing, in (0, 1)) of the video's length T at which its segments
    meet, one fewer than the segments; each becomes frame round(f T) (halves up). Default
    bounds: the clip split evenly (thirds; a half for "visible-invisible").
    Absolute (the older ``invisible: [start, end]``, ``frames``): the one window [start, end)
    in frames, the same for every video (visible-invisible-visible, or visible-invisible when
    end equals the video's length).
    """

    shape: str = DEFAULT_SHAPE
    bounds: tuple[float, ...] | None = None
    frames: tuple[int, int] | None = None

    def __post_init__(self):
        if self.shape not in SHAPES:
            raise ValueError(f"persistbench.sequences.schedule.shape = {self.shape!r}: expected "
                             f"one of {', '.join(SHAPES)}")
        n_bounds = len(SHAPES[self.shape]) - 1
        if self.frames is not None:
            if self.bounds is not None:
                raise ValueError("a schedule has either bounds (fractions) or frames, not both")
            frames = tuple(self.frames)
            if (len(frames) != 2 or not all(isinstance(f, (int, np.integer)) for f in frames)
                    or not 0 <= frames[0] < frames[1] or self.shape != DEFAULT_SHAPE):
                raise ValueError(f"persistbench.sequences.invisible = {list(frames)}: expected "
                                 "[start, end] frames with 0 <= start < end. Fix: correct it, "
                                 "or set persistbench.sequences.schedule: {shape, bounds} with "
                                 "bounds as fractions of each video's length")
            object.__setattr__(self, "frames", tuple(int(f) for f in frames))
            return
        bounds = (tuple(float(b) for b in self.bounds) if self.bounds is not None
                  else tuple(np.arange(1, n_bounds + 1) / (n_bounds + 1)))
        if (len(bounds) != n_bounds or not all(0 < b < 1 for b in bounds)
                or any(b >= c for b, c in zip(bounds, bounds[1:]))):
            raise ValueError(
                f"persistbench.sequences.schedule.bounds = {list(bounds)}: shape {self.shape} "
                f"needs {n_bounds} fraction(s) of the video's length, strictly increasing in "
                f"(0, 1), where its segments meet. Fix: e.g. bounds: "
                f"{[0.5] if n_bounds == 1 else [0.33, 0.67]}")
        object.__setattr__(self, "bounds", bounds)

    @classmethod
    def from_config(cls, schedule: dict | None = None, invisible=None) -> ScheduleSpec:
        """From ``persistbench.sequences``: ``schedule`` ({shape, bounds}) if set, else the
        absolute ``invisible`` [start, end] (default [16, 32])."""
        if schedule:
            unknown = set(schedule) - {"shape", "bounds"}
            if unknown:
                raise ValueError(f"persistbench.sequences.schedule: unknown key(s) "
                                 f"{sorted(unknown)}; expected shape and bounds")
            bounds = schedule.get("bounds")
            return cls(schedule.get("shape", DEFAULT_SHAPE),
                       None if bounds is None else tuple(bounds))
        return cls(frames=tuple(invisible) if invisible is not None else (16, 32))

    def to_json(self) -> dict:
        """{"shape", "bounds"} (relative) or {"invisible": [start, end]} (absolute)."""
        if self.frames is not None:
            return {"invisible": list(self.frames)}
        return {"shape": self.shape, "bounds": list(self.bounds)}

    def resolve(self, n_frames: int, inside_margin_deg: float = 1.0) -> Schedule:
        """The schedule of a video of n_frames frames; ``ScheduleError`` (with the reason and
        the key to change) when the video is too short for it."""
        if n_frames < MIN_FRAMES:
            raise ScheduleError(f"the video has {n_frames} frame(s); a camera path needs at "
                                f"least {MIN_FRAMES}")
        if self.frames is not None:
            start, end = self.frames
            if end > n_frames:
                raise ScheduleError(
                    f"the video has {n_frames} frames, fewer than the {end} the window "
                    f"[{start}, {end}) of persistbench.sequences.invisible needs. Fix: a "
                    "shorter window, or persistbench.sequences.schedule with bounds relative "
                    "to each video's length")
            return Schedule(n_frames, start, end, inside_margin_deg)
        cuts = [0] + [int(np.floor(b * n_frames + 0.5)) for b in self.bounds] + [n_frames]
        segments = list(zip(cuts[:-1], cuts[1:]))
        empty = [f"{'invisible' if hidden else 'visible'} segment {i + 1} [{a}, {b})"
                 for i, ((a, b), hidden) in enumerate(zip(segments, SHAPES[self.shape]))
                 if b <= a]
        if empty:
            raise ScheduleError(
                f"the video's {n_frames} frames are too few for {self.shape} at bounds "
                f"{list(self.bounds)}: {', '.join(empty)} round(s) to no frame. Fix: longer "
                "videos (persistbench.sequences.n_frames for the embedded ones) or other "
                "persistbench.sequences.schedule.bounds")
        windows = [w for w, hidden in zip(segments, SHAPES[self.shape]) if hidden]
        return Schedule.from_windows(n_frames, windows, inside_margin_deg)


@dataclass(frozen=True)
class PathParams:
    """Camera, path and optimiser settings (``persistbench.camera`` of the config). The paper
    gives no numbers; these defaults are choices, tuned on constructed static, moving,
    seam-crossing, high-latitude and short-window cases and on the embedded sequences.

    * fov_deg, width, height: the perspective crops (horizontal FoV; intrinsics of
      ``worldmembench.trajectories.intrinsics``). 90 degrees, the usual 360-to-perspective
      FoV, can hold targets up to nearly 90 degrees across; 96 x 96 px matches the small
      crops of the reduced workflow.
    * margin_deg 5: how far beyond the smallest turn that takes the whole target out of view
      the input camera may go in the window, and the clearance it aims for there (slack for the
      tracker's radius error). It also leaves room to brake after the step into the window.
    * max_speed_deg_per_frame 25, max_accel_deg_per_frame2 18, max_jerk_deg_per_frame3 25:
      bounds on both cameras' optical-axis motion (``angular_motion``), enforced by the
      planner and by ``check_schedule``. The step into (and out of) the window turns at least
      the target's radius r in one frame (module docstring) and must then brake within the
      margin, so these set the largest target a window can hide: r = 20 degrees needs 20 / 15 /
      19 (margin 5), r = 10 only 10 / 5 / 6, r = 30 is dropped; smaller targets move far
      below the bounds (the objective minimises them).
    * transition_frames 2: visible frames on each side of the window that may show the target
      partly (centre in view) while it leaves or comes back.
    * n_knots: the reference's cubic B-spline control points per angle; None (default) picks
      ceil((T - 1) / knot_spacing_frames) + 3, i.e. knots every ``knot_spacing_frames`` = 5.5
      frames (12 control points at T = 48, 25 at T = 120), capped at T, so long clips keep
      the same temporal resolution.
    * lambda_vis 300, lambda_smooth 1, lambda_center 0.01 (reference). Visibility dominates
      (a 1-degree violation costs lambda_vis / T per frame), so the hinge ends within ~0.1
      degree of its margin; the centring weight is small, so it picks among feasible paths.
    * smooth_weights (0.1, 1, 10): weights of L_vel, L_acc, L_jerk inside the smoothness term,
      jerk-heavy on purpose (a velocity penalty makes a moving target's reference lag and
      turn sharply).
    * lowpass_cutoff 0.25 of Nyquist (periods shorter than 8 frames are removed): above the
      content of the spline's ~5.5-frame knot spacing, so the filter only strips ripple.
    * pitch_bounds_deg (-60, 60): keeps cameras from looking at the zenith/nadir, where
      equirectangular content is most distorted; enforced on the reference's control points
      by L-BFGS-B (a cubic B-spline stays within its control points' range, the filtered path
      is clipped to them) and on the input's departure.
    * max_iter 500, ftol 1e-9: L-BFGS-B stopping rules for the reference.
    """

    fov_deg: float = 90.0
    width: int = 96
    height: int = 96
    margin_deg: float = 5.0
    max_speed_deg_per_frame: float = 25.0
    max_accel_deg_per_frame2: float = 18.0
    max_jerk_deg_per_frame3: float = 25.0
    transition_frames: int = 2
    n_knots: int | None = None
    knot_spacing_frames: float = 5.5
    lambda_vis: float = 300.0
    lambda_smooth: float = 1.0
    lambda_center: float = 0.01
    smooth_weights: tuple[float, float, float] = (0.1, 1.0, 10.0)
    lowpass_cutoff: float = 0.25
    pitch_bounds_deg: tuple[float, float] = (-60.0, 60.0)
    max_iter: int = 500
    ftol: float = 1e-9

    def __post_init__(self):
        if not 0 < self.fov_deg < 180:
            raise ValueError("fov_deg must be in (0, 180)")
        if not self.margin_deg >= 0:
            raise ValueError(f"margin_deg = {self.margin_deg!r}: expected degrees >= 0. Fix: "
                             "set persistbench.camera.margin_deg to e.g. 5")
        for key, _, unit in _BOUNDS:
            value = getattr(self, key)
            if not value > 0:
                raise ValueError(f"{key} = {value!r}: expected a positive bound in {unit}. Fix: "
                                 f"set persistbench.camera.{key} > 0")
        if not (isinstance(self.transition_frames, int) and self.transition_frames >= 0):
            raise ValueError(f"transition_frames = {self.transition_frames!r}: expected an "
                             "integer >= 0. Fix: set persistbench.camera.transition_frames to "
                             "e.g. 2")
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


def angular_motion(yaw, pitch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Angular speed (T - 1,), acceleration (T - 2,) and jerk (T - 3,) of a view's optical
    axis, degrees/frame^k: the norm of omega_t, the shortest rotation taking axis t to axis
    t + 1 as a vector, and of its first and second differences.

    True angles on the sphere: a yaw step at pitch 60 moves the axis half as far as at the
    horizon, and a path stored modulo 360 does not jump at the seam. Along one great circle the
    three are |d delta|, |d^2 delta|, |d^3 delta| of the angle travelled.
    """
    d = view_forward(np.asarray(yaw, dtype=float), np.asarray(pitch, dtype=float))
    cross = np.cross(d[:-1], d[1:])
    sin = np.linalg.norm(cross, axis=-1)
    angle = np.arctan2(sin, np.sum(d[:-1] * d[1:], axis=-1))
    omega = cross * np.divide(angle, sin, out=np.ones_like(angle), where=sin > 0)[:, None]
    return (np.degrees(angle), np.degrees(np.linalg.norm(np.diff(omega, axis=0), axis=-1)),
            np.degrees(np.linalg.norm(np.diff(omega, n=2, axis=0), axis=-1)))


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
    """The reference's L (module docstring) as a function of its control points.

    Per-frame terms (visibility hinge, centring) depend on frame t's (yaw, pitch) only, so
    their gradient is taken by vectorised central differences per frame (4 extra evaluations
    of the whole path, not 2n) and mapped to control points through the linear basis; the
    smoothness terms are quadratic and exact.
    """

    STEP = 1e-3  # degrees; sd is accurate to ~1e-6 deg, so the derivative to ~1e-3 relative

    def __init__(self, G, M, dirs, radius, inside_margin_deg, params):
        self.G, self.M, self.dirs, self.radius = G, M, dirs, radius
        T = len(dirs)
        self.a = params.lambda_vis / T
        self.e = params.lambda_center / T * _DEG2
        self.margin, self.params = inside_margin_deg, params
        self.n = G.shape[1]

    def per_frame(self, yaw, pitch):
        p = self.params
        sd = frustum_signed_distance(self.dirs, yaw, pitch, p.fov_deg, p.width, p.height)
        inc = np.maximum(self.radius + self.margin + sd, 0.0) ** 2
        chord = 2.0 - 2.0 * np.sum(view_forward(yaw, pitch) * self.dirs, axis=-1)
        return self.a * inc + self.e * chord

    def __call__(self, x):
        yaw, pitch = self.G @ x[: self.n], self.G @ x[self.n:]
        h = self.STEP
        dy = np.array([0.0, h, -h, 0.0, 0.0])[:, None]
        dp = np.array([0.0, 0.0, 0.0, h, -h])[:, None]
        ell = self.per_frame(yaw + dy, pitch + dp)
        gy = (ell[1] - ell[2]) / (2 * h)
        gp = (ell[3] - ell[4]) / (2 * h)
        My, Mp = self.M @ x[: self.n], self.M @ x[self.n:]
        f = ell[0].sum() + x[: self.n] @ My + x[self.n:] @ Mp
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


def plan_reference(track: TargetTrack, schedule: Schedule,
                   params: PathParams = PathParams()) -> tuple[np.ndarray, np.ndarray, dict]:
    """Optimise the reference camera's (yaw, pitch); returns (yaw, pitch, report).

    The target in view on every frame (L_inc, aiming for ``schedule.inside_margin_deg``) and
    centred (L_center), smooth B-splines, low-pass filtered. The report is ``check_schedule``'s
    for ``schedule.for_reference()`` plus the optimiser's loss, iterations and time.
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
    obj = _Objective(G, M, dirs, radius, schedule.inside_margin_deg, params)
    x0 = np.concatenate([np.linalg.lstsq(G, lon_u, rcond=None)[0],
                         np.clip(np.linalg.lstsq(G, np.clip(lat, lo, hi), rcond=None)[0], lo, hi)])
    n = G.shape[1]
    with _single_threaded_lbfgsb():
        res = minimize(obj, x0, jac=True, method="L-BFGS-B",
                       bounds=[(None, None)] * n + [(lo, hi)] * n,
                       options={"maxiter": params.max_iter, "ftol": params.ftol,
                                "gtol": 1e-8})
    raw_yaw, raw_pitch = B @ res.x[:n], B @ res.x[n:]
    yaw = lowpass(raw_yaw, params.lowpass_cutoff)
    pitch = np.clip(lowpass(raw_pitch, params.lowpass_cutoff), lo, hi)
    report = check_schedule(track, yaw, pitch, schedule.for_reference(), params)
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


def _tangent(yaw, pitch, bearing_deg: float) -> np.ndarray:
    """Unit tangents (T, 3) at views' axes, bearing_deg clockwise from the image's top (the
    camera has no roll, so 90 is the image's right: a yaw turn; 0 its top: a pitch turn)."""
    y, p, b = np.radians(yaw), np.radians(pitch), np.radians(bearing_deg)
    right = np.stack([np.cos(y), np.zeros_like(y), -np.sin(y)], axis=-1)
    up = np.stack([-np.sin(p) * np.sin(y), -np.cos(p), -np.sin(p) * np.cos(y)], axis=-1)
    return np.cos(b) * up + np.sin(b) * right


def _turn(ref_axis, u, delta_deg) -> tuple[np.ndarray, np.ndarray]:
    """(yaw, pitch) in degrees of the axes ref_axis turned by delta_deg towards u (broadcast)."""
    a = np.radians(delta_deg)[..., None]
    lon, lat = direction_to_lonlat(np.cos(a) * ref_axis + np.sin(a) * u)
    return np.degrees(lon), np.degrees(lat)


class _Limits(NamedTuple):
    """Per frame, turns (degrees) along one direction's great circle: the largest with the
    target fully in view, with its centre in view and with the pitch in bounds; the smallest
    with it fully out of view and the end of that fully-out stretch (-inf / inf: none)."""

    inside: np.ndarray
    centre: np.ndarray
    pitch: np.ndarray
    out: np.ndarray
    out_end: np.ndarray


def _leading(mask) -> np.ndarray:
    """(T,) number of leading True values of each row of a (T, K) mask."""
    return np.where(mask.all(axis=1), mask.shape[1], np.argmin(mask, axis=1))


def _departure_limits(dirs, radius, ref_axis, u, params: PathParams) -> _Limits:
    """``_Limits`` found on a 1-degree grid of turns and refined by bisection to ~0.001 degree,
    each on its safe side (a turn at which the property was seen to hold)."""
    lo, hi = params.pitch_bounds_deg
    r = radius[:, None]
    rows = np.arange(len(dirs))

    def properties(delta):  # (T, K) turns -> fully in, centre in, pitch in bounds, fully out
        yaw, pitch = _turn(ref_axis[:, None, :], u[:, None, :], delta)
        sd = frustum_signed_distance(dirs[:, None, :], yaw, pitch, params.fov_deg,
                                     params.width, params.height)
        return (sd <= -r - _SAFE_DEG, sd <= -_SAFE_DEG,
                (pitch >= lo - _SAFE_DEG) & (pitch <= hi + _SAFE_DEG), sd >= r + _SAFE_DEG)

    grid = np.arange(0.0, 180.0 + _GRID_DEG / 2, _GRID_DEG)
    K = len(grid)
    on_grid = properties(np.broadcast_to(grid, (len(dirs), K)))
    out = on_grid[3]
    first = np.argmax(out, axis=1)
    back_in = ~out & (np.arange(K) > first[:, None])
    # Five changes of a property between grid[k - 1] and grid[k], bisected together: the ends
    # of the leading runs where the first three hold, the start and end of the fully-out run.
    prop = (0, 1, 2, 3, 3)
    held = [_leading(on_grid[i]) for i in range(3)]
    k = np.clip(np.stack(held + [first, np.argmax(back_in, axis=1)], axis=1), 1, K - 1)
    a, b = grid[k - 1], grid[k]
    value = np.stack([on_grid[i][rows, k[:, j] - 1] for j, i in enumerate(prop)], axis=1)
    for _ in range(_BISECT_STEPS):
        mid = (a + b) / 2
        now = properties(mid)
        same = np.stack([now[i][:, j] for j, i in enumerate(prop)], axis=1) == value
        a, b = np.where(same, mid, a), np.where(same, b, mid)
    inside, centre, pitch = (np.where(n == 0, -np.inf, np.where(n == K, grid[-1], a[:, j]))
                             for j, n in enumerate(held))
    found = out.any(axis=1)
    start = np.where(first == 0, 0.0, b[:, 3])
    end = np.where(back_in.any(axis=1), a[:, 4], grid[-1])
    return _Limits(inside, centre, pitch, np.where(found, start, np.inf),
                   np.where(found, end, -np.inf))


def _frame_bounds(lim: _Limits, schedule: Schedule, params: PathParams, relax=()):
    """(lower, upper) bounds (T,) of the departure on each frame; ``relax`` names keys whose
    limits are dropped (for the reasons of an infeasible plan)."""
    window = schedule.invisible
    near = schedule.visible if "transition_frames" in relax else schedule.transition(
        params.transition_frames)
    cap = lim.out_end if "margin_deg" in relax else np.minimum(lim.out + params.margin_deg,
                                                                lim.out_end)
    upper = np.where(window, cap, np.where(near, lim.centre, lim.inside))
    if "pitch_bounds_deg" not in relax:
        upper = np.minimum(upper, lim.pitch)
    for end in (0, -1):  # start at the reference's view (the paper's L_continuity), and end
        if not window[end]:  # back at it when the window ends before the clip
            upper[end] = min(upper[end], 0.0)
    return np.where(window, lim.out, 0.0), upper


def _solve_departure(lower, upper, window, ref_motion, params: PathParams, relax=()):
    """The departure angles (T,) of the linear programme (module docstring), or None when no
    path meets the per-frame bounds and the motion bounds (those named in ``relax`` dropped)."""
    T = len(lower)
    if np.any(lower > upper):
        return None
    # variables: delta (T), then z_k >= |k-th differences of delta| for k = 1, 2, 3: the L1
    # velocity, acceleration and jerk terms, each z_k bounded by its motion bound
    rows, bounds, cost = [], list(zip(lower, upper)), [np.where(window, -_W_CLEAR, _W_CENTER)]
    n_aux = [max(T - k, 0) for k in (1, 2, 3)]
    for k, ((key, _, _), moved, weight) in enumerate(zip(_BOUNDS, ref_motion, _W_SMOOTH), 1):
        D = np.diff(np.eye(T), n=k, axis=0)
        before, after = sum(n_aux[:k - 1]), sum(n_aux[k:])
        for sign in (1, -1):
            rows.append(np.hstack([sign * D, np.zeros((n_aux[k - 1], before)),
                                   -np.eye(n_aux[k - 1]), np.zeros((n_aux[k - 1], after))]))
        limit = (np.full(n_aux[k - 1], np.inf) if key in relax
                 else np.maximum(getattr(params, key) - moved, 0.0))
        bounds += [(0.0, None if np.isinf(z) else z) for z in limit]
        cost.append(np.full(n_aux[k - 1], weight))
    A = np.vstack(rows)
    res = linprog(np.concatenate(cost), A_ub=A, b_ub=np.zeros(len(A)), bounds=bounds,
                  method="highs")
    return res.x[:T] if res.status == 0 else None


def plan_input(track: TargetTrack, ref_yaw, ref_pitch, schedule: Schedule,
               params: PathParams = PathParams()) -> tuple[np.ndarray, np.ndarray, dict]:
    """Plan the input camera as the reference path turned away for the window (module
    docstring); returns (yaw, pitch, report), the report ``check_schedule``'s plus
    ``departure`` (direction, needed and largest turn, degrees). When no turn meets the
    schedule within the bounds, the camera stays on the reference path and the first reason
    names the bounds that, relaxed alone, would allow one.
    """
    t0 = time.perf_counter()
    ref_yaw = np.asarray(ref_yaw, dtype=float)
    ref_pitch = np.asarray(ref_pitch, dtype=float)
    window = schedule.invisible
    yaw, pitch, departure, first_reason = ref_yaw.copy(), ref_pitch.copy(), None, []
    if window.any():
        lon_u, lat, radius = track.filled()
        dirs = lonlat_to_direction(np.radians(lon_u), np.radians(lat))
        ref_axis = view_forward(ref_yaw, ref_pitch)
        motion = angular_motion(ref_yaw, ref_pitch)
        options = []
        for name, bearing in _DIRECTIONS:
            u = _tangent(ref_yaw, ref_pitch, bearing)
            lim = _departure_limits(dirs, radius, ref_axis, u, params)
            options.append((float(lim.out[window].max()), name, u, lim))
        options.sort(key=lambda o: o[0])  # stable: ties keep the order of _DIRECTIONS

        def solve(option, relax=()):
            lower, upper = _frame_bounds(option[3], schedule, params, relax)
            return _solve_departure(lower, upper, window, motion, params, relax)

        for option in options:
            delta = solve(option)
            if delta is not None:
                need, name, u, _ = option
                yaw, pitch = _turn(ref_axis, u, delta)
                yaw = ref_yaw + wrap_deg(yaw - ref_yaw)
                departure = {"direction": name, "needed_deg": need,
                             "max_turn_deg": float(delta.max())}
                break
        else:
            def feasible(relax):
                return any(solve(o, relax) is not None for o in options)

            motion_keys = tuple(k for k, _, _ in _BOUNDS)
            alone = [k for k in motion_keys + ("margin_deg", "transition_frames",
                                               "pitch_bounds_deg") if feasible((k,))]
            helps = (f"{' or '.join(alone)} alone" if alone else
                     f"{', '.join(motion_keys)} together" if feasible(motion_keys) else None)
            bounds = ", ".join(f"{k} = {getattr(params, k)}" for k in motion_keys)
            which = "it" if len(alone) == 1 else "one of them" if alone else "them"
            fix = (f"relaxing {helps} would allow one. Fix: raise {which} in "
                   "persistbench.camera" if helps else
                   "relaxing none of them alone, nor the motion bounds together, would allow "
                   "one. Fix: lengthen the window or widen fov_deg")
            first_reason = [
                f"no turn away meets the schedule ({schedule.describe()}, needing "
                f"{options[0][0]:.1f} deg, and at least "
                f"the target's radius, {radius[window].max():.1f} deg, in the step into it) "
                f"within {bounds}, margin_deg = {params.margin_deg}, transition_frames = "
                f"{params.transition_frames}, pitch_bounds_deg = {params.pitch_bounds_deg}; "
                f"{fix}; the input camera was left on the reference path"]
    report = check_schedule(track, yaw, pitch, schedule, params)
    report["reasons"] = first_reason + report["reasons"]
    report.update({"departure": departure, "seconds": time.perf_counter() - t0})
    return yaw, pitch, report


def check_schedule(track: TargetTrack, yaw, pitch, schedule: Schedule,
                   params: PathParams = PathParams(), margin_deg: float = 0.0) -> dict:
    """Verify a camera path against a schedule and the motion bounds, exactly, frame by frame
    (PersistBench, Method 1).

    A visible frame fails unless the target's cap is fully inside the view (clearance
    -sd - r >= margin_deg), a transition frame (``Schedule.transition``) unless its centre is
    (-sd >= margin_deg), a frame of the invisible window unless the cap is fully outside
    (sd - r >= margin_deg). The axis' speed, acceleration and jerk (``angular_motion``) must
    not exceed ``params``' bounds; ``bound_violations`` lists, per bound, the first frame of
    each offending difference. Untracked frames are checked against the interpolated track and
    listed under ``untracked_frames``. Returns a JSON-serialisable dict with ``ok``, the
    violating frames, the smallest clearances, the largest motion and human-readable
    ``reasons``.
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
    near = schedule.transition(params.transition_frames)
    full, inv = schedule.visible & ~near, schedule.invisible
    full_bad = np.flatnonzero(full & (inside < margin_deg))
    near_bad = np.flatnonzero(near & (-sd < margin_deg))
    inv_bad = np.flatnonzero(inv & (outside < margin_deg))
    hx, hy = half_fov_deg(params.fov_deg, params.width, params.height)
    reasons = []
    too_big = np.flatnonzero(full & (radius > min(hx, hy)))
    if len(too_big):
        reasons.append(f"target radius up to {radius[too_big].max():.1f} deg exceeds the view's "
                       f"inscribed half-angle {min(hx, hy):.1f} deg on {len(too_big)} frame(s): "
                       "it cannot be fully in view")
    if len(full_bad):
        reasons.append(f"target not fully in view on {len(full_bad)} frame(s) that must see it: "
                       f"{_frames(full_bad)}")
    if len(near_bad):
        reasons.append(f"target's centre not in view on {len(near_bad)} transition frame(s) "
                       f"(transition_frames = {params.transition_frames}): {_frames(near_bad)}")
    if len(inv_bad):
        reasons.append(f"target not fully out of view on {len(inv_bad)} frame(s) of the "
                       f"invisible window: {_frames(inv_bad)}")
    motion = angular_motion(yaw, pitch)
    bound_bad = {}
    for (key, what, unit), values in zip(_BOUNDS, motion):
        bad = np.flatnonzero(values > getattr(params, key) + _BOUND_TOL)
        bound_bad[key] = [int(t) for t in bad]
        if len(bad):
            reasons.append(f"angular {what} up to {values.max():.2f} {unit} exceeds {key} = "
                           f"{getattr(params, key)} at frame(s) {_frames(bad)}. Fix: raise {key} "
                           "in persistbench.camera or lengthen the window")
    return {
        "ok": not (len(full_bad) or len(near_bad) or len(inv_bad)
                   or any(bound_bad.values())),
        "n_frames": T,
        "visible_violations": [int(t) for t in np.union1d(full_bad, near_bad)],
        "invisible_violations": [int(t) for t in inv_bad],
        "bound_violations": bound_bad,
        "transition_frames": [int(t) for t in np.flatnonzero(near)],
        "min_inside_clearance_deg": float(inside[full].min()) if full.any() else None,
        "min_outside_clearance_deg": float(outside[inv].min()) if inv.any() else None,
        "untracked_frames": [int(t) for t in np.flatnonzero(~track.tracked)],
        "max_speed_deg": float(motion[0].max()) if len(motion[0]) else 0.0,
        "max_accel_deg": float(motion[1].max()) if len(motion[1]) else 0.0,
        "max_jerk_deg": float(motion[2].max()) if len(motion[2]) else 0.0,
        "reasons": reasons,
    }


def _frames(idx) -> str:
    idx = [int(t) for t in idx]
    return str(idx) if len(idx) <= 12 else f"{idx[:12]} ..."


def plan_pair(track: TargetTrack, schedule: Schedule,
              params: PathParams = PathParams()) -> CameraPair:
    """Plan the (input, reference) camera pair of one PersistBench sequence (Method 1).

    The reference camera keeps the target in view on every frame; the input camera is the
    reference turned away for ``schedule``'s window (so it starts at the reference's view when
    frame 0 is visible). Both paths are checked exactly; ``ok`` is False, with the reasons in
    ``report["reasons"]``, when either misses its schedule or a bound: such a pair must be
    dropped.
    """
    t0 = time.perf_counter()
    ref_yaw, ref_pitch, ref_report = plan_reference(track, schedule, params)
    in_yaw, in_pitch, in_report = plan_input(track, ref_yaw, ref_pitch, schedule, params)
    reasons = [f"reference: {r}" for r in ref_report["reasons"]]
    reasons += [f"input: {r}" for r in in_report["reasons"]]
    ok = bool(ref_report["ok"] and in_report["ok"])
    a, b = view_forward(in_yaw[0], in_pitch[0]), view_forward(ref_yaw[0], ref_pitch[0])
    gap = np.degrees(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b))
    report = {"ok": ok, "reasons": reasons, "input": in_report, "reference": ref_report,
              "start_view_gap_deg": float(gap),
              "seconds": time.perf_counter() - t0}
    return CameraPair(in_yaw, in_pitch, ref_yaw, ref_pitch, ok, report)
