"""The IntPhys-format fixture (permanence.intphys_fixture) and its consistent-world oracle.

Known answers: the layout the evaluator reads, the impossible change out of sight (the worlds'
frames differ exactly where the ball is visible), the ball's constant speed on both sides of the
occluder, and, end to end through the evaluator with a tiny V-JEPA 2 encoder, 100% under every
rule for the oracle that predicts the physically consistent world.
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model
from worldmemory.permanence import intphys
from worldmemory.permanence import intphys_fixture as fx
from worldmemory.permanence import intphys_oracle as oracle_of
from worldmemory.permanence import intphys_scoring as scoring
from worldmemory.permanence.intphys_scoring import PAPER_TEXT, REFERENCE

TINY = dict(crop_size=64, patch_size=16, frames_per_clip=32, tubelet_size=2, hidden_size=48,
            num_attention_heads=4, num_hidden_layers=2, pred_hidden_size=32,
            pred_num_attention_heads=4, pred_num_hidden_layers=1, num_pooler_layers=1)
N_SCENES = 4


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("fixture")
    fx.write_fixture(root, N_SCENES, size=64)
    return root


@pytest.fixture(scope="module")
def inner():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny calls: threads only wait for each other on a busy machine
    yield VJEPA2Backend(build_model(TINY, seed=1))
    torch.set_num_threads(before)


def world_of(video_dir) -> str:
    return json.loads((video_dir / "status.json").read_text())["fixture"]["world"]


def test_the_evaluator_reads_two_possible_and_two_impossible_videos_per_scene(dataset):
    videos = intphys.read_dataset(dataset)
    assert len(videos) == 4 * N_SCENES
    assert {(v.block, v.scene) for v in videos} == {("O1", f"{i:02d}") for i in range(1, N_SCENES + 1)}
    for v in videos:
        assert v.is_possible == (world_of(v.path) in ("present", "absent"))
    orders = {tuple(world_of(v.path) for v in videos if v.scene == s) for s in ("01", "02", "03", "04")}
    assert len(orders) > 1  # the video numbers do not give the label away
    frames = intphys.read_frames(videos[0].path, 64)
    assert frames.shape == (fx.N_FRAMES, 64, 64, 3) and frames.dtype == np.uint8


def test_the_fixture_is_the_same_in_every_run(dataset, tmp_path):
    fx.main(["--out", str(tmp_path), "--scenes", "1", "--size", "64"])
    for name in ("status.json", "scene/scene_001.png", "scene/scene_020.png"):
        for video in ("1", "4"):
            assert (tmp_path / "O1/01" / video / name).read_bytes() == (dataset / "O1/01" / video / name).read_bytes()


def frames_differ(a: np.ndarray, b: np.ndarray) -> list[int]:
    return [f for f in range(len(a)) if (a[f] != b[f]).any()]


def test_the_impossible_change_happens_behind_the_occluder():
    """Frames 13-17 hide the ball wholly (x in [112, 144] behind columns 96-160): the impossible
    videos equal the possible one with the same start up to the emergence at frame 18, and the ball
    is visible in every other frame (partly at 10-12 and 18-21)."""
    scene = fx.fixture_scene(0)
    worlds = {w: fx.render_video(scene, w) for w in fx.WORLDS}
    visible = [*range(13), *range(18, fx.N_FRAMES)]
    assert frames_differ(worlds["present"], worlds["absent"]) == visible
    assert frames_differ(worlds["present"], worlds["vanish"]) == list(range(18, fx.N_FRAMES))
    assert frames_differ(worlds["absent"], worlds["appear"]) == list(range(18, fx.N_FRAMES))
    assert frames_differ(worlds["vanish"], worlds["absent"]) == list(range(13))


def ball_centre(frame: np.ndarray) -> float:
    """Column centroid of the red pixels (the ball's two checker reds; nothing else is red)."""
    red = frame[..., 0].astype(int) - frame[..., 1:].max(axis=-1) > 50
    return float(np.nonzero(red)[1].mean())


def test_the_ball_comes_out_on_the_other_side_at_the_same_speed():
    """One straight path at 8 px per frame from x = 8: the ball leaves the occluder where and when
    its entry speed takes it."""
    frames = fx.render_video(fx.fixture_scene(1), "present")
    span = [*range(2, 9), *range(22, 29)]  # the whole disk in view, left and right of the occluder
    np.testing.assert_allclose([ball_centre(frames[f]) for f in span], 8.0 + 8.0 * np.array(span), atol=1e-9)


def test_consistent_video_is_the_possible_world_with_the_same_start(dataset):
    for scene_dir in sorted((dataset / "O1").iterdir()):
        for video in sorted(scene_dir.iterdir()):
            expected = {"present": "present", "vanish": "present", "absent": "absent", "appear": "absent"}
            assert world_of(oracle_of.consistent_video(video)) == expected[world_of(video)]
            assert oracle_of.consistent_video(video).parent == scene_dir


@pytest.mark.parametrize("protocol", [PAPER_TEXT, REFERENCE], ids=lambda p: p.name)
def test_the_consistent_world_oracle_scores_100_percent_under_every_rule(dataset, inner, protocol):
    """Zero surprise on the possible videos (its prediction is their own encoding), positive on the
    impossible ones from the emergence on, so every pair is correct under all three rules of both
    protocols; the reference pairs each impossible video with the possible one that starts as it does."""
    parts, videos = [], intphys.read_dataset(dataset)
    for scene in sorted({v.scene for v in videos}):
        members = [v for v in videos if v.scene == scene]
        matches = scoring.opening_matches([intphys.read_frames(v.path, 64) for v in members])
        by_match = {m: {oracle_of.consistent_video(v.path) for v, n in zip(members, matches) if n == m} for m in (1, 2)}
        assert all(len(worlds) == 1 for worlds in by_match.values())  # present with vanish, absent with appear
        for v, match in zip(members, matches):
            oracle = oracle_of.consistent_oracle(inner, v.path)
            windows = intphys.score_video(oracle, oracle.observed, (2, 10), protocol)
            parts.append(windows.assign(block=v.block, scene=v.scene, video=v.video, is_possible=v.is_possible,
                                        match=match))
    videos = scoring.video_surprises(pd.concat(parts, ignore_index=True))
    assert videos.loc[videos["is_possible"], "surprise"].max() < 1e-6
    assert videos.loc[~videos["is_possible"], "surprise"].min() > 1e-3
    assert scoring.context_accuracies(videos, protocol) == {"2": 100.0, "10": 100.0, "min": 100.0}
    assert scoring.rule_table(videos, "oracle", protocol, resamples=100)["accuracy"].tolist() == [100.0] * 3


def test_the_oracle_refuses_a_window_of_another_video(dataset, inner):
    videos = intphys.read_dataset(dataset)
    oracle = oracle_of.consistent_oracle(inner, videos[0].path)
    other = inner.preprocess(intphys.read_frames(videos[4].path, inner.crop_size)[None])  # scene 02
    with pytest.raises(ValueError, match="not part of the observed clip"):
        oracle.consistent_window(other[0, :16])
    torch.testing.assert_close(oracle.consistent_window(oracle.observed[0, 4:20]), oracle.consistent[0, 4:20])
