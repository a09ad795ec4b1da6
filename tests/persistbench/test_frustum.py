import numpy as np
import pytest
from worldmemory.common.equirect import lonlat_to_direction, project, view_rotation
from worldmemory.common.geometry import intrinsics
from worldmemory.persistbench.frustum import angular_box_in_view, frustum_signed_distance


def test_frustum_signed_distance_known_values():
    fov, w, h = 90.0, 96, 96
    target = lonlat_to_direction(0.0, 0.0)
    assert frustum_signed_distance(target, 0.0, 0.0, fov, w, h) == pytest.approx(-45.0)
    assert frustum_signed_distance(target, 40.0, 0.0, fov, w, h) == pytest.approx(-5.0)
    assert frustum_signed_distance(target, 60.0, 0.0, fov, w, h) == pytest.approx(15.0)
    assert frustum_signed_distance(target, 0.0, -50.0, fov, w, h) == pytest.approx(5.0)
    # straight behind: nearest seen direction is a corner ray, 180 - atan(sqrt(2))
    behind = frustum_signed_distance(np.array([0.0, 0.0, -1.0]), 0.0, 0.0, fov, w, h)
    assert behind == pytest.approx(180.0 - np.degrees(np.arctan(np.sqrt(2.0))))
    inside, outside = angular_box_in_view([0.0, 0.0, 0.0, 0.0], 0.0, 5.0,
                                          [0.0, 39.9, 45.0, 50.1], 0.0, fov, w, h)
    assert list(inside) == [True, True, False, False]
    assert list(outside) == [False, False, False, True]


def test_frustum_signed_distance_matches_brute_force():
    fov, w, h = 70.0, 80, 50
    yaw, pitch = 30.0, 20.0
    K = intrinsics(w, h, fov)
    # dense rays through the image border: the boundary of what the camera sees
    s = np.linspace(0, 1, 4001)
    zero = np.zeros_like(s)
    border = np.concatenate([np.stack([s * w, zero], 1), np.stack([s * w, zero + h], 1),
                             np.stack([zero, s * h], 1), np.stack([zero + w, s * h], 1)])
    rays = np.concatenate([(border - K[:2, 2]) / K[0, 0], np.ones((len(border), 1))], axis=1)
    rays = rays @ view_rotation(yaw, pitch).T
    rays /= np.linalg.norm(rays, axis=1, keepdims=True)
    rng = np.random.default_rng(3)
    d = rng.normal(size=(300, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    sd = frustum_signed_distance(d, yaw, pitch, fov, w, h)
    nearest = np.degrees(np.arccos(np.clip(d @ rays.T, -1, 1)).min(axis=1))
    px, front = project(d, yaw, pitch, fov, w, h)
    seen = front & (px[:, 0] >= 0) & (px[:, 0] <= w) & (px[:, 1] >= 0) & (px[:, 1] <= h)
    assert np.array_equal(sd < 0, seen)
    np.testing.assert_allclose(np.abs(sd), nearest, atol=0.02)
