"""The replay model: another model's video through the external-model contract, as an MP4."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from worldmemory.common.video import read_video, write_video
from worldmemory.external import run_model

TEMPLATE = "python -m worldmemory.external.replay --source {source} --key {case}/{trajectory_name} --request {request}"


def make_request(tmp_path, n_frames):
    request = {"case": "case_0", "trajectory_name": "LRLR", "n_frames": n_frames, "fps": 12.0,
               "video": str(tmp_path / "out" / "video.mp4"), "label": "case_0/LRLR"}
    path = tmp_path / "request.json"
    (tmp_path / "out").mkdir()
    path.write_text(json.dumps(request))
    return {**request, "request": str(path), "source": str(tmp_path / "source")}


def test_a_replayed_video_is_the_source_up_to_yuv_rounding(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # the job's python
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (9, 24, 32, 3), dtype=np.uint8)
    write_video(tmp_path / "source" / "case_0" / "LRLR" / "video.mkv", frames, 12.0)
    request = make_request(tmp_path, 9)
    placeholders = ("source", "case", "trajectory_name", "request")
    video = run_model(TEMPLATE, request, tmp_path / "command.log", placeholders)
    replayed = read_video(video)
    assert replayed.shape == frames.shape and video.suffix == ".mp4"
    assert np.abs(replayed.astype(int) - frames).mean() < 2  # 4:4:4 crf 0: YUV rounding only


def test_a_replay_of_another_length_is_refused(tmp_path):
    write_video(tmp_path / "source" / "case_0" / "LRLR" / "video.mkv", np.zeros((5, 8, 8, 3), np.uint8), 12.0)
    from worldmemory.external.replay import replay

    make_request(tmp_path, 9)
    with pytest.raises(ValueError, match="has 5 frames, the request asks for 9"):
        replay(tmp_path / "source", "case_0/LRLR", tmp_path / "request.json")


def test_replay_names_round_trip():
    from worldmemory.external.replays import replay_name, replay_recipe

    assert replay_name("omniscient") == "omniscient.replay" and replay_recipe("omniscient.replay") == "clean"
    assert replay_name("a.b", "h264") == "a.b.replay-h264" and replay_recipe("a.b.replay-h264") == "h264"


def test_a_degraded_replay_blacks_out_what_the_conditioning_frame_never_showed(tmp_path):
    """WorldMemBench's rule: a pixel whose surface point falls outside frame 0 goes black; the
    conditioning view itself, and a return to it, are replayed as they are."""
    from worldmemory.common.geometry import intrinsics, pose, rot_y
    from worldmemory.external.replay import replay

    W, H = 32, 24
    frames = np.full((3, H, W, 3), 200, np.uint8)
    poses = np.stack([pose(rot_y(np.radians(a)), np.zeros(3)) for a in (0.0, 120.0, 0.0)])
    rollout = tmp_path / "source" / "case_0" / "LRLR"
    write_video(rollout / "video.mkv", frames, 12.0)
    np.savez(rollout / "truth.npz", depth=np.full((3, H, W), 2.0, np.float32), poses=poses, K=intrinsics(W, H, 60.0))
    make_request(tmp_path, 3)
    out = read_video(replay(tmp_path / "source", "case_0/LRLR", tmp_path / "request.json", "black"))
    assert (out[[0, 2]] > 190).all() and (out[1] < 10).all()
    blurred = read_video(replay(tmp_path / "source", "case_0/LRLR", tmp_path / "request.json", "blur-noise"))
    assert 2 < np.abs(blurred.astype(int) - frames).mean() < 12  # the noise, through the MP4
