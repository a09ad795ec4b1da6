"""Known-answer, pixel-level tests of the minimal-pair renderer spec (see render.py docstring)."""

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from worldmemory.common.video import read_video
from worldmemory.permanence import render as R

ALL_FRAMES = list(range(R.CLIP_FRAMES))
RADII = [4, 8, 16, 32]


def red_mask(frames):
    """Ball pixels: the only pixels whose red channel dominates (distractors and background never do)."""
    f = frames.astype(int)
    return f[..., 0] > np.maximum(f[..., 1], f[..., 2])


def centroids(frames):
    """(row, col) centroid of the red pixels of each frame; NaN where there are none."""
    out = []
    for m in red_mask(frames):
        rows, cols = np.nonzero(m)
        out.append((rows.mean(), cols.mean()) if rows.size else (np.nan, np.nan))
    return np.array(out)


def test_constants():
    assert (R.SIZE, R.FPS, R.CLIP_FRAMES, R.EVENT_FRAME) == (256, 7.5, 64, 32)
    assert (R.WINDOW_START, R.WINDOW_FRAMES, R.BALL_ROW) == (28, 32, 190)
    assert list(R.MAIN_TIMING.frames()) == list(range(28, 60))
    assert R.X_START + R.SPEED * 62.5 == pytest.approx(228.0)


def test_ball_x_known_values():
    assert R.ball_x(0, "moving") == 28.0
    assert R.ball_x(28, "moving") == 117.6
    assert R.ball_x(31, "moving") == 127.2
    assert R.ball_x(59, "moving") == 216.8
    assert R.ball_x(10, "stationary") == 60.0
    assert R.ball_x(59, "stationary") == 117.6  # stopped at f = 28
    assert R.ball_x(31, "moving", "absent") == 127.2
    assert R.ball_x(32, "moving", "absent") is None
    assert R.ball_x(50, "moving", "static") == 127.2
    assert R.ball_x(5, "moving", "never_rendered") is None
    assert R.expected_ball_x("moving", 40) == R.ball_x(40, "moving")
    with pytest.raises(ValueError):
        R.ball_x(0, "moving", "gone")
    with pytest.raises(ValueError):
        R.render_world(R.Scene(8, 0, 0), "sideways", "present")


@pytest.mark.parametrize("radius", RADII)
def test_ball_centre_row_190_and_speed(radius):
    frames = R.render_world(R.Scene(radius, 0, 0), "moving", "present")
    c = centroids(frames)
    expected = 28 + 3.2 * np.arange(28, 60)
    assert np.all(np.abs(c[:, 0] - 190) < 0.5)
    assert np.all(np.abs(c[:, 1] - expected) < 0.5)
    assert np.polyfit(np.arange(28, 60), c[:, 1], 1)[0] == pytest.approx(3.2, abs=0.02)
    area = red_mask(frames).sum(axis=(1, 2))
    assert np.all(np.abs(area / (np.pi * radius**2) - 1) < 0.15)


@pytest.mark.parametrize("f, x", [(28, 117.6), (30, 124.0)])
def test_ball_pixels_match_disk_and_checker_formula(f, x):
    """Exact known answer for R = 8, K = 0, at a fractional and an integral centre."""
    radius = 8
    frame = R.render_world(R.Scene(radius, 0, 0), "moving", "present", frames=[f])[0]
    bg = R.background(R.Scene(radius, 0, 0))
    i, j = np.mgrid[0:256, 0:256]
    inside = (i - 190) ** 2 + (j - x) ** 2 <= radius**2
    even = (np.floor((j - x) / 4) + np.floor((i - 190) / 4)) % 2 == 0
    expected = bg.copy()
    expected[inside & even] = (220, 40, 40)
    expected[inside & ~even] = (150, 20, 20)
    assert np.array_equal(frame, expected)
    if f == 28:
        assert tuple(frame[190, 118]) == (220, 40, 40)  # (j-x)/4 = 0.1
        assert tuple(frame[190, 117]) == (150, 20, 20)  # (j-x)/4 = -0.15
        assert tuple(frame[194, 118]) == (150, 20, 20)  # (i-190)/4 = 1
        assert red_mask(frame[None])[0, 190, 125] and not red_mask(frame[None])[0, 190, 126]
    else:
        assert tuple(frame[190, 124]) == (220, 40, 40)
        assert tuple(frame[190, 128]) == (150, 20, 20)  # (j-x)/4 = 1
        assert tuple(frame[190, 132]) == (220, 40, 40)  # on the circle, (j-x)^2 == R^2: inside
        assert tuple(frame[182, 124]) == (220, 40, 40)  # top of the disk, floor(-8/4) = -2


@pytest.mark.parametrize("radius", [4, 32])
def test_background_tiles_and_guide_line(radius):
    scene = R.Scene(radius, 0, 3)
    frame = R.render_world(scene, "moving", "never_rendered", frames=[40])[0].astype(int)
    assert np.array_equal(frame[..., 0], frame[..., 1]) and np.array_equal(frame[..., 1], frame[..., 2])
    gray = frame[..., 0]
    line = [190 + radius + 2, 190 + radius + 3]
    assert np.all(gray[line] == 40)
    tiles_ok = np.ones(256, bool)
    tiles_ok[line] = False
    values = []
    for ti in range(16):
        for tj in range(16):
            rows = [r for r in range(ti * 16, ti * 16 + 16) if tiles_ok[r]]
            tile = gray[rows, tj * 16 : tj * 16 + 16]
            assert tile.min() == tile.max(), (ti, tj)
            values.append(tile[0, 0])
    assert 70 <= min(values) and max(values) <= 130
    assert min(values) < 80 and max(values) > 120  # drawn from the whole range
    # Static over time.
    other = R.render_world(scene, "moving", "never_rendered", frames=[0])[0]
    assert np.array_equal(other, frame.astype(np.uint8))


def test_event_frame_present_vs_absent():
    scene = R.Scene(8, 2, 1)
    present = R.render_world(scene, "moving", "present", ALL_FRAMES)
    absent = R.render_world(scene, "moving", "absent", ALL_FRAMES)
    assert np.array_equal(present[:32], absent[:32])
    assert not np.array_equal(present[32], absent[32])
    assert red_mask(present[32:63]).any(axis=(1, 2)).all()
    assert not red_mask(absent[32:]).any()


@pytest.mark.parametrize("radius", RADII)
def test_exit_ball_leaves_the_frame_exactly_when_the_mask_starts(radius):
    # Appendix I: a ball on the same row at the same speed that leaves the frame when the mask starts.
    scene = R.Scene(radius, 2, 1)
    exit_world = R.render_world(scene, "moving", "exit", ALL_FRAMES)
    never = R.render_world(scene, "moving", "never_rendered", ALL_FRAMES)
    ball = red_mask(exit_world)
    frames_with_ball = np.nonzero(ball.any(axis=(1, 2)))[0]
    assert frames_with_ball.max() == R.EVENT_FRAME - 1
    assert np.array_equal(exit_world[R.EVENT_FRAME:], never[R.EVENT_FRAME:])
    rows = np.nonzero(ball.any(axis=(0, 2)))[0]
    assert rows.min() >= 190 - radius and rows.max() <= 190 + radius
    xs = [R.ball_x(f, "moving", "exit", radius) for f in range(R.EVENT_FRAME)]
    assert np.allclose(np.diff(xs), R.SPEED)
    assert xs[-1] - radius < R.SIZE <= xs[-1] + R.SPEED - radius


def test_exit_world_is_moving_only_and_needs_the_radius():
    with pytest.raises(ValueError, match="moving ball only"):
        R.ball_x(10, "stationary", "exit", 8)
    with pytest.raises(ValueError, match="radius"):
        R.ball_x(10, "moving", "exit")


@pytest.mark.parametrize("radius", RADII)
@pytest.mark.parametrize("motion", R.MOTIONS)
def test_worlds_identical_before_event_and_differ_only_in_band(radius, motion):
    scene = R.Scene(radius, 4, 2)
    worlds = {w: R.render_world(scene, motion, w, ALL_FRAMES) for w in R.WORLDS if w != "exit"}
    for w in ("absent", "static"):
        assert np.array_equal(worlds["present"][:32], worlds[w][:32])
    # never_rendered differs from the others only by the ball, so only in the band, before and after.
    for w in ("present", "absent", "static"):
        diff_rows = np.nonzero((worlds[w] != worlds["never_rendered"]).any(axis=(0, 2, 3)))[0]
        assert diff_rows.min() >= 190 - radius and diff_rows.max() <= 190 + radius
    for w in ("absent", "static"):
        diff = (worlds["present"][32:] != worlds[w][32:]).any(axis=(0, 2, 3))
        rows = np.nonzero(diff)[0]
        if motion == "stationary" and w == "static":
            assert rows.size == 0  # a stopped ball is already static
        else:
            assert rows.size and rows.min() >= 190 - radius and rows.max() <= 190 + radius


def test_stationary_ball_stops_and_static_world_keeps_last_position():
    scene = R.Scene(16, 0, 0)
    stationary = centroids(R.render_world(scene, "stationary", "present", ALL_FRAMES))
    assert np.all(np.abs(stationary[28:, 1] - 117.6) < 0.5)
    assert np.ptp(stationary[28:, 1]) == 0
    assert np.all(np.abs(np.diff(stationary[5:29, 1]) - 3.2) < 0.5)  # moving before it stops
    static = centroids(R.render_world(scene, "moving", "static", ALL_FRAMES))
    present = centroids(R.render_world(scene, "moving", "present", ALL_FRAMES))
    assert np.array_equal(static[:32], present[:32])
    assert np.all(np.abs(static[32:, 1] - 127.2) < 0.5)
    assert np.ptp(static[32:, 1]) == 0


@pytest.mark.parametrize("scene", [R.Scene(8, 2, s) for s in range(5)] + [R.Scene(32, 4, s) for s in range(5)])
def test_distractors_above_row_130_sizes_and_colours(scene):
    frames = R.render_world(scene, "moving", "never_rendered", ALL_FRAMES)
    bg = R.background(scene)
    changed = (frames != bg).any(axis=3)
    assert not changed[:, 131:].any()  # never reaches the ball's row
    colours = [tuple(int(v) for v in c) for c in np.unique(frames[changed], axis=0)]
    assert len(colours) == scene.n_distractors
    heights, widths = [], []
    for colour in colours:
        assert colour[0] <= max(colour[1:]) and all(30 <= v <= 220 for v in colour)
        mask = (frames == colour).all(axis=3) & changed
        visible = mask.any(axis=(1, 2))
        assert visible.mean() > 0.5  # only another distractor can hide it
        rows = [np.nonzero(r)[0] for r in mask[visible].any(axis=2)]
        cols = [np.nonzero(c)[0] for c in mask[visible].any(axis=1)]
        heights.append(max(r[-1] - r[0] + 1 for r in rows))
        widths.append(max(c[-1] - c[0] + 1 for c in cols))
        assert len({(r[0], c[0] + c[-1]) for r, c in zip(rows, cols)}) > 1  # it moves
    assert all(48 <= h <= 72 for h in heights)
    assert all(36 <= w <= 56 for w in widths)
    # Same distractors in every world.
    present = R.render_world(scene, "moving", "present", ALL_FRAMES)
    assert np.array_equal(present[:, :131], frames[:, :131])


def test_moving_and_stationary_share_the_scene():
    scene = R.Scene(8, 4, 0)
    a = R.render_world(scene, "moving", "never_rendered", ALL_FRAMES)
    b = R.render_world(scene, "stationary", "never_rendered", ALL_FRAMES)
    assert np.array_equal(a, b)


def _digest(scene):
    return hashlib.sha256(R.render_world(scene, "moving", "present", ALL_FRAMES).tobytes()).hexdigest()


def test_deterministic_across_calls_and_processes():
    scene = R.Scene(16, 4, 3)
    assert np.array_equal(R.render_world(scene, "moving", "present"), R.render_world(scene, "moving", "present"))
    code = (
        "import hashlib; from worldmemory.permanence import render as R; "
        "print(hashlib.sha256(R.render_world(R.Scene(16, 4, 3), 'moving', 'present', "
        "range(R.CLIP_FRAMES)).tobytes()).hexdigest())"
    )
    scripts = str(Path(R.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": scripts, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == _digest(scene)
    assert _digest(R.Scene(16, 4, 4)) != _digest(scene)
    assert not np.array_equal(R.background(R.Scene(16, 4, 4)), R.background(scene))


def test_scene_grid():
    grid = R.scene_grid([4, 8, 16, 32], [0, 2, 4], 5)
    ids = [s.id for s in grid]
    assert len(grid) == 60 and len(set(ids)) == 60
    assert R.scene_id(8, 2, 3) == "r08_k2_s3" == R.Scene(8, 2, 3).id
    assert ids[0] == "r04_k0_s0" and ids[-1] == "r32_k4_s4"
    assert grid == R.scene_grid([4, 8, 16, 32], [0, 2, 4], 5)


def test_write_scenes_tiny_grid(tmp_path, capsys):
    manifest = R.write_scenes(tmp_path, [8], [2], 1)
    assert len(capsys.readouterr().out.strip().splitlines()) == 2  # one line per motion
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk == manifest
    assert {k: on_disk[k] for k in on_disk if k != "scenes"} == {
        "size": 256, "fps": 7.5, "clip_frames": 64, "event_frame": 32,
        "window_start": 28, "window_frames": 32, "ball_row": 190, "approach_frames": None,
    }  # fmt: skip
    assert [(e["id"], e["motion"]) for e in on_disk["scenes"]] == [("r08_k2_s0", "moving"), ("r08_k2_s0", "stationary")]
    scene = R.Scene(8, 2, 0)
    for entry in on_disk["scenes"]:
        assert (entry["radius"], entry["n_distractors"], entry["seed"]) == (8, 2, 0)
        assert entry["ball_x"] == [R.expected_ball_x(entry["motion"], f) for f in range(28, 60)]
        assert sorted(entry["worlds"]) == sorted(R.DEFAULT_WORLDS[entry["motion"]])
        for world, rel in entry["worlds"].items():
            assert rel == f"{entry['motion']}/r08_k2_s0/{world}.mkv"
            decoded = read_video(tmp_path / rel)
            assert np.array_equal(decoded, R.render_world(scene, entry["motion"], world))
    first = (tmp_path / "manifest.json").read_bytes()
    R.write_scenes(tmp_path, [8], [2], 1)
    assert (tmp_path / "manifest.json").read_bytes() == first


def test_cli(tmp_path):
    scripts = str(Path(R.__file__).resolve().parents[2])
    cmd = [sys.executable, "-m", "worldmemory.permanence.render", "--out", str(tmp_path),
           "--radii", "4", "--distractors", "0", "--seeds", "1"]  # fmt: skip
    subprocess.run(cmd, env={**os.environ, "PYTHONPATH": scripts}, check=True, capture_output=True)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [e["id"] for e in manifest["scenes"]] == ["r04_k0_s0", "r04_k0_s0"]
    assert (tmp_path / "moving/r04_k0_s0/static.mkv").is_file()


def test_render_speed():
    scene = R.Scene(32, 4, 0)
    start = time.perf_counter()
    for _ in range(5):
        R.render_world(scene, "moving", "present")
    assert (time.perf_counter() - start) / 5 < 0.1


def test_training_clip_shape_determinism_and_speed():
    clip = R.render_training_clip(np.random.default_rng(7))
    assert clip.shape == (32, 256, 256, 3) and clip.dtype == np.uint8
    assert np.array_equal(clip, R.render_training_clip(np.random.default_rng(7)))
    assert not np.array_equal(clip, R.render_training_clip(np.random.default_rng(8)))
    small = R.render_training_clip(R.stable_rng("0", R.TRAIN_NAMESPACE), n_frames=16, size=64)
    assert small.shape == (16, 64, 64, 3) and small.dtype == np.uint8
    start = time.perf_counter()
    clips = [R.render_training_clip(R.stable_rng(str(i), R.TRAIN_NAMESPACE)) for i in range(20)]
    assert (time.perf_counter() - start) / 20 < 0.1  # 0.02-0.05 s; this machine's speed varies 2x
    # The family varies: not all clips share a background, and some contain non-red balls.
    assert len({c[0, 0, 0, 0] for c in clips}) > 1
    assert not all(np.array_equal(c[0], c[-1]) for c in clips)


@pytest.mark.parametrize("fps, clip_frames, event, start", [(15.0, 128, 64, 56), (30.0, 256, 128, 112)])
def test_frame_rates_keep_the_physical_clip(fps, clip_frames, event, start):
    """Appendix I "Frame rate": 128 / 256-frame clips, 64-frame windows, the same physical speed and
    0.53 s of visible ball before the mask."""
    clip = R.timing(fps)
    assert (clip.clip_frames, clip.event_frame, clip.window_start) == (clip_frames, event, start)
    assert clip.window_frames == 64
    assert (clip.event_frame - clip.window_start) / fps == pytest.approx(4 / 7.5)
    main = R.MAIN_TIMING
    for seconds in (0.0, 2.0, 4.0, 4.4, 6.0):  # the ball is where it is at 7.5 fps at the same second
        for motion in R.MOTIONS:
            for world in ("present", "absent"):
                assert R.ball_x(round(seconds * fps), motion, world, 8, clip) == pytest.approx(
                    R.ball_x(round(seconds * 7.5), motion, world, 8, main), abs=1e-6)
    # the static ball stays where it was last seen: in this rate's last frame before the event
    last_seen = R.ball_x(clip.event_frame - 1, "moving", "present", 8, clip)
    assert R.ball_x(clip.clip_frames - 1, "moving", "static", 8, clip) == last_seen
    assert last_seen == pytest.approx(R.X_START + R.SPEED * R.EVENT_FRAME - clip.speed)
    assert R.ball_x(clip.event_frame - 1, "moving", "exit", 8, clip) - 8 < R.SIZE
    assert R.ball_x(clip.event_frame - 1, "moving", "exit", 8, clip) + clip.speed - 8 == pytest.approx(R.SIZE)
    scene = R.Scene(8, 2, 0)
    fast = R.render_world(scene, "moving", "present", [round((R.EVENT_FRAME - 1) * clip.scale)], clip)
    slow = R.render_world(scene, "moving", "present", [R.EVENT_FRAME - 1], main)
    assert np.array_equal(fast, slow)  # distractors too: every motion runs on seconds


def test_an_unknown_frame_rate_is_refused():
    with pytest.raises(ValueError, match="frame rate 24"):
        R.timing(24)


def test_the_manifest_records_the_frame_rate(tmp_path):
    manifest = R.write_scenes(tmp_path, [8], [0], 1, {"moving": ["present"]}, fps=15.0)
    assert (manifest["fps"], manifest["clip_frames"], manifest["event_frame"]) == (15.0, 128, 64)
    assert (manifest["window_start"], manifest["window_frames"]) == (56, 64)
    assert len(manifest["scenes"][0]["ball_x"]) == 64
    assert manifest["scenes"][0]["ball_x"][8] == pytest.approx(R.X_START + R.SPEED * R.EVENT_FRAME)


@pytest.mark.parametrize("approach", [8, 16])
def test_the_tube_querys_ball_is_visible_for_its_approach_then_enters(approach, tmp_path):
    """Appendix I, pretraining-consistent query: 8 or 16 visible frames (1.1 / 2.1 s) before entry."""
    manifest = R.write_scenes(tmp_path, [8], [0], 1, approach_frames=approach)
    assert manifest["approach_frames"] == approach and manifest["event_frame"] == R.WINDOW_START + approach
    assert {s["motion"] for s in manifest["scenes"]} == {"moving"}
    assert sorted(manifest["scenes"][0]["worlds"]) == ["absent", "never_rendered", "present"]
    clip = R.approach_timing(approach)
    scene = R.Scene(8, 0, 0)
    present, absent = (R.render_world(scene, "moving", w, clip=clip) for w in ("present", "absent"))
    assert np.array_equal(present[:approach], absent[:approach])
    assert red_mask(absent[approach - 1]).any() and not red_mask(absent[approach:]).any()
    assert red_mask(present[approach:]).any(axis=(1, 2)).all()


def test_the_tube_query_refuses_odd_or_out_of_window_approaches():
    for frames in (0, 7, 32):
        with pytest.raises(ValueError, match="approach_frames"):
            R.approach_timing(frames)
