"""Known-answer, pixel-level tests of the visible-container scenes (see containers.py docstring)."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from worldmemory.common.video import read_video
from worldmemory.permanence import containers as C
from worldmemory.permanence import render as R

ALL_FRAMES = list(range(R.CLIP_FRAMES))


def red_mask(frames):
    """Ball pixels: the only pixels whose red channel dominates (box, distractors, background never do)."""
    f = frames.astype(int)
    return f[..., 0] > np.maximum(f[..., 1], f[..., 2])


def box_mask(frames):
    return (frames == np.array(C.BOX_COLOUR, np.uint8)).all(axis=-1)


def main_x(f, motion):
    """The ball's x by the paper's formula (Appendix B), independent of the module."""
    return 28 + 3.2 * (min(f, 28) if motion == "stationary" else f)


def expected_box(f, motion, radius, hidden):
    """[256,256] bool: the box by the docstring's arithmetic (rows 146..233 while closed, else the
    bottom row 4 px above the ball's top; 80 columns centred on the ball, clipped)."""
    closed = 32 <= f < 32 + hidden
    top = 146 if closed else 190 - radius - 4 - 87
    c = int(np.floor(main_x(f, motion) + 0.5))
    mask = np.zeros((256, 256), bool)
    mask[max(top, 0) : top + 88, max(c - 40, 0) : c + 40] = True
    return mask


def render_all(scene, motion, hidden):
    return {w: C.render_container_world(scene, motion, hidden, w, ALL_FRAMES) for w in C.WORLDS}


def test_constants_and_hidden_durations():
    assert (C.BOX_WIDTH, C.BOX_HEIGHT) == (80, 88)
    r, g, b = C.BOX_COLOUR
    assert r <= max(g, b) and len({r, g, b}) > 1  # not red-dominant, not gray
    assert C.HIDDEN_FRAMES == (4, 8, 15, 22)
    assert [round(h / C.FPS, 2) for h in C.HIDDEN_FRAMES] == [0.53, 1.07, 2.0, 2.93]  # Appendix I
    assert [C.open_frame(h) for h in C.HIDDEN_FRAMES] == [36, 40, 47, 54]
    assert all(o in R.MAIN_TIMING.frames() for o in (C.open_frame(h) for h in C.HIDDEN_FRAMES))
    assert C.WORLDS == ("present", "absent", "never_shown", "exit")


def test_box_geometry_known_values():
    assert C.box_x(28, "moving") == 117.6 and C.box_x(59, "moving") == 216.8
    assert C.box_x(59, "stationary") == 117.6
    assert C.box_cols(28, "moving") == (78, 158)  # c = 118
    assert C.box_cols(30, "moving") == (84, 164)  # x = 124.0, c = 124
    assert C.box_cols(0, "moving") == (0, 68)  # clipped at the left border
    assert C.box_cols(59, "moving") == (177, 256)  # clipped at the right border
    assert C.box_rows(32, closed=True) == (146, 234) == C.box_rows(4, closed=True)
    assert C.box_rows(32, closed=False) == (67, 155)  # bottom row 154 = 190 - 32 - 4
    assert C.box_rows(4, closed=False) == (95, 183)  # bottom row 182
    assert C.box_footprint(31, "moving", 16, 4) == (83, 171, 87, 167)  # still open
    assert C.box_footprint(32, "moving", 16, 4) == (146, 234, 90, 170)  # closes at the event
    assert C.box_footprint(35, "moving", 16, 4) == (146, 234, 100, 180)
    assert C.box_footprint(36, "moving", 16, 4) == (83, 171, 103, 183)  # open again
    assert [C.is_closed(f, 8) for f in (31, 32, 39, 40)] == [False, True, True, False]


@pytest.mark.parametrize("motion", R.MOTIONS)
@pytest.mark.parametrize("radius, hidden", [(32, 4), (16, 15), (8, 22)])
def test_box_pixels_in_every_world_and_frame(motion, radius, hidden):
    scene = R.Scene(radius, 4, 1)
    for world, frames in render_all(scene, motion, hidden).items():
        boxes = box_mask(frames)
        for f in ALL_FRAMES:
            assert np.array_equal(boxes[f], expected_box(f, motion, radius, hidden)), (world, f)


@pytest.mark.parametrize("motion", R.MOTIONS)
@pytest.mark.parametrize("hidden", C.HIDDEN_FRAMES)
@pytest.mark.parametrize("radius", [4, 16, 32])
def test_the_ball_is_seen_exactly_when_expected(motion, hidden, radius):
    scene = R.Scene(radius, 2, 0)
    opening = 32 + hidden
    f = np.arange(64)
    exit_in_frame = np.array([R.ball_x(i, "moving", "exit", radius) - radius < 256 for i in range(32)] + [False] * 32)
    expected = {
        "present": (f < 32) | (f >= opening),
        "absent": f < 32,
        "never_shown": np.zeros(64, bool),
        "exit": exit_in_frame,
    }
    assert expected["exit"][28:32].all()  # the exit ball is in view in the window before the box closes
    for world, frames in render_all(scene, motion, hidden).items():
        assert np.array_equal(red_mask(frames).any(axis=(1, 2)), expected[world]), world


@pytest.mark.parametrize("motion", R.MOTIONS)
def test_the_exit_ball_leaves_the_frame_when_the_box_closes(motion):
    for radius in (16, 32):
        frames = C.render_container_world(R.Scene(radius, 2, 3), motion, 8, "exit", ALL_FRAMES)
        red = red_mask(frames)
        seen = np.nonzero(red.any(axis=(1, 2)))[0]
        assert seen.max() == 31
        rows = np.nonzero(red.any(axis=(0, 2)))[0]
        assert rows.min() >= 190 - radius and rows.max() <= 190 + radius
        assert red[31].any(axis=0)[255] and not red[31].any(axis=0)[: 256 - 8].any()  # just its left edge


@pytest.mark.parametrize("motion", R.MOTIONS)
@pytest.mark.parametrize("radius, hidden", [(16, 4), (32, 15), (4, 22)])
def test_worlds_match_the_main_scenes_outside_the_box(motion, radius, hidden):
    """Background, distractors and ball are render's: outside the box every frame equals the main
    world's (never_shown: never_rendered; exit: the moving exit ball for both box motions)."""
    scene = R.Scene(radius, 4, 2)
    main = {
        "present": R.render_world(scene, motion, "present", ALL_FRAMES),
        "absent": R.render_world(scene, motion, "absent", ALL_FRAMES),
        "never_shown": R.render_world(scene, motion, "never_rendered", ALL_FRAMES),
        "exit": R.render_world(scene, "moving", "exit", ALL_FRAMES),
    }
    outside = ~np.stack([expected_box(f, motion, radius, hidden) for f in ALL_FRAMES])
    for world, frames in render_all(scene, motion, hidden).items():
        assert np.array_equal(frames[outside], main[world][outside]), world


@pytest.mark.parametrize("motion", R.MOTIONS)
@pytest.mark.parametrize("hidden", [4, 15])
@pytest.mark.parametrize("radius", [8, 32])
def test_present_and_absent_identical_until_the_box_opens(motion, hidden, radius):
    scene = R.Scene(radius, 4, 4)
    present = C.render_container_world(scene, motion, hidden, "present", ALL_FRAMES)
    absent = C.render_container_world(scene, motion, hidden, "absent", ALL_FRAMES)
    opening = 32 + hidden
    assert np.array_equal(present[:opening], absent[:opening])
    diff = (present != absent).any(axis=-1)
    assert diff[opening:].any(axis=(1, 2)).all()  # the revealed ball, in every frame from the opening
    rows = np.nonzero(diff.any(axis=(0, 2)))[0]
    assert rows.min() >= 190 - radius and rows.max() <= 190 + radius


@pytest.mark.parametrize("motion", R.MOTIONS)
@pytest.mark.parametrize("radius", [4, 32])
def test_the_four_worlds_share_the_box_and_differ_only_on_the_balls_rows(motion, radius):
    scene = R.Scene(radius, 2, 5)
    worlds = render_all(scene, motion, 8)
    ref = worlds["never_shown"]
    for world, frames in worlds.items():
        boxes = np.stack([expected_box(f, motion, radius, 8) for f in ALL_FRAMES])
        assert np.array_equal(box_mask(frames), box_mask(ref)), world
        assert np.array_equal(frames[boxes], ref[boxes]), world
        band = np.ones(256, bool)
        band[190 - radius : 190 + radius + 1] = False
        assert np.array_equal(frames[:, band], ref[:, band]), world


@pytest.mark.parametrize("motion", R.MOTIONS)
def test_the_closed_box_covers_the_disk_of_the_largest_ball(motion):
    radius, hidden = 32, 22
    scene = R.Scene(radius, 4, 0)
    frames = C.render_container_world(scene, motion, hidden, "present", ALL_FRAMES)
    boxes = box_mask(frames)
    i, j = np.mgrid[0:256, 0:256]
    for f in range(64):
        disk = (i - 190) ** 2 + (j - main_x(f, motion)) ** 2 <= radius**2
        if 32 <= f < 32 + hidden:
            assert boxes[f][disk].all(), f
        else:
            assert not boxes[f][disk].any(), f  # open: the whole ball is visible
            assert red_mask(frames[f : f + 1])[0][disk].all(), f
    assert C.MAX_RADIUS >= 32


def test_the_moving_box_carries_on_at_the_balls_speed_and_the_stationary_box_stays():
    scene, hidden = R.Scene(16, 2, 1), 22
    closed = range(32, 32 + hidden)
    centres = {}
    for motion in R.MOTIONS:
        boxes = box_mask(C.render_container_world(scene, motion, hidden, "never_shown", ALL_FRAMES))
        centres[motion] = np.array([np.nonzero(boxes[f].any(axis=0))[0].mean() for f in closed])
        assert all(boxes[f].any(axis=1).sum() == 88 and boxes[f].any(axis=0).sum() == 80 for f in closed)
    moving = centres["moving"]
    assert np.polyfit(np.arange(hidden), moving, 1)[0] == pytest.approx(R.SPEED, abs=0.02)
    assert set(np.diff(moving)) <= {3.0, 4.0}
    assert (moving[-1] - moving[0]) == pytest.approx(R.SPEED * (hidden - 1), abs=1)
    assert np.all(np.abs(moving + 0.5 - np.array([main_x(f, "moving") for f in closed])) <= 0.5)
    assert np.ptp(centres["stationary"]) == 0 and centres["stationary"][0] == 117.5  # columns 78..157
    # Before the event the stationary box follows its ball until it stops at frame 28.
    boxes = box_mask(C.render_container_world(scene, "stationary", hidden, "never_shown", [20, 27, 28, 31]))
    lefts = [np.nonzero(b.any(axis=0))[0][0] for b in boxes]
    assert lefts == [int(np.floor(main_x(f, "moving") + 0.5)) - 40 for f in (20, 27, 28, 28)]


def test_the_box_opens_above_the_revealed_ball():
    radius, hidden = 16, 8
    scene = R.Scene(radius, 0, 0)
    for motion in R.MOTIONS:
        frames = C.render_container_world(scene, motion, hidden, "present", [39, 40])
        rows = np.nonzero(box_mask(frames[1]).any(axis=1))[0]
        assert rows.max() == 190 - radius - 4 and rows.size == 88
        ball_rows = np.nonzero(red_mask(frames[1:]).any(axis=(0, 2)))[0]
        assert rows.max() < ball_rows.min() <= 190 - radius + 1 and 190 + radius - 1 <= ball_rows.max() <= 206
        main = R.render_world(scene, motion, "present", [40])
        assert np.array_equal(red_mask(frames[1:]), red_mask(main))  # the whole ball, where it would be
        assert not red_mask(frames[:1]).any()


def test_render_container_world_default_window_and_refusals():
    scene = R.Scene(16, 2, 0)
    frames = C.render_container_world(scene, "moving", 4, "present")
    assert frames.shape == (32, 256, 256, 3) and frames.dtype == np.uint8
    assert np.array_equal(frames, C.render_container_world(scene, "moving", 4, "present", range(28, 60)))
    with pytest.raises(ValueError, match="motion"):
        C.render_container_world(scene, "sideways", 4, "present")
    with pytest.raises(ValueError, match="world"):
        C.render_container_world(scene, "moving", 4, "static")
    for hidden in (-1, 28):
        with pytest.raises(ValueError, match="hidden_frames"):
            C.render_container_world(scene, "moving", hidden, "present")
    with pytest.raises(ValueError, match="radius"):
        C.render_container_world(R.Scene(40, 0, 0), "moving", 4, "present")
    with pytest.raises(ValueError, match="frames"):
        C.render_container_world(scene, "moving", 4, "present", [64])


def test_write_container_scenes_tiny_grid(tmp_path, capsys):
    manifest = C.write_container_scenes(tmp_path, [8], [2], 1, hidden_frames=[4, 15])
    assert len(capsys.readouterr().out.strip().splitlines()) == 4  # one line per (motion, hidden)
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk == manifest
    assert {k: on_disk[k] for k in on_disk if k != "scenes"} == {
        "size": 256, "fps": 7.5, "clip_frames": 64, "event_frame": 32, "window_start": 28,
        "window_frames": 32, "ball_row": 190, "approach_frames": None, "query": "container", "box": [80, 88],
    }  # fmt: skip
    keys = [(e["motion"], e["hidden_frames"], e["open_frame"], e["id"]) for e in on_disk["scenes"]]
    assert keys == [("moving", 4, 36, "r08_k2_s0"), ("moving", 15, 47, "r08_k2_s0"),
                    ("stationary", 4, 36, "r08_k2_s0"), ("stationary", 15, 47, "r08_k2_s0")]  # fmt: skip
    scene = R.Scene(8, 2, 0)
    for entry in on_disk["scenes"]:
        assert set(entry) == {"id", "radius", "n_distractors", "seed", "motion", "hidden_frames", "open_frame",
                              "worlds", "ball_x", "box_x"}  # fmt: skip
        motion, hidden = entry["motion"], entry["hidden_frames"]
        assert (entry["radius"], entry["n_distractors"], entry["seed"]) == (8, 2, 0)
        assert entry["ball_x"] == [R.expected_ball_x(motion, f) for f in range(28, 60)]
        assert entry["box_x"] == pytest.approx([main_x(f, motion) for f in range(28, 60)], abs=1e-9)
        assert sorted(entry["worlds"]) == sorted(C.WORLDS)
        for world, rel in entry["worlds"].items():
            assert rel == f"{motion}_h{hidden:02d}/r08_k2_s0/{world}.mkv"
            assert np.array_equal(read_video(tmp_path / rel), C.render_container_world(scene, motion, hidden, world))
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 1 + 4 * 4
    first = {p: p.read_bytes() for p in files}
    C.write_container_scenes(tmp_path, [8], [2], 1, hidden_frames=[4, 15])
    assert {p: p.read_bytes() for p in files} == first  # deterministic, byte for byte


def test_deterministic_across_processes():
    scene = R.Scene(32, 4, 3)
    code = ("import hashlib; from worldmemory.permanence import containers as C, render as R; "
            "print(hashlib.sha256(C.render_container_world(R.Scene(32, 4, 3), 'moving', 15, 'present', "
            "range(64)).tobytes()).hexdigest())")  # fmt: skip
    scripts = str(Path(C.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": scripts, "PYTHONHASHSEED": "4321"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    here = hashlib.sha256(C.render_container_world(scene, "moving", 15, "present", ALL_FRAMES).tobytes())
    assert out.stdout.strip() == here.hexdigest()


def test_a_bad_grid_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match="radius"):
        C.write_container_scenes(tmp_path / "out", [16, 40], [0], 1, hidden_frames=[4])
    assert not (tmp_path / "out").exists()


def test_cli(tmp_path):
    scripts = str(Path(C.__file__).resolve().parents[2])
    cmd = [sys.executable, "-m", "worldmemory.permanence.containers", "--out", str(tmp_path),
           "--radii", "16", "--distractors", "0", "--seeds", "1", "--hidden-frames", "8"]  # fmt: skip
    subprocess.run(cmd, env={**os.environ, "PYTHONPATH": scripts}, check=True, capture_output=True)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [(e["motion"], e["hidden_frames"]) for e in manifest["scenes"]] == [("moving", 8), ("stationary", 8)]
    assert (tmp_path / "stationary_h08/r16_k0_s0/never_shown.mkv").is_file()


@pytest.mark.parametrize("motion", R.MOTIONS)
@pytest.mark.parametrize("world", ["never_shown", "exit"])
def test_a_revealed_control_shows_the_present_ball_from_the_opening_on(motion, world):
    scene, hidden = R.Scene(16, 2, 0), 8
    control = C.render_container_world(scene, motion, hidden, world, ALL_FRAMES)
    revealed = C.render_container_world(scene, motion, hidden, world, ALL_FRAMES, revealed=True)
    present = C.render_container_world(scene, motion, hidden, "present", ALL_FRAMES)
    opening = 32 + hidden
    assert np.array_equal(control[:opening], revealed[:opening])
    assert np.array_equal(revealed[opening:], present[opening:])
    with pytest.raises(ValueError, match="revealed applies to the controls"):
        C.render_container_world(scene, motion, hidden, "absent", ALL_FRAMES, revealed=True)


@pytest.mark.parametrize("motion", R.MOTIONS)
def test_hidden_zero_is_the_visible_continuation(motion):
    """The box never closes and the absent world's ball vanishes in view at the event."""
    scene = R.Scene(16, 0, 0)
    present = C.render_container_world(scene, motion, 0, "present", ALL_FRAMES)
    absent = C.render_container_world(scene, motion, 0, "absent", ALL_FRAMES)
    assert all(np.array_equal(box_mask(present[f : f + 1])[0], expected_box(f, motion, 16, 0)) for f in ALL_FRAMES)
    assert red_mask(present).any(axis=(1, 2)).all()
    assert red_mask(absent[:32]).any(axis=(1, 2)).all() and not red_mask(absent[32:]).any()
