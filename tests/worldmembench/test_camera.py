import math

import numpy as np
import pytest
from worldmemory.common.geometry import apply_sim3, pose, rot_x, rot_y, rot_z
from worldmemory.worldmembench.metrics.camera import rpe_rot, rpe_trans

STEPS = 30  # frames per trajectory segment


def square_loop(side: float = 2.0) -> np.ndarray:
    """Section 3.3 translation: fixed orientation, Forward-Right-Backward-Left back to the start."""
    directions = [[0, 0, 1], [1, 0, 0], [0, 0, -1], [-1, 0, 0]]  # OpenCV: z forward, x right
    steps = np.repeat(np.array(directions, dtype=float), STEPS, axis=0) * side / STEPS
    centres = np.concatenate([np.zeros((1, 3)), np.cumsum(steps, axis=0)])
    return pose(np.eye(3), centres)


def lr_sweep(amplitude: float) -> np.ndarray:
    """Section 3.3 rotation LR: fixed position, yaw out to ``amplitude`` and back."""
    out, back = np.linspace(0, amplitude, STEPS + 1), np.linspace(amplitude, 0, STEPS + 1)
    yaw = np.concatenate([out, back[1:]])
    return pose(np.stack([rot_y(a) for a in yaw]), np.zeros(3))


def helix() -> np.ndarray:
    """Turning while moving forward, so both Eq. 2 and Eq. 3 are defined."""
    yaw = np.linspace(0, 1.5, 2 * STEPS)
    rotations = np.stack([rot_y(a) @ rot_x(0.2 * a) for a in yaw])
    return pose(rotations, np.stack([np.sin(yaw), 0.1 * yaw, np.cos(yaw)], axis=1))


def test_identical_trajectories_score_zero():
    target = helix()
    assert rpe_trans(target, {"DA3": target, "ViPE": target}) == pytest.approx(0.0, abs=1e-12)
    assert rpe_rot(target, target) == pytest.approx(0.0, abs=1e-12)


def test_global_similarity_is_removed():
    # Built by hand rather than with apply_sim3, so a Sim(3) that moved only the centres fails.
    target = helix()
    R = rot_z(0.8) @ rot_x(-1.3)
    estimate = pose(R @ target[:, :3, :3], 3.0 * target[:, :3, 3] @ R.T + [4.0, -2.0, 7.0])
    assert rpe_trans(target, {"DA3": estimate}) == pytest.approx(0.0, abs=1e-9)
    assert rpe_rot(target, estimate) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("estimated_deg, expected", [(60.0, 1 / 3), (135.0, 1 / 2)])
def test_wrong_rotation_magnitude_gives_known_rpe_rot(estimated_deg, expected):
    # Same axis, so each step disagrees by |dtheta^ - dtheta| = |60 - 90| / STEPS degrees; summed
    # over 2 STEPS steps that is 60 deg against a 180 deg target path: 1/3 (and 90/180 for 135).
    target = lr_sweep(math.radians(90.0))
    wrong = rpe_rot(target, lr_sweep(math.radians(estimated_deg)))
    assert wrong == pytest.approx(expected, abs=1e-12)
    assert wrong > rpe_rot(target, target)


def test_constant_orientation_offset_gives_known_rpe_trans():
    # Centres exactly right but every camera yawed by phi: each camera-frame step is rotated by
    # phi, an error of 2 sin(phi / 2) times its length; on the unit-length path that sums to
    # 2 sin(phi / 2). The Sim(3) fit uses centres only, so it cannot hide the offset.
    target = square_loop()
    phi = math.radians(10.0)
    estimate = target.copy()
    estimate[:, :3, :3] = rot_y(phi)
    assert rpe_trans(target, {"DA3": estimate}) == pytest.approx(2 * math.sin(phi / 2), abs=1e-12)


def test_rpe_trans_grows_with_per_step_translation_error():
    target = square_loop()
    noise = np.random.default_rng(0).normal(size=(len(target) - 1, 3))
    scores = []
    for error in [0.0, 0.01, 0.03, 0.1]:
        estimate = target.copy()
        estimate[1:, :3, 3] += np.cumsum(error * noise, axis=0)
        scores.append(rpe_trans(target, {"DA3": estimate}))
    assert scores[0] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(scores) > 0)


def test_two_estimators_average_their_scores():
    target = square_loop()
    rng = np.random.default_rng(1)
    da3, vipe = target.copy(), apply_sim3(0.5, rot_x(0.3), [1.0, 0.0, 0.0], target)
    da3[1:, :3, 3] += np.cumsum(0.02 * rng.normal(size=(len(target) - 1, 3)), axis=0)
    vipe[1:, :3, 3] += np.cumsum(0.05 * rng.normal(size=(len(target) - 1, 3)), axis=0)
    alone = [rpe_trans(target, {"DA3": da3}), rpe_trans(target, {"ViPE": vipe})]
    assert alone[0] != pytest.approx(alone[1])
    assert rpe_trans(target, {"DA3": da3, "ViPE": vipe}) == pytest.approx(np.mean(alone), abs=1e-12)


def test_pure_rotation_target_has_undefined_rpe_trans():
    target = lr_sweep(math.radians(90.0))
    estimate = target.copy()
    estimate[:, :3, 3] = np.random.default_rng(2).normal(scale=0.01, size=(len(target), 3))
    assert math.isnan(rpe_trans(target, {"DA3": estimate, "ViPE": estimate}))
    assert rpe_rot(target, estimate) == pytest.approx(0.0, abs=1e-12)


def test_translation_only_target_has_undefined_rpe_rot():
    target = square_loop()
    turning = target.copy()
    turning[:, :3, :3] = np.stack([rot_y(a) for a in np.linspace(0, 1, len(target))])
    assert math.isnan(rpe_rot(target, turning))


def test_degenerate_estimates_raise_naming_the_estimator():
    target = square_loop()
    nan_poses = target.copy()
    nan_poses[5, 0, 3] = np.nan
    with pytest.raises(ValueError, match="ViPE.*NaN"):
        rpe_trans(target, {"DA3": target, "ViPE": nan_poses})
    two = pose(np.eye(3), np.repeat([[0.0, 0, 0], [1, 0, 0]], [5, len(target) - 5], axis=0))
    with pytest.raises(ValueError, match="DA3.*distinct"):
        rpe_trans(target, {"DA3": two})
    with pytest.raises(ValueError, match="DA3.*poses"):
        rpe_trans(target, {"DA3": target[:-1]})
    with pytest.raises(ValueError, match="at least one"):
        rpe_trans(target, {})
    with pytest.raises(ValueError, match="NaN"):
        rpe_rot(target, nan_poses)


def test_a_camera_that_never_moves_misses_every_target_step():
    """A still video's poses: the limit of the Sim(3) fit, the whole unit-length target path."""
    target = square_loop()
    still = pose(np.eye(3), np.zeros((len(target), 3)))
    assert rpe_trans(target, {"DA3": still}) == pytest.approx(1.0, abs=1e-12)
    assert rpe_trans(target, {"DA3": still, "ViPE": target}) == pytest.approx(0.5, abs=1e-9)
