import numpy as np
import pytest
from worldmemory.common.equirect import (
    direction_to_lonlat,
    direction_to_pixel,
    equirect_directions,
    half_fov_deg,
    lonlat_to_direction,
    perspective,
    project,
    view_forward,
    view_rotation,
    view_rotations,
    wrap_deg,
)
from worldmemory.common.geometry import intrinsics, rot_x, rot_y


def _crop_rays(yaw, pitch, fov, width, height):
    """World directions through a crop's pixel centres, built independently of the module."""
    K = intrinsics(width, height, fov)
    x = (np.arange(width) + 0.5 - K[0, 2]) / K[0, 0]
    y = (np.arange(height) + 0.5 - K[1, 2]) / K[1, 1]
    xx, yy = np.meshgrid(x, y)
    rays = np.stack([xx, yy, np.ones_like(xx)], axis=-1)
    R = rot_y(np.radians(yaw)) @ rot_x(np.radians(pitch))
    return rays @ R.T


def test_view_rotation_conventions():
    np.testing.assert_allclose(view_rotation(0, 0), np.eye(3), atol=1e-15)
    # positive yaw turns right (+x), positive pitch looks up (-y)
    np.testing.assert_allclose(view_rotation(90, 0)[:, 2], [1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(view_rotation(0, 90)[:, 2], [0, -1, 0], atol=1e-15)
    R = view_rotation(37.0, -21.0)
    assert R[1, 0] == pytest.approx(0.0, abs=1e-15)  # camera x stays horizontal: no roll
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-14)
    assert np.linalg.det(R) == pytest.approx(1.0)
    # the optical axis is the direction whose (lon, lat) equal (yaw, pitch)
    np.testing.assert_allclose(R[:, 2], lonlat_to_direction(np.radians(37), np.radians(-21)))
    yaws, pitches = np.array([[0.0, 200.0], [-75.0, 12.0]]), np.array([[5.0, -40.0], [60, 0]])
    batch = view_rotations(yaws, pitches)
    assert batch.shape == (2, 2, 3, 3)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(batch[i, j], view_rotation(yaws[i, j], pitches[i, j]),
                                       atol=1e-15)
    np.testing.assert_allclose(view_forward(yaws, pitches), batch[..., :, 2], atol=1e-15)


def test_lonlat_direction_round_trip():
    np.testing.assert_allclose(lonlat_to_direction(0, 0), [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(lonlat_to_direction(np.pi / 2, 0), [1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(lonlat_to_direction(0, np.pi / 2), [0, -1, 0], atol=1e-15)
    rng = np.random.default_rng(0)
    lon = rng.uniform(-np.pi, np.pi, 200)
    lat = rng.uniform(-np.pi / 2 + 1e-6, np.pi / 2 - 1e-6, 200)
    d = lonlat_to_direction(lon, lat)
    np.testing.assert_allclose(np.linalg.norm(d, axis=-1), 1.0)
    lon2, lat2 = direction_to_lonlat(3.0 * d)  # any length
    np.testing.assert_allclose(lon2, lon, atol=1e-12)
    np.testing.assert_allclose(lat2, lat, atol=1e-12)


def test_pixel_round_trip_and_centres():
    W, H = 64, 32
    dirs = equirect_directions(W, H)
    assert dirs.shape == (H, W, 3)
    u, v = direction_to_pixel(dirs, W, H)
    uu, vv = np.meshgrid(np.arange(W), np.arange(H))
    np.testing.assert_allclose(u, uu, atol=1e-9)  # index space: pixel u's centre is at u
    np.testing.assert_allclose(v, vv, atol=1e-9)
    # +z (lon 0) sits between the two middle columns, the seam (lon -pi) on the left edge
    u0, v0 = direction_to_pixel(np.array([0.0, 0.0, 1.0]), W, H)
    assert (u0, v0) == pytest.approx((W / 2 - 0.5, H / 2 - 0.5))
    lon, lat = direction_to_lonlat(lonlat_to_direction(*direction_to_lonlat(dirs)))
    np.testing.assert_allclose(lon, (uu + 0.5) / W * 2 * np.pi - np.pi, atol=1e-12)
    np.testing.assert_allclose(lat, np.pi / 2 - (vv + 0.5) / H * np.pi, atol=1e-12)


@pytest.mark.parametrize("yaw,pitch", [(0, 0), (123.0, -17.0), (-179.0, 45.0), (540.0, 10.0)])
def test_view_centre_maps_to_image_centre(yaw, pitch):
    px, front = project(view_forward(yaw, pitch), yaw, pitch, 70.0, 80, 60)
    assert front
    np.testing.assert_allclose(px, [40.0, 30.0], atol=1e-9)


def test_45_degrees_right_lands_on_right_border():
    d = lonlat_to_direction(np.radians(45.0), 0.0)
    px, front = project(d, 0.0, 0.0, 90.0, 64, 48)
    assert front
    np.testing.assert_allclose(px, [64.0, 24.0], atol=1e-9)
    px, _ = project(lonlat_to_direction(np.radians(-45.0), 0.0), 0.0, 0.0, 90.0, 64, 48)
    np.testing.assert_allclose(px, [0.0, 24.0], atol=1e-9)
    # behind the camera: not in front, no pixel
    px, front = project(np.array([0.0, 0.0, -1.0]), 0.0, 0.0, 90.0, 64, 48)
    assert not front and np.all(np.isnan(px))


def test_pitch_up_moves_horizon_point_down():
    width, height, fov = 96, 64, 80.0
    f = intrinsics(width, height, fov)[0, 0]
    px, front = project(np.array([0.0, 0.0, 1.0]), 0.0, 30.0, fov, width, height)
    assert front
    np.testing.assert_allclose(px, [width / 2, height / 2 + f * np.tan(np.radians(30))],
                               atol=1e-9)


@pytest.mark.parametrize("yaw,pitch,marker_lon,marker_lat", [
    (0.0, 0.0, 20.0, 10.0),
    (-60.0, 25.0, -75.0, 40.0),
    (175.0, -10.0, -170.0, -20.0),  # view and marker on opposite sides of the seam
])
def test_perspective_puts_marker_where_project_says(yaw, pitch, marker_lon, marker_lat):
    W, H, width, height, fov = 512, 256, 96, 96, 90.0
    marker = lonlat_to_direction(np.radians(marker_lon), np.radians(marker_lat))
    dirs = equirect_directions(W, H)
    pano = np.zeros((H, W, 3))
    pano[..., 0] = np.degrees(np.arccos(np.clip(dirs @ marker, -1, 1))) < 2.0  # red disc
    crop = perspective(pano, yaw, pitch, fov, width, height)
    assert crop.shape == (height, width, 3)
    red = crop[..., 0]
    assert red.sum() > 5 and crop[..., 1:].max() == 0
    jj, ii = np.mgrid[0:height, 0:width]
    centroid = np.array([(red * (ii + 0.5)).sum(), (red * (jj + 0.5)).sum()]) / red.sum()
    px, front = project(marker, yaw, pitch, fov, width, height)
    assert front
    assert np.linalg.norm(centroid - px) < 1.0


def test_perspective_is_continuous_across_the_seam():
    W, H = 512, 256
    lon, _ = direction_to_lonlat(equirect_directions(W, H))
    pano = np.stack([np.cos(lon), np.sin(lon)], axis=-1)  # smooth, wraps at lon = +-pi
    width = height = 96
    crop = perspective(pano, 180.0, 0.0, 90.0, width, height)
    lon_true, _ = direction_to_lonlat(_crop_rays(180.0, 0.0, 90.0, width, height))
    expected = np.stack([np.cos(lon_true), np.sin(lon_true)], axis=-1)
    # bilinear error of a smooth signal sampled every 0.7 degree is ~1e-4; a seam break is ~2
    assert np.abs(crop - expected).max() < 1e-3
    assert np.abs(np.diff(crop, axis=1)).max() < 0.05


def test_perspective_nearest_keeps_labels_and_dtypes():
    W, H = 128, 64
    labels = (np.arange(W)[None, :] // 16 % 3 + np.zeros((H, 1), dtype=int)).astype(np.int32)
    crop = perspective(labels, 30.0, 10.0, 60.0, 40, 30, nearest=True)
    assert crop.shape == (30, 40) and crop.dtype == np.int32
    assert set(np.unique(crop)) <= {0, 1, 2}
    mask = labels == 1
    with pytest.raises(ValueError):
        perspective(mask, 0.0, 0.0, 60.0, 40, 30)
    assert perspective(mask, 0.0, 0.0, 60.0, 40, 30, nearest=True).dtype == bool
    img = np.full((H, W, 3), 200, dtype=np.uint8)
    out = perspective(img, 0.0, 80.0, 60.0, 40, 30)  # near the pole: rows clamp
    assert out.dtype == np.uint8 and np.all(out == 200)


def test_wrap_deg():
    assert wrap_deg(190.0) == pytest.approx(-170.0)
    np.testing.assert_allclose(wrap_deg([-180.0, 540.0, 10.0]), [-180.0, -180.0, 10.0])


def test_half_fov_of_a_non_square_image():
    assert half_fov_deg(90.0, 96, 48) == pytest.approx((45.0, np.degrees(np.arctan(0.5))))
