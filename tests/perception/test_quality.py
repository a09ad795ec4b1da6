"""The weight-free imaging quality backends (perception.quality) and their calibration: Rec. 601
grey for BRISQUE, metric Q's known answers, and the clean > blur > blur + noise order on renders of
the embedded default."""

from __future__ import annotations

import json

import numpy as np
import pytest
from worldmemory.common.video import write_mp4
from worldmemory.perception import quality_calibration as qc
from worldmemory.perception.quality import BrisqueQuality, ContentQ, grey
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import load_case, write_embedded_cases
from worldmemory.worldmembench.reference_models import run_reference

W, H = 128, 96
cv2 = pytest.importorskip("cv2")


def test_grey_is_rec601():
    """Pure red, green and blue give the Rec. 601 weights (Rec. 709 would give 0.2126, ...)."""
    primaries = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]]], dtype=np.uint8)
    np.testing.assert_allclose(grey(primaries), [[0.299, 0.587, 0.114]])


def test_brisque_scores_the_rec601_grey():
    """A frame whose red and green channels hold different textures scores as the package scores
    its Rec. 601 grey; the package's own Rec. 709 conversion of it scores 3.4 higher."""
    rng = np.random.default_rng(4)

    def texture(sigma):
        field = cv2.GaussianBlur(rng.normal(0, 1, (H, W)), (0, 0), sigma)
        return field / field.std()

    frame = np.stack([128 + 60 * texture(1.0), 128 + 40 * texture(4.0), np.full((H, W), 128.0)], axis=-1)
    frame = np.clip(frame, 0, 255).astype(np.uint8)
    quality = BrisqueQuality()
    g = frame.astype(np.float64) @ [0.299, 0.587, 0.114] / 255
    expected = quality._model.score(np.stack([g, g, g], axis=-1))
    assert quality.score(frame[None])[0] == pytest.approx(expected, abs=1e-9)
    assert abs(quality._model.score(frame) - expected) > 1.0


def test_q_threshold_is_the_papers():
    """tau for 8 x 8 patches at delta 0.001: sqrt((1 - d) / (1 + d)), d = 0.001^(1/63)."""
    assert ContentQ.threshold() == pytest.approx(0.2340, abs=1e-4)


@pytest.mark.parametrize("axis", [0, 1])
def test_q_of_one_step_edge_is_the_top_of_the_scale(axis):
    """One 8 x 8 patch, half black, half white: central differences of 0.5 in two rows (or
    columns) of 8, s1 = 2, R = 1, Q = 2, normalised 1."""
    patch = np.zeros((8, 8, 3), dtype=np.uint8)
    patch[:, 4:] = 255
    patch = np.ascontiguousarray(np.rot90(patch) if axis else patch)
    assert ContentQ().score(patch[None])[0] == pytest.approx(2.0)
    assert ContentQ.normalise(2.0) == 1.0


def test_q_of_a_flat_or_black_frame_is_zero():
    frames = np.stack([np.zeros((H, W, 3), np.uint8), np.full((H, W, 3), 128, np.uint8)])
    np.testing.assert_array_equal(ContentQ().score(frames), [0.0, 0.0])


def test_q_falls_with_contrast_and_blur_and_noise():
    """Half the contrast halves Q (it is linear in the gradients); blur and noise lower it."""
    rng = np.random.default_rng(1)
    frame = np.repeat(np.repeat(rng.integers(0, 2, (H // 8, W // 8), dtype=np.uint8) * 200, 8, 0), 8, 1)
    frame = np.stack([frame] * 3, axis=-1)
    q = ContentQ()
    clean, half = q.score(np.stack([frame, frame // 2]))
    assert half == pytest.approx(clean / 2, rel=0.02)
    versions = qc.degraded(frame[None], seed=0)
    assert clean > q.score(versions["blur"])[0] > q.score(versions["blur_noise"])[0]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Frames of the omniscient model on the four families' embedded default cases."""
    out = tmp_path_factory.mktemp("cases")
    names = {"human": ["LRLR"], "object": ["LRLR"], "environment": ["LRLR"], "dynamic": ["LR-Hold"]}
    write_embedded_cases(out, 1, W, H, names, {"n_frames": 65, "hold_frames": 16, "final_hold_frames": 1})
    videos = {}
    for family, (name,) in names.items():
        case = load_case(out / f"{family}_000")
        trajectory = tj.build(name, width=W, height=H, n_frames=65, hold_frames=16, final_hold_frames=1)
        videos[family] = run_reference("omniscient", {}, case, trajectory, W, H)[0][::16]
    return videos


@pytest.mark.parametrize("family", ["human", "object", "environment", "dynamic"])
def test_q_orders_renders_clean_blur_blur_noise(rendered, family):
    row = qc.calibrate_frames(rendered[family], ContentQ())
    assert row["ordered"], row


class NoiseLover:
    """A broken measure: the frame's high-frequency energy, which noise raises."""

    name = "noise-lover"

    def score(self, frames):
        return np.array([np.abs(np.diff(grey(f), axis=1)).mean() for f in frames])

    @classmethod
    def normalise(cls, raw):
        return raw


def test_a_measure_that_rewards_noise_fails_the_calibration(rendered):
    row = qc.calibrate_frames(rendered["object"], NoiseLover())
    assert row["blur_noise"] > row["blur"] and not row["ordered"]


def test_calibration_reads_reference_manifests_only(tmp_path, rendered):
    """Two manifests, a reference and a replay: the table has the reference's video only, its
    frames every step-th (the first included)."""
    for kind in ("reference", "replay"):
        (tmp_path / kind / "case").mkdir(parents=True)
        write_mp4(tmp_path / kind / "case" / "video.mp4", rendered["object"], 8.0)
        (tmp_path / kind / "manifest.json").write_text(json.dumps(
            {"kind": kind, "rollouts": [{"video": "case/video.mp4"}]}))
    out = tmp_path / "calibration.csv"
    qc.main(["--manifests", str(tmp_path / "reference" / "manifest.json"), str(tmp_path / "replay" / "manifest.json"),
             "--backend", "metric-q", "--step", "2", "--out", str(out)])
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(qc.COLUMNS)
    assert len(lines) == 2 and lines[1].startswith(str(tmp_path / "reference" / "case" / "video.mp4") + ",3,")
    assert lines[1].endswith(",True")
