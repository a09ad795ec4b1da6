import numpy as np
import pytest
from worldmemory.common.geometry import (
    apply_sim3,
    invert,
    path_length,
    pose,
    relative_motions,
    rot_x,
    rot_y,
    rot_z,
    rotation_angle,
    umeyama,
)


def test_rotation_angle_of_known_rotation():
    assert rotation_angle(rot_z(0.3)) == pytest.approx(0.3, abs=1e-12)
    assert rotation_angle(rot_x(-0.3)) == pytest.approx(0.3, abs=1e-12)
    assert isinstance(rotation_angle(np.eye(3)), float)


def test_rotation_angle_batched_keeps_batch_shape():
    R = np.stack([rot_x(0.1), rot_y(1.0), rot_z(2.5), rot_y(0.7) @ rot_x(0.7)]).reshape(2, 2, 3, 3)
    expected = [[0.1, 1.0], [2.5, rotation_angle(rot_y(0.7) @ rot_x(0.7))]]
    np.testing.assert_allclose(rotation_angle(R), expected, atol=1e-12)


def test_rotation_angle_stable_near_zero_and_pi():
    # arccos((trace - 1) / 2) returns 0 for the first and exactly pi for the second.
    assert rotation_angle(rot_x(1e-9)) == pytest.approx(1e-9, rel=1e-6)
    assert rotation_angle(rot_y(np.pi - 1e-9)) == pytest.approx(np.pi - 1e-9, abs=1e-13)
    assert rotation_angle(rot_z(np.pi)) == pytest.approx(np.pi, abs=1e-15)
    # Slightly non-orthonormal input (trace > 3) must not give NaN.
    assert rotation_angle(np.eye(3) * (1 + 1e-12)) == 0.0


def test_umeyama_recovers_known_similarity_exactly():
    src = np.random.default_rng(0).normal(size=(20, 3))
    s, R, t = 2.5, rot_z(0.4) @ rot_x(-1.1), np.array([1.0, -2.0, 3.0])
    s_hat, R_hat, t_hat = umeyama(src, s * src @ R.T + t)
    assert s_hat == pytest.approx(s, abs=1e-9)
    np.testing.assert_allclose(R_hat, R, atol=1e-9)
    np.testing.assert_allclose(t_hat, t, atol=1e-9)
    s_rigid, R_rigid, t_rigid = umeyama(src, src @ R.T + t, with_scale=False)
    assert s_rigid == 1.0
    np.testing.assert_allclose(R_rigid, R, atol=1e-9)
    np.testing.assert_allclose(t_rigid, t, atol=1e-9)


def test_umeyama_returns_a_rotation_for_a_mirrored_point_set():
    # Points +-3 e1, +-2 e2, +-e3 have covariance diag(9, 4, 1) / 3. Mirroring x gives the
    # cross-covariance diag(-9, 4, 1) / 3; the best proper rotation flips the weakest axis too,
    # R = diag(-1, 1, -1), with scale (9 + 4 - 1) / (9 + 4 + 1) = 6/7 (Umeyama 1991).
    src = np.concatenate([np.diag([3.0, 2.0, 1.0]), -np.diag([3.0, 2.0, 1.0])])
    s, R, t = umeyama(src, src * [-1.0, 1.0, 1.0])
    np.testing.assert_allclose(R, np.diag([-1.0, 1.0, -1.0]), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
    assert s == pytest.approx(6 / 7, abs=1e-12)
    np.testing.assert_allclose(t, 0.0, atol=1e-12)


def test_umeyama_fits_image_plane_points_and_keeps_a_mirror_a_rotation():
    src = np.random.default_rng(1).normal(size=(5, 2))
    a = 0.3
    R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    s, R_hat, t = umeyama(src, 1.7 * src @ R.T + [4.0, -2.0])
    assert s == pytest.approx(1.7, abs=1e-9)
    np.testing.assert_allclose(R_hat, R, atol=1e-9)
    np.testing.assert_allclose(t, [4.0, -2.0], atol=1e-9)
    # A mirrored 2D set: x +-3, y +-1 with x negated; the best rotation flips y as well (a half
    # turn), scale (9 - 1) / (9 + 1).
    pts = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    s, R_hat, _ = umeyama(pts, pts * [-1.0, 1.0])
    np.testing.assert_allclose(R_hat, -np.eye(2), atol=1e-12)
    assert s == pytest.approx(0.8, abs=1e-12)


def test_umeyama_rejects_coincident_source_points():
    with pytest.raises(ValueError, match="coincide"):
        umeyama(np.ones((5, 3)), np.random.default_rng(0).normal(size=(5, 3)))


def test_invert_undoes_pose_single_and_batched():
    T = pose(rot_y(0.7) @ rot_x(0.2), [1.0, 2.0, -3.0])
    np.testing.assert_allclose(invert(T) @ T, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(T @ invert(T), np.eye(4), atol=1e-12)
    batch = pose(np.stack([rot_z(0.1), rot_x(2.0)]), np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]))
    np.testing.assert_allclose(invert(batch) @ batch, [np.eye(4)] * 2, atol=1e-12)


def test_relative_motions_of_constant_velocity_path_are_equal():
    step = pose(rot_y(0.1) @ rot_x(0.05), [0.2, 0.0, 1.0])
    poses = [pose(rot_z(0.3), [5.0, -1.0, 2.0])]
    for _ in range(9):
        poses.append(poses[-1] @ step)
    motions = relative_motions(np.stack(poses))
    assert motions.shape == (9, 4, 4)
    np.testing.assert_allclose(motions, np.broadcast_to(step, (9, 4, 4)), atol=1e-12)


def test_apply_sim3_moves_centres_and_orientations():
    poses = pose(np.stack([rot_x(0.3), rot_y(-0.4)]), np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]]))
    s, R, t = 3.0, rot_z(0.5), np.array([0.0, 1.0, -1.0])
    moved = apply_sim3(s, R, t, poses)
    np.testing.assert_allclose(moved[:, :3, 3], s * poses[:, :3, 3] @ R.T + t, atol=1e-12)
    np.testing.assert_allclose(moved[:, :3, :3], R @ poses[:, :3, :3], atol=1e-12)
    np.testing.assert_allclose(moved[:, 3], [[0, 0, 0, 1]] * 2)


def test_path_length_of_unit_square_loop_is_four():
    square = np.array([[0, 0, 0], [0, 0, 1], [1, 0, 1], [1, 0, 0], [0, 0, 0]], dtype=float)
    assert path_length(square) == pytest.approx(4.0)
