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
