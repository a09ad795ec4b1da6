import json
from functools import cache

import numpy as np
import pytest
from worldmemory.common.equirect import (
    equirect_directions,
    lonlat_to_direction,
    project,
    view_forward,
    wrap_deg,
)
from worldmemory.persistbench.camera_paths import (
    PathParams,
    Schedule,
    TargetTrack,
    angular_motion,
    bspline_basis,
    check_schedule,
    lowpass,
    plan_input,
    plan_pair,
)
from worldmemory.persistbench.frustum import frustum_signed_distance

T, START, END, RADIUS = 48, 16, 32, 5.0
PARAMS = PathParams()
TOL = 0.5  # degrees over needed + margin: the brute force's grids
# A static target's reference camera need not move at all.
MAX_REFERENCE_JERK = 1.0


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


def _assert_schedule_met(lon, lat, radius, yaw, pitch, schedule, params=PARAMS):
    """Independently of check_schedule: fully seen on visible frames, the centre seen on the
    transition frames next to the window, nothing seen inside it."""
    k = params.transition_frames
    s, e = schedule.invisible_start, schedule.invisible_end
    for t in range(schedule.n_frames):
        seen = _seen(_cap_points(np.broadcast_to(lon, schedule.n_frames)[t], lat, radius),
                     yaw[t], pitch[t], params)
        if s <= t < e:
            assert not seen.any(), f"the target is seen in the invisible frame {t}"
        elif s - k <= t < s or e <= t < e + k:
            assert seen[0], f"the target's centre is not seen on transition frame {t}"
        else:
            assert seen.all(), f"part of the target is missed on visible frame {t}"


def _axis_motion(yaw, pitch):
    """Speed, acceleration, jerk of the optical axis, written out independently: the angle
    between consecutive axes, and differences of the rotation vectors taking one to the next."""
    d = view_forward(yaw, pitch)
    angle = np.degrees(np.arccos(np.clip(np.sum(d[:-1] * d[1:], axis=1), -1, 1)))
    axis = np.cross(d[:-1], d[1:])
    norm = np.linalg.norm(axis, axis=1, keepdims=True)
    omega = np.where(norm > 0, axis / np.where(norm > 0, norm, 1), 0) * angle[:, None]
    return (angle, np.linalg.norm(np.diff(omega, axis=0), axis=1),
            np.linalg.norm(np.diff(omega, n=2, axis=0), axis=1))


@cache
def _needed_turn(lat, radius, params=PARAMS):
    """Brute force: the smallest angle, over 36 directions, that the view's axis must turn
    away from the target's centre (pitch within bounds all the way) to hold it fully out.
    The same at every longitude."""
    c = lonlat_to_direction(0.0, np.radians(lat))
    right = np.array([1.0, 0.0, 0.0])
    up = np.cross(right, c)  # y points down: right x forward is up
    deltas = np.radians(np.arange(0.0, 150.0, 0.1))
    lo, hi = params.pitch_bounds_deg
    best = np.inf
    for b in np.radians(np.arange(0.0, 360.0, 10.0)):
        d = np.cos(deltas)[:, None] * c + np.sin(deltas)[:, None] * (np.cos(b) * up + np.sin(b) * right)
        yaw = np.degrees(np.arctan2(d[:, 0], d[:, 2]))
        pitch = np.degrees(np.arctan2(-d[:, 1], np.hypot(d[:, 0], d[:, 2])))
        sd = frustum_signed_distance(c, yaw, pitch, params.fov_deg, params.width, params.height)
        allowed = np.cumprod((pitch >= lo - 1e-6) & (pitch <= hi + 1e-6)).astype(bool)
        hit = np.flatnonzero((sd >= radius) & allowed)
        if len(hit):
            best = min(best, float(np.degrees(deltas[hit[0]])))
    return best


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
    _assert_schedule_met(0.0, 0.0, RADIUS, pair.input_yaw, pair.input_pitch, Schedule(T, START, END))
    for t in range(T):
        assert _seen(_cap_points(0.0, 0.0, RADIUS), pair.reference_yaw[t],
                     pair.reference_pitch[t]).all(), t
    assert angular_motion(pair.reference_yaw, pair.reference_pitch)[2].max() < MAX_REFERENCE_JERK
    # the input camera starts at the reference's view (the paper's L_continuity)
    assert pair.report["start_view_gap_deg"] < 1e-6
    # the report carries the optimiser's and the departure's numbers and is JSON-serialisable
    ref, inp = pair.report["reference"], pair.report["input"]
    for rep in (ref, inp):
        assert rep["visible_violations"] == [] and rep["invisible_violations"] == []
        assert not any(rep["bound_violations"].values())
    assert {"loss", "iterations", "converged", "max_jerk_deg"} <= set(ref)
    assert inp["departure"]["direction"] == "right"  # yaw, on a tie with pitch at the horizon
    assert inp["transition_frames"] == [START - 2, START - 1, END, END + 1]
    json.dumps(pair.to_json())


CASES = [(lon, lat) for lat in (-60.0, -30.0, 0.0, 30.0, 60.0) for lon in (10.0, 179.0)
         if lon == 10.0 or lat == 0.0]  # at the horizon the turn is a yaw: across the seam


@pytest.mark.parametrize("radius", [5.0, 10.0, 20.0])
@pytest.mark.parametrize("lon, lat", CASES)
def test_input_turns_the_smallest_needed_angle_within_the_bounds(radius, lon, lat):
    """Targets of radius 5-20 degrees, latitudes -60..60, next to the seam or not: the input
    camera turns at most the smallest angle that clears the target plus margin_deg, within the
    speed, acceleration and jerk bounds, and meets the schedule."""
    track = TargetTrack.static(lon, lat, radius, T)
    schedule = Schedule(T, START, END)
    centred = np.full(T, lon), np.full(T, lat)  # a reference that holds the target centred
    yaw, pitch, report = plan_input(track, *centred, schedule, PARAMS)
    assert report["ok"], report["reasons"]
    _assert_schedule_met(lon, lat, radius, yaw, pitch, schedule)
    axes = view_forward(yaw, pitch)
    centre = lonlat_to_direction(np.radians(lon), np.radians(lat))
    excursion = np.degrees(np.arccos(np.clip(axes @ centre, -1, 1))).max()
    needed = _needed_turn(lat, radius)
    assert excursion <= needed + PARAMS.margin_deg + TOL, (excursion, needed)
    assert excursion >= needed - 0.2  # and it does leave (0.2: the brute force's grid)
    speed, accel, jerk = _axis_motion(yaw, pitch)
    assert speed.max() <= PARAMS.max_speed_deg_per_frame + 1e-6
    assert accel.max() <= PARAMS.max_accel_deg_per_frame2 + 1e-6
    assert jerk.max() <= PARAMS.max_jerk_deg_per_frame3 + 1e-6
    assert np.abs(np.diff(yaw)).max() < 180  # no seam jump in the stored yaw
    assert np.all((pitch >= -60 - 1e-3) & (pitch <= 60 + 1e-3))


def test_high_latitude_target_is_left_by_a_pitch_turn():
    # at latitude 60 a yaw turn moves the axis about half as far on the sphere as it turns, so
    # going down is the smaller turn (up would leave the pitch bounds)
    track = TargetTrack.static(0.0, 60.0, 10.0, T)
    _, _, report = plan_input(track, np.zeros(T), np.full(T, 60.0), Schedule(T, START, END), PARAMS)
    assert report["ok"] and report["departure"]["direction"] == "down"
    assert report["departure"]["needed_deg"] == pytest.approx(45.0 + 10.0, abs=0.3)


def test_twenty_degree_target_at_the_equator_is_accepted():
    track = TargetTrack.static(0.0, 0.0, 10.0, T)
    pair = plan_pair(track, Schedule(T, START, END), PARAMS)
    assert pair.ok, pair.report["reasons"]
    excursion = np.abs(wrap_deg(pair.input_yaw - 0.0)).max()
    assert excursion <= 45.0 + 10.0 + PARAMS.margin_deg + TOL


def test_moving_target_across_seam():
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
    assert np.abs(np.diff(pair.input_yaw)).max() < 30.0
    assert pair.ok, pair.report["reasons"]
    _assert_schedule_met(track.lon_deg, 0.0, RADIUS, pair.input_yaw, pair.input_pitch,
                         Schedule(n, 16, 32))
    speed = _axis_motion(pair.input_yaw, pair.input_pitch)[0]
    assert speed.max() <= PARAMS.max_speed_deg_per_frame + 1e-6


def test_impossible_one_frame_window_is_reported_not_kept():
    # a 10-degree-radius target must leave a 90-degree view for one frame and be back the
    # next: from its centre on the border (45 degrees) to 55 and back, an acceleration of 20
    track = TargetTrack.static(0.0, 0.0, 10.0, T)
    pair = plan_pair(track, Schedule(T, 24, 25), PARAMS)
    assert not pair.ok
    rep = pair.report["input"]
    assert not rep["ok"] and rep["invisible_violations"] == [24]
    reason = pair.report["reasons"][0]
    assert reason.startswith("input: no turn away meets the schedule")
    assert "relaxing max_accel_deg_per_frame2 alone would allow one" in reason


@pytest.mark.parametrize("lat", [-60.0, 0.0, 60.0])
def test_thirty_degree_radius_target_is_dropped_naming_the_bounds(lat):
    # 60 degrees across: the step into the window alone turns 30 degrees, over the speed bound
    track = TargetTrack.static(179.0, lat, 30.0, T)
    pair = plan_pair(track, Schedule(T, START, END), PARAMS)
    assert pair.report["reference"]["ok"] and not pair.ok
    assert "the target's radius, 30.0 deg" in pair.report["reasons"][0]
    assert "relaxing max_speed_deg_per_frame, max_accel_deg_per_frame2, " \
           "max_jerk_deg_per_frame3 together" in pair.report["reasons"][0]


@pytest.mark.parametrize("key, value", [("max_speed_deg_per_frame", 15.0),
                                        ("max_accel_deg_per_frame2", 12.0),
                                        ("margin_deg", 0.0),
                                        ("transition_frames", 0)])
def test_a_bound_too_tight_for_the_target_is_named(key, value):
    # the step into the window turns at least the radius (20 degrees) in one frame (2 r
    # without transition frames), and braking after it needs room (margin) or deceleration
    params = PathParams(**{key: value})
    track = TargetTrack.static(0.0, 0.0, 20.0, T)
    _, _, report = plan_input(track, np.zeros(T), np.zeros(T), Schedule(T, START, END), params)
    assert not report["ok"]
    assert report["reasons"][0].startswith("no turn away meets the schedule")
    assert key in report["reasons"][0].split("; relaxing ")[1].split(" alone would allow")[0]
    assert plan_input(track, np.zeros(T), np.zeros(T), Schedule(T, START, END), PARAMS)[2]["ok"]


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


def test_check_schedule_enforces_the_motion_bounds():
    # a step path: fully in view up to frame 15, 60 degrees away on 16-31, back on 32
    track = TargetTrack.static(0.0, 0.0, 10.0, T)
    yaw = np.where(Schedule(T, START, END).invisible, 60.0, 0.0)
    rep = check_schedule(track, yaw, np.zeros(T), Schedule(T, START, END), PARAMS)
    assert rep["visible_violations"] == [] and rep["invisible_violations"] == []
    assert not rep["ok"]
    assert rep["bound_violations"]["max_speed_deg_per_frame"] == [START - 1, END - 1]
    assert rep["max_speed_deg"] == pytest.approx(60.0)
    assert any("max_speed_deg_per_frame = 25" in r for r in rep["reasons"])
    loose = PathParams(max_speed_deg_per_frame=61, max_accel_deg_per_frame2=121,
                       max_jerk_deg_per_frame3=181)
    assert check_schedule(track, yaw, np.zeros(T), Schedule(T, START, END), loose)["ok"]


def test_check_schedule_allows_the_centre_only_on_transition_frames():
    track = TargetTrack.static(0.0, 0.0, 10.0, T)
    yaw = np.zeros(T)
    yaw[START - 1] = 40.0  # centre in view (half-FoV 45), rim not: allowed next to the window
    yaw[START - 5] = 40.0  # ... but not away from it
    yaw[START:END] = 60.0
    loose = PathParams(max_speed_deg_per_frame=90, max_accel_deg_per_frame2=180,
                       max_jerk_deg_per_frame3=360)
    rep = check_schedule(track, yaw, np.zeros(T), Schedule(T, START, END), loose)
    assert rep["visible_violations"] == [START - 5]
    yaw[START - 1] = 50.0  # centre out of view on a transition frame
    rep = check_schedule(track, yaw, np.zeros(T), Schedule(T, START, END), loose)
    assert rep["visible_violations"] == [START - 5, START - 1]
    assert any("centre not in view" in r for r in rep["reasons"])


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


def test_angular_motion_measures_the_axis_on_the_sphere():
    t = np.arange(10, dtype=float)
    speed, accel, jerk = angular_motion(0.2 * t**3, np.zeros(10))  # yaw on the horizon
    np.testing.assert_allclose(jerk, 1.2, atol=1e-9)
    np.testing.assert_allclose(speed, np.diff(0.2 * t**3), atol=1e-9)
    np.testing.assert_allclose(angular_motion(np.zeros(10), -0.5 * t**3)[2], 3.0, atol=1e-9)
    # a 10-degree yaw step at pitch 60 moves the axis 2 asin(cos 60 sin 5) = 4.99 degrees, and
    # the same turn stored modulo 360 (crossing the seam) is read the same
    speed, _, _ = angular_motion(wrap_deg(170.0 + 10.0 * t), np.full(10, 60.0))
    np.testing.assert_allclose(speed, np.degrees(2 * np.arcsin(0.5 * np.sin(np.radians(5.0)))))


def test_path_params_name_the_key_and_the_fix():
    with pytest.raises(ValueError, match="max_speed_deg_per_frame = 0.*Fix"):
        PathParams(max_speed_deg_per_frame=0)
    with pytest.raises(ValueError, match="margin_deg = -1.*Fix"):
        PathParams(margin_deg=-1)
    with pytest.raises(ValueError, match="transition_frames = 1.5.*Fix"):
        PathParams(transition_frames=1.5)


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
    assert list(np.flatnonzero(s.transition(2))) == [1, 2, 6, 7]
    assert not s.for_reference().transition(2).any()
    with pytest.raises(ValueError):
        Schedule(10, 6, 3)
    with pytest.raises(ValueError):
        Schedule(10, 3, 11)
    with pytest.raises(ValueError):
        plan_pair(TargetTrack.static(0, 0, 5, 12), Schedule(10, 3, 6), PARAMS)


@pytest.mark.parametrize("windows", [((0, 14), (30, T)), ((20, T),)],
                         ids=["invisible-visible-invisible", "visible-invisible"])
def test_other_schedule_shapes_are_planned_and_checked_independently(windows):
    """A schedule that starts out of view (the input camera turned away from frame 0, the
    reference on the target) or ends out of view: met, by an independent projection of the
    target's cap, with both transitions of a visible segment between two windows."""
    schedule = Schedule.from_windows(T, windows)
    pair = plan_pair(TargetTrack.static(0.0, 0.0, RADIUS, T), schedule, PARAMS)
    assert pair.ok, pair.report["reasons"]
    near = schedule.transition(PARAMS.transition_frames)
    for t in range(T):
        seen = _seen(_cap_points(0.0, 0.0, RADIUS), pair.input_yaw[t], pair.input_pitch[t])
        if schedule.invisible[t]:
            assert not seen.any(), f"the target is seen in the invisible frame {t}"
        else:
            assert seen[0] if near[t] else seen.all(), f"the target is missed on frame {t}"
        assert _seen(_cap_points(0.0, 0.0, RADIUS), pair.reference_yaw[t],
                     pair.reference_pitch[t]).all()
    assert pair.report["input"]["transition_frames"] == [int(t) for t in np.flatnonzero(near)]
    if windows[0][0] == 0:
        assert pair.report["start_view_gap_deg"] > 2 * RADIUS  # off the target from frame 0
