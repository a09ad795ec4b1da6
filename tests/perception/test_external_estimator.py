"""Estimators run as external commands (perception/external_estimator.py): real commands through
bash, reading the files the contract promises and writing the ones it asks for."""

import json
import shlex
import sys

import numpy as np
import pytest
from worldmemory.common.geometry import pose, rot_y
from worldmemory.perception import registry
from worldmemory.perception.external_estimator import ExternalCommandCamera, ExternalCommandDepth

# A stand-in for DA3 / ViPE: it decodes the video it is given, records what it saw, and writes the
# poses (or depth) stored in ANSWER, which the test prepared.
STAND_IN = """
import json, sys
import numpy as np
from decord import VideoReader
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
frames = VideoReader(args["--video"]).get_batch(list(range(3))).asnumpy()
seen = {"frames": frames.tolist()}
if "--intrinsics" in args:
    seen["intrinsics"] = json.load(open(args["--intrinsics"]))
json.dump(seen, open(args["--seen"], "w"))
np.savez(args["--out"], **dict(np.load(args["--answer"])))
"""


def frames(n=3, h=24, w=32):
    return np.random.default_rng(0).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def stand_in(tmp_path, **answer) -> str:
    """A command template running STAND_IN, which will write ``answer``."""
    (tmp_path / "stand_in.py").write_text(STAND_IN)
    np.savez(tmp_path / "answer.npz", **answer)
    fixed = shlex.join([sys.executable, str(tmp_path / "stand_in.py"), "--answer", str(tmp_path / "answer.npz"),
                        "--seen", str(tmp_path / "seen.json")])
    return fixed + " --video {video} --out {out}"


def test_poses_come_back_with_frame_zero_the_identity_from_the_frames_and_intrinsics_given(tmp_path):
    # a path in some other gauge: the estimator's world is turned and shifted against frame 0
    gauge = pose(rot_y(0.7), [1.0, -2.0, 0.5])
    truth = np.stack([pose(rot_y(np.radians(10 * t)), [0.1 * t, 0, 0]) for t in range(3)])
    command = stand_in(tmp_path, poses=gauge @ truth) + " --intrinsics {intrinsics}"
    K = np.array([[30.0, 0, 16], [0, 30.0, 12], [0, 0, 1]])
    video = frames()
    estimated = registry.create("camera", "external-command", command=command).estimate(video, K)
    np.testing.assert_allclose(estimated, truth, atol=1e-12)
    seen = json.loads((tmp_path / "seen.json").read_text())
    np.testing.assert_array_equal(seen["frames"], video)  # lossless
    assert seen["intrinsics"] == {"K": K.tolist(), "width": 32, "height": 24, "n_frames": 3}


def test_depth_is_read_at_the_videos_size(tmp_path):
    depth = np.random.default_rng(1).uniform(1, 5, (3, 24, 32))
    estimator = ExternalCommandDepth(stand_in(tmp_path, depth=depth))
    np.testing.assert_allclose(estimator.estimate(frames()), depth, rtol=1e-6)
    assert estimator.metric and estimator.name == "external-command"


def test_a_command_that_fails_or_writes_the_wrong_thing_is_named(tmp_path):
    with pytest.raises(RuntimeError, match=r"(?s)external camera estimator on video 1 of this job: .* exited with "
                                           r"status 3.*\nno weights here"):
        ExternalCommandCamera("echo no weights here; exit 3; true {out}").estimate(frames(), np.eye(3))
    with pytest.raises(RuntimeError, match="exited 0 but wrote no out at"):
        ExternalCommandCamera("true {out}").estimate(frames(), np.eye(3))
    short = ExternalCommandCamera(stand_in(tmp_path, poses=np.tile(np.eye(4), (2, 1, 1))))
    with pytest.raises(ValueError, match=r"must write 'poses' of shape \(3, 4, 4\).*'poses': \(2, 4, 4\)"):
        short.estimate(frames(), np.eye(3))
    with pytest.raises(ValueError, match=r"unknown placeholders \['intrinsics'\]"):  # depth has none
        ExternalCommandDepth("da3 --video {video} --K {intrinsics} --out {out}")
    with pytest.raises(ValueError, match=r"must pass \{out\} \(the output path\)"):
        ExternalCommandDepth("da3 --video {video}")
