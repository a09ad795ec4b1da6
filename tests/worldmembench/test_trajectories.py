"""Known answers for the WorldMemBench camera trajectories (Section 3.3, Figure 3)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from worldmemory.common.geometry import intrinsics
from worldmemory.worldmembench import trajectories as tj

REVISITS = {"translation": 1, "LR": 1, "LRLR": 2, "LRLRLR": 3, "LRUD": 2, "LR-Hold": 1}


def forward(pose):
    return pose[:3, 2]


def yaw_left_deg(pose):
    f = forward(pose)
    return np.degrees(np.arctan2(-f[0], f[2]))


@pytest.fixture(params=tj.TRAJECTORIES)
def traj(request):
    return tj.build(request.param)


def test_names_cover_the_paper_trajectories():
    assert set(tj.TRAJECTORIES) == set(REVISITS)


def test_every_revisit_ends_at_the_start_pose(traj):
    assert np.allclose(traj.poses[0], np.eye(4), atol=1e-9)
    for _, r in traj.revisits():
        assert np.allclose(traj.poses[r.end - 1], np.eye(4), atol=1e-9)
    assert np.allclose(traj.poses[traj.phase_of(traj.n_frames - 1).start:], np.eye(4), atol=1e-9)


def test_phases_tile_in_order(traj):
    k = REVISITS[traj.name]
    names = ["V"] + [f"{p}{i}" for i in range(1, k + 1) for p in "DR"] + ["H"]
    assert [p.name for p in traj.phases] == names
    assert traj.phases[0].start == 0 and traj.phases[-1].end == traj.n_frames
    for a, b in zip(traj.phases, traj.phases[1:]):
        assert a.end == b.start and a.start < a.end
    assert [traj.phase_of(t).name for t in (0, traj.n_frames - 1)] == ["V", "H"]
    with pytest.raises(IndexError):
        traj.phase_of(traj.n_frames)


def test_revisit_count_and_windows(traj):
    pairs = traj.revisits()
    assert len(pairs) == REVISITS[traj.name]
    for k, (d, r) in enumerate(pairs, start=1):
        assert (d.name, r.name) == (f"D{k}", f"R{k}")
        assert d.end == r.start and len(d) == len(r)
    assert traj.return_windows() == [r for _, r in pairs]


def test_rotations_are_proper(traj):
    r = traj.poses[:, :3, :3]
    assert np.allclose(r @ r.transpose(0, 2, 1), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(r), 1.0, atol=1e-12)
    assert np.allclose(traj.poses[:, 3], [0, 0, 0, 1])


def test_default_phase_lengths():
    # 493 frames for two cycles: V 64, H 21, the 408 in between split evenly over 4 moves; every
    # rotation turns at that speed (102-frame moves), so one cycle is 204 frames shorter and three
    # are 204 longer.
    lengths = {n: [len(p) for p in tj.build(n).phases] for n in tj.TRAJECTORIES}
    assert lengths["LR"] == [64, 102, 102, 21]
    assert lengths["LRLRLR"] == [64] + [102] * 6 + [21]
    assert lengths["LRUD"] == [64] + [102] * 4 + [21]
    assert lengths["translation"] == [64, 204, 204, 21]  # two 102-frame sides per phase
    assert lengths["LR-Hold"] == [64, 102, 102, 225]  # LRLR's turn speed, then a long hold
    assert {n: sum(v) for n, v in lengths.items()} == {
        "translation": 493, "LR": 289, "LRLR": 493, "LRLRLR": 697, "LRUD": 493, "LR-Hold": 493}


def test_remainder_goes_to_the_final_hold():
    t = tj.rotation("LRLR", n_frames=100, hold_frames=10, final_hold_frames=5)
    assert [len(p) for p in t.phases] == [10, 21, 21, 21, 21, 6]
    t = tj.rotation("LR", n_frames=100, hold_frames=10, final_hold_frames=5, move_frames=20)
    assert [len(p) for p in t.phases] == [10, 20, 20, 50]


def test_left_yaw_of_90_looks_along_world_minus_x():
    t = tj.rotation("LR", amplitude_deg=90.0)
    d1, r1 = t.revisits()[0]
    turn = t.poses[d1.end - 1]
    assert np.allclose(forward(turn), [-1, 0, 0], atol=1e-12)
    assert np.allclose(turn[:3, 0], [0, 0, 1], atol=1e-12)  # right hand points at the old view
    assert np.allclose(turn[:3, 1], [0, 1, 0], atol=1e-12)  # down stays down


@pytest.mark.parametrize("amplitude", [30.0, 45.0, 90.0, 120.0])
def test_turn_point_and_max_yaw_equal_the_amplitude(amplitude):
    for pattern in ("LR", "LRLR", "LRLRLR", "LR-Hold"):
        t = tj.rotation(pattern, amplitude_deg=amplitude)
        a = np.radians(amplitude)
        for d, _ in t.revisits():
            assert np.allclose(forward(t.poses[d.end - 1]), [-np.sin(a), 0, np.cos(a)], atol=1e-12)
        yaws = np.array([yaw_left_deg(p) for p in t.poses])
        assert yaws.max() == pytest.approx(amplitude, abs=1e-9)
        assert yaws.min() == pytest.approx(0.0, abs=1e-9)
        assert np.allclose(t.poses[:, :3, 3], 0)  # rotation keeps the position fixed


def test_lrud_second_revisit_pitches_up():
    t = tj.rotation("LRUD", amplitude_deg=90.0, pitch_amplitude_deg=40.0)
    (d1, _), (d2, r2) = t.revisits()
    assert np.allclose(forward(t.poses[d1.end - 1]), [-1, 0, 0], atol=1e-12)
    f = forward(t.poses[d2.end - 1])
    a = np.radians(40.0)
    assert f[1] < 0
    assert np.allclose(f, [0, -np.sin(a), np.cos(a)], atol=1e-12)
    # no yaw during the pitch cycle: forward stays in the y-z plane
    assert np.allclose(t.poses[d2.start:r2.end, 0, 2], 0, atol=1e-12)
    assert set(t.captions[d2.start:d2.end]) == {"Up"}
    assert set(t.captions[r2.start:r2.end]) == {"Down"}


def test_lrud_pitch_amplitude_defaults_to_the_yaw_amplitude():
    t = tj.rotation("LRUD", amplitude_deg=60.0)
    d2 = t.revisits()[1][0]
    assert forward(t.poses[d2.end - 1])[1] == pytest.approx(-np.sin(np.radians(60.0)))


def test_motion_is_eased_to_rest_at_turn_and_return():
    t = tj.rotation("LR", amplitude_deg=90.0)
    d1, r1 = t.revisits()[0]
    yaws = np.array([yaw_left_deg(p) for p in t.poses])
    steps = np.diff(yaws[d1.start - 1:r1.end])
    n = len(d1)
    assert np.all(steps[:n] > 0) and np.all(steps[n:] < 0)  # monotone out, monotone back
    peak = np.abs(steps).max()
    # half-cosine ease: the peak step is pi/2 times the mean step; steps at the ends are tiny
    assert peak == pytest.approx(np.pi / 2 * 90.0 / n, rel=1e-3)
    for i in (0, n - 1, n, 2 * n - 1):
        assert abs(steps[i]) < 0.01 * peak


def test_translation_square_loop_with_fixed_orientation():
    side = 2.0
    t = tj.translation(side=side)
    assert np.allclose(t.poses[:, :3, :3], np.eye(3), atol=0)
    d1, r1 = t.revisits()[0]
    m = len(d1) // 2
    corner_frames = [d1.start + m - 1, d1.end - 1, r1.start + m - 1, r1.end - 1]
    corners = [[0, 0, side], [side, 0, side], [side, 0, 0], [0, 0, 0]]
    assert np.allclose(t.poses[corner_frames, :3, 3], corners, atol=1e-12)
    assert np.allclose(t.poses[-1, :3, 3], 0)
    assert np.allclose(t.poses[:, 1, 3], 0)  # stays at camera height
    pos = t.poses[:, :3, 3]
    assert pos.min() == pytest.approx(0) and pos.max() == pytest.approx(side)
    assert t.captions[d1.start:r1.end] == (
        ["Forward"] * m + ["Right"] * m + ["Backward"] * m + ["Left"] * m)


def test_default_translation_path_has_unit_length():
    pos = tj.translation().poses[:, :3, 3]
    assert np.linalg.norm(np.diff(pos, axis=0), axis=1).sum() == pytest.approx(1.0)


def test_lr_captions():
    t = tj.rotation("LR")
    v, d1, r1, h = t.phases
    assert set(t.captions[v.start:v.end]) == {"Hold"}
    assert set(t.captions[h.start:h.end]) == {"Hold"}
    assert t.captions[d1.start:d1.start + len(d1) // 2] == ["Left"] * (len(d1) // 2)
    assert set(t.captions[d1.start:d1.end]) == {"Left"}
    assert set(t.captions[r1.start:r1.end]) == {"Right"}


def test_caption_counts_match_phases(traj):
    assert len(traj.captions) == traj.n_frames
    assert set(traj.captions) <= set(tj.CAPTIONS)
    moving = [c != "Hold" for c in traj.captions]
    for phase in traj.phases:
        static = phase.name in ("V", "H")
        assert sum(moving[phase.start:phase.end]) == (0 if static else len(phase))


def test_captions_agree_with_the_poses(traj):
    # a frame captioned Hold has the previous frame's pose; any other caption moves the camera
    for t in range(1, traj.n_frames):
        moved = not np.allclose(traj.poses[t], traj.poses[t - 1], atol=1e-12)
        assert moved == (traj.captions[t] != "Hold"), t


def test_to_json_round_trips(traj):
    d = traj.to_json()
    assert json.loads(json.dumps(d)) == d
    assert d["n_frames"] == traj.n_frames == len(d["poses"]) == len(d["captions"])
    assert np.array(d["poses"]).shape == (traj.n_frames, 4, 4)
    assert np.allclose(d["poses"], traj.poses, atol=1e-9)
    assert d["fps"] == 16.0 and np.allclose(d["intrinsics"], traj.intrinsics)
    assert [p["name"] for p in d["phases"]] == [p.name for p in traj.phases]
    assert d["phases"][-1]["end"] == traj.n_frames


def test_intrinsics():
    k = intrinsics(832, 480, 90.0)
    assert np.allclose(k, [[416, 0, 416], [0, 416, 240], [0, 0, 1]])
    k = intrinsics(640, 480, 60.0)
    assert k[0, 0] == pytest.approx(320 / np.tan(np.radians(30)))
    assert np.allclose(tj.build("LR", width=640, height=480, fov_deg=60.0).intrinsics, k)


def test_build_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown trajectory 'UDLR'.*translation, LR, LRLR"):
        tj.build("UDLR")
    with pytest.raises(ValueError, match="valid: LR, LRLR, LRLRLR, LRUD, LR-Hold"):
        tj.rotation("translation")


def test_build_passes_parameters():
    t = tj.build("LRLR", n_frames=200, amplitude_deg=45.0, fps=24)
    assert t.n_frames == 200 and t.fps == 24.0
    assert max(yaw_left_deg(p) for p in t.poses) == pytest.approx(45.0)


@pytest.mark.parametrize("name", tj.TRAJECTORIES)
@pytest.mark.parametrize("params, case_params", [
    ({}, None),
    ({"n_frames": 241}, None),
    ({"n_frames": 241}, {"LRLR": {"n_frames": 321}, "LRLRLR": {"n_frames": 401}, "translation": {"n_frames": 201}}),
    ({"n_frames": 241, "LRLR": {"n_frames": 281}}, {"LRLR": {"n_frames": 321}}),
])
def test_frame_count_is_the_length_build_gives(name, params, case_params):
    """The planner's frames (./run.sh plan) without building: the study's, the case's, its own block's."""
    assert tj.frame_count(name, params, case_params) == tj.build(name, case_params, **params).n_frames


@pytest.mark.parametrize("kwargs", [
    dict(n_frames=90),  # 90 - 64 - 21 = 5 frames for 6 moves
    dict(n_frames=100, hold_frames=10, final_hold_frames=5, move_frames=20),  # 10+120+5 > 100
    dict(n_frames=100, hold_frames=0),
    dict(n_frames=100, final_hold_frames=0),
])
def test_too_few_frames_raise(kwargs):
    with pytest.raises(ValueError):
        tj.rotation("LRLRLR", **kwargs)


def test_smallest_valid_budget():
    t = tj.rotation("LRLRLR", n_frames=64 + 6 * 2 + 21)
    assert [len(p) for p in t.phases] == [64] + [2] * 6 + [21]
    assert np.allclose(t.poses[t.phases[-2].end - 1], np.eye(4), atol=1e-9)
    with pytest.raises(ValueError, match="too small"):
        tj.rotation("LRLRLR", n_frames=64 + 6 * 2 + 20)
    with pytest.raises(ValueError):
        tj.translation(n_frames=64 + 4 * 2 + 20)


@pytest.mark.parametrize("kwargs", [dict(amplitude_deg=0.0), dict(amplitude_deg=200.0),
                                    dict(pitch_amplitude_deg=120.0), dict(amplitude_deg=120.0)])
def test_bad_amplitudes_raise(kwargs):
    with pytest.raises(ValueError):
        tj.rotation("LRUD", **kwargs)


def test_pitch_limit_applies_only_to_pitching_patterns():
    assert tj.rotation("LRLR", amplitude_deg=120.0).n_frames == 493


def test_trajectory_validates_its_phases():
    t = tj.build("LR")
    broken = [tj.Phase("V", 0, 10), tj.Phase("D1", 11, 20)] + t.phases[2:]
    with pytest.raises(ValueError, match="tile"):
        tj.Trajectory("LR", t.poses, t.intrinsics, broken, t.captions)
    with pytest.raises(ValueError, match="caption"):
        tj.Trajectory("LR", t.poses, t.intrinsics, t.phases, t.captions[:-1])


def angular_speeds(t):
    """Degrees per frame between consecutive orientations, over the moves."""
    R = t.poses[:, :3, :3]
    steps = np.einsum("tji,tjk->tik", R[:-1], R[1:])
    return np.degrees(np.arccos(np.clip((np.trace(steps, axis1=1, axis2=2) - 1) / 2, -1, 1)))


def test_more_cycles_add_frames_at_the_same_speed():
    """Appendix C: LRLRLR is longer than LRLR (551 against 493), not faster."""
    params = {"n_frames": 241, "hold_frames": 32, "final_hold_frames": 9}
    two, three, one = (tj.build(name, **params) for name in ("LRLR", "LRLRLR", "LR"))
    move = len(two.phases[1])
    assert two.n_frames == 241 and move == 50
    assert three.n_frames == 241 + 2 * move and one.n_frames == 241 - 2 * move
    assert {len(p) for p in three.phases[1:-1]} == {len(p) for p in one.phases[1:-1]} == {move}
    assert angular_speeds(three).max() == pytest.approx(angular_speeds(two).max())
    hold = tj.build("LR-Hold", **params)
    assert hold.n_frames == 241 and len(hold.phases[1]) == move


def test_a_trajectory_block_sets_its_own_length():
    """YUME's 493 / 551 frames (Appendix C) through trajectory_params per trajectory name."""
    params = {"n_frames": 493, "LRLRLR": {"n_frames": 551}, "translation": {"side": 0.5}}
    assert tj.build("LRLR", **params).n_frames == 493
    three = tj.build("LRLRLR", **params)
    assert three.n_frames == 551 and len(three.phases[1]) == (551 - 64 - 21) // 6
    far = tj.build("translation", **params).poses[:, :3, 3]
    assert np.abs(far).max() == pytest.approx(0.5)


def test_paper_config_builds_the_documented_lengths():
    """config/paper.yaml builds the lengths docs/running.md states: the papers' 493 frames and
    YUME's 551 for LRLRLR (Appendix C), not LRLR's speed's 697."""
    repo = Path(__file__).resolve().parents[2]
    params = yaml.safe_load((repo / "config" / "paper.yaml").read_text())["worldmembench"]["trajectory_params"]
    doc = (repo / "docs" / "running.md").read_text()
    two, three = map(int, re.search(r"at the papers' (\d+) frames\s+\((\d+) for LRLRLR", doc).groups())
    assert (two, three) == (493, 551)
    assert {n: tj.build(n, **params).n_frames for n in ("LRLR", "LRUD", "translation", "LRLRLR")} == {
        "LRLR": two, "LRUD": two, "translation": two, "LRLRLR": three}


def test_case_parameters_sit_between_the_shared_and_the_trajectory_block():
    case = {"translation": {"side": 1.2}}
    assert tj.resolve("translation", {"side": 0.4}, case)["side"] == 1.2
    assert tj.resolve("translation", {"translation": {"side": 0.7}}, case)["side"] == 0.7
    assert tj.resolve("LRLR", {"side": 0.4}, case) == {"side": 0.4}


def test_merged_model_parameters_keep_the_study_block_where_the_model_is_silent():
    study = {"n_frames": 241, "LRLRLR": {"n_frames": 341, "hold_frames": 16}}
    model = {"n_frames": 493, "LRLRLR": {"n_frames": 551}}
    assert tj.merge_params(study, model) == {"n_frames": 493, "LRLRLR": {"n_frames": 551, "hold_frames": 16}}
    assert tj.merge_params(study, {}) == study
