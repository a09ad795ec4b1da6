import json

import numpy as np
import pytest
from worldmemory.persistbench.camera_paths import (
    PathParams,
    Schedule,
    TargetTrack,
    bspline_basis,
    check_schedule,
    jerk,
    lowpass,
    plan_pair,
)
from worldmemory.persistbench.equirect import (
    equirect_directions,
    lonlat_to_direction,
    project,
    wrap_deg,
)

T, START, END, RADIUS = 48, 16, 32, 5.0
PARAMS = PathParams()

# Jerk bound for the static case. Between frames START-1 and START the target must go from
# fully in to fully out of view, so the view turns by at least 2 r = 10 degrees in one frame
# (12 with the optimiser's 1-degree margins), twice per window. Reaching 10 deg/frame from rest
# under a constant |jerk| J takes 2 sqrt(10 / J) frames: 6.3 frames at J = 1, which fits the
# 16-frame window and the 16 visible frames before it, so 1 deg/frame^3 is achievable and is
# about 60 times below what the unsmoothed step (the initialisation) has. The reference
# camera of a static target need not move at all.
MAX_JERK = 1.0


def _cap_points(lon_deg, lat_deg, radius_deg, n=48):
    """Directions covering a target's angular box: centre, a ring at r/2 and the rim at r."""
    c = lonlat_to_direction(np.radians(lon_deg), np.radians(lat_deg))
    a = np.cross(c, [0.0, 1.0, 0.0])
    a /= np.linalg.norm(a)
    b = np.cross(c, a)
    phi = np.linspace(0, 2 * np.pi, n, endpoint=False)
    pts = [c]
    for rho in np.radians([radius_deg / 2, radius_deg]):
        ring = np.cos(rho) * c + np.sin(rho) * (np.cos(phi)[:, None] * a + np.sin(phi)[:, None] * b)
        pts.extend(ring)
    return np.array(pts)


def _seen(points, yaw, pitch, params=PARAMS):
    """Per point: does it land in the view's image (independent of check_schedule)?"""
    px, front = project(points, yaw, pitch, params.fov_deg, params.width, params.height)
    with np.errstate(invalid="ignore"):
        return (front & (px[:, 0] >= 0) & (px[:, 0] <= params.width)
                & (px[:, 1] >= 0) & (px[:, 1] <= params.height))


def _moving_track(n, lon_from, lon_to, radius=RADIUS):
    lon = wrap_deg(np.linspace(lon_from, lon_to, n))  # stored wrapped, as a tracker gives it
    return TargetTrack(lon, np.zeros(n), np.full(n, radius))


@pytest.fixture(scope="module")
def static_pair():
    track = TargetTrack.static(0.0, 0.0, RADIUS, T)
    return track, plan_pair(track, Schedule(T, START, END), PARAMS)


def test_static_target_pair_meets_schedule(static_pair):
    track, pair = static_pair
    assert pair.ok, pair.report["reasons"]
    assert pair.report["input"]["ok"] and pair.report["reference"]["ok"]
    for arr in (pair.input_yaw, pair.input_pitch, pair.reference_yaw, pair.reference_pitch):
        assert arr.shape == (T,) and np.all(np.isfinite(arr))
    pts = _cap_points(0.0, 0.0, RADIUS)
    for t in range(T):
        seen_in = _seen(pts, pair.input_yaw[t], pair.input_pitch[t])
        if START <= t < END:
            assert not seen_in.any(), f"input sees the target in the invisible frame {t}"
        else:
            assert seen_in.all(), f"input misses part of the target on visible frame {t}"
        assert _seen(pts, pair.reference_yaw[t], pair.reference_pitch[t]).all(), t
    assert np.abs(jerk(pair.input_yaw, pair.input_pitch)).max() < MAX_JERK
    assert np.abs(jerk(pair.reference_yaw, pair.reference_pitch)).max() < MAX_JERK
    # L_continuity: both cameras start at the same view
    assert pair.report["start_view_gap_deg"] < 0.5
    # the report carries the optimiser's numbers and is JSON-serialisable
    for cam in ("input", "reference"):
        rep = pair.report[cam]
        assert rep["visible_violations"] == [] and rep["invisible_violations"] == []
        assert {"loss", "iterations", "converged", "max_jerk_deg"} <= set(rep)
    json.dumps(pair.to_json())


def test_moving_target_across_seam(static_pair):
    n = 48
    track = _moving_track(n, 0.0, 200.0)
    assert np.any(track.lon_deg < 0)  # really crosses lon = 180
    pair = plan_pair(track, Schedule(n, 16, 32), PARAMS)
    assert pair.report["reference"]["ok"], pair.report["reasons"]
    for t in range(n):
        pts = _cap_points(track.lon_deg[t], 0.0, RADIUS)
        assert _seen(pts, pair.reference_yaw[t], pair.reference_pitch[t]).all(), t
    # unwrapped yaw: the seam is crossed without a 360-degree jump
    assert np.abs(np.diff(pair.reference_yaw)).max() < 15.0
    assert pair.ok, pair.report["reasons"]


def test_impossible_one_frame_window_is_reported_not_kept():
    # a 30-degree-radius target must leave a 90-degree view for one frame and be back the
    # next: at least 60 degrees out and 60 back between consecutive frames
    track = TargetTrack.static(0.0, 0.0, 30.0, T)
    pair = plan_pair(track, Schedule(T, 24, 25), PARAMS)
    assert not pair.ok
    rep = pair.report["input"]
    assert not rep["ok"] and (rep["visible_violations"] or rep["invisible_violations"])
    assert any(r.startswith("input:") for r in pair.report["reasons"])


def test_target_larger_than_the_view_is_reported():
    track = TargetTrack.static(0.0, 0.0, 50.0, T)  # 100 degrees across, FoV 90
    pair = plan_pair(track, Schedule(T, START, END), PARAMS)
    assert not pair.ok
    assert not pair.report["reference"]["ok"]
    assert any("exceeds" in r for r in pair.report["reasons"])


def test_deterministic():
    track = _moving_track(40, -30.0, 40.0)
    a = plan_pair(track, Schedule(40, 12, 24), PARAMS)
    b = plan_pair(track, Schedule(40, 12, 24), PARAMS)
    for name in ("input_yaw", "input_pitch", "reference_yaw", "reference_pitch"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.ok == b.ok


def test_check_schedule_flags_a_camera_that_never_looks_away():
    track = TargetTrack.static(0.0, 0.0, RADIUS, T)
    rep = check_schedule(track, np.zeros(T), np.zeros(T), Schedule(T, START, END), PARAMS)
    assert not rep["ok"]
    assert rep["invisible_violations"] == list(range(START, END))
    assert rep["visible_violations"] == []
    assert rep["min_inside_clearance_deg"] == pytest.approx(40.0)
    assert rep["reasons"]
    ok = check_schedule(track, np.zeros(T), np.zeros(T), Schedule(T, T, T), PARAMS)
    assert ok["ok"] and ok["min_outside_clearance_deg"] is None


def test_lowpass_removes_high_frequency_wiggle():
    t = np.arange(96, dtype=float)
    smooth = 30.0 * np.sin(2 * np.pi * t / 96 * 0.7) + 0.5 * t + 10.0
    wiggle = 3.0 * np.sin(2 * np.pi * 0.4 * t)  # 0.4 cycles/frame, above 0.25 x Nyquist
    out = lowpass(smooth + wiggle, 0.25)
    assert np.abs(out - smooth).max() < 0.5  # wiggle amplitude 3 -> under 0.5
    assert np.abs(np.diff(out - smooth)).max() < 0.1
    line = 2.0 * t - 7.0  # linear trends and end values pass unchanged
    np.testing.assert_allclose(lowpass(line, 0.25), line, atol=1e-9)
    np.testing.assert_allclose(out[[0, -1]], (smooth + wiggle)[[0, -1]], atol=1e-9)
    both = lowpass(np.stack([smooth, line], axis=1), 0.25, axis=0)  # vectorised along an axis
    np.testing.assert_allclose(both[:, 1], line, atol=1e-9)


def test_jerk_of_known_paths():
    t = np.arange(10, dtype=float)
    np.testing.assert_allclose(jerk(0.2 * t**3, np.zeros(10)), 1.2)
    np.testing.assert_allclose(jerk(np.zeros(10), -0.5 * t**3), 3.0)
    # a constant turn stored modulo 360 has no jerk (unwrapped first)
    np.testing.assert_allclose(jerk(wrap_deg(40.0 * t), 3.0 * t), 0.0, atol=1e-9)


def test_bspline_basis_is_a_partition_of_unity():
    B = bspline_basis(48, 12)
    assert B.shape == (48, 12)
    np.testing.assert_allclose(B.sum(axis=1), 1.0)
    assert B[0, 0] == pytest.approx(1.0) and B[-1, -1] == pytest.approx(1.0)  # clamped
    assert PARAMS.knots_for(48) == 12 and PARAMS.knots_for(120) == 25
    assert PathParams(n_knots=9).knots_for(48) == 9 and PathParams(n_knots=99).knots_for(20) == 20


def test_target_track_from_masks_across_the_seam():
    W, H = 256, 128
    dirs = equirect_directions(W, H)
    centre = lonlat_to_direction(np.radians(175.0), np.radians(20.0))
    disc = np.degrees(np.arccos(np.clip(dirs @ centre, -1, 1))) <= 8.0
    assert disc[:, 0].any() and disc[:, -1].any()  # the mask is split by the seam
    masks = np.stack([disc, np.zeros_like(disc)])
    track = TargetTrack.from_masks(masks)
    pixel = 180.0 / H
    assert wrap_deg(track.lon_deg[0] - 175.0) == pytest.approx(0.0, abs=pixel / 2)
    assert track.lat_deg[0] == pytest.approx(20.0, abs=pixel / 2)
    assert 8.0 - pixel / 2 <= track.radius_deg[0] <= 8.0 + pixel  # encloses the mask
    assert np.isnan(track.lon_deg[1]) and not track.tracked[1]


def test_untracked_frames_are_interpolated_and_listed():
    lon = np.zeros(T)
    lon[20:25] = np.nan
    track = TargetTrack(lon, np.zeros(T), np.full(T, RADIUS))
    lon_u, lat, rad = track.filled()
    assert np.all(np.isfinite(lon_u)) and np.all(rad == RADIUS)
    pair = plan_pair(track, Schedule(T, 30, 40), PARAMS)
    assert pair.report["input"]["untracked_frames"] == [20, 21, 22, 23, 24]
    assert pair.ok, pair.report["reasons"]
    with pytest.raises(ValueError):
        TargetTrack(np.full(T, np.nan), np.zeros(T), np.zeros(T)).filled()


def test_schedule_validation_and_masks():
    s = Schedule(10, 3, 6)
    assert list(np.flatnonzero(s.invisible)) == [3, 4, 5]
    assert s.for_reference().invisible.sum() == 0 and s.for_reference().visible.all()
    with pytest.raises(ValueError):
        Schedule(10, 6, 3)
    with pytest.raises(ValueError):
        Schedule(10, 3, 11)
    with pytest.raises(ValueError):
        plan_pair(TargetTrack.static(0, 0, 5, 12), Schedule(10, 3, 6), PARAMS)
