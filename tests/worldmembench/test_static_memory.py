import math

import numpy as np
import pytest
from worldmemory.worldmembench.metrics.aggregate import revisit_mean, rollout_score
from worldmemory.worldmembench.metrics.static_memory import (
    borders_touched,
    depth_spearman,
    normalise_silhouette,
    pose_qualified,
    reconstruction_score,
    reconstruction_similarity,
    return_similarity,
    revisit_geometry,
    revisit_similarity,
    spherical_field,
    tracking_qualified,
    visible_memory,
    whole_in_view,
)

E1, E2, E3 = np.eye(3)


# Eq. 4: appearance / identity similarity


def test_identical_features_score_one():
    assert revisit_similarity([E1], [2 * E1, E1]) == pytest.approx(1.0)


def test_orthogonal_features_score_zero():
    assert revisit_similarity([E1], [E2]) == 0.0


def test_negative_cosine_is_clipped_to_zero():
    # Mean of clip(-1) = 0 and clip(1) = 1, not of -1 and 1.
    assert revisit_similarity([E1], [-E1, E1]) == 0.5


def test_max_over_references_picks_the_best_reference():
    references = [E1, E2, (E1 + E3) / np.sqrt(2)]
    # Frame E3 best matches the third reference (cos = 1/sqrt 2), frame E2 the second (cos = 1).
    expected = (1 / np.sqrt(2) + 1.0) / 2
    assert revisit_similarity(references, [E3, E2]) == pytest.approx(expected)


def test_no_valid_frame_is_none_and_scores_zero_in_eq1():
    empty = np.zeros((0, 3))
    assert revisit_similarity([E1], empty) is None
    per_revisit = [revisit_similarity([E1], [E1]), revisit_similarity([E1], empty)]
    assert rollout_score({"person": per_revisit}, n_revisits=2) == 0.5


def test_empty_reference_set_raises():
    with pytest.raises(ValueError):
        revisit_similarity(np.zeros((0, 3)), [E1])


# Eq. 5: silhouette geometry


def disk(size, centre, radius):
    r, c = np.indices((size, size))
    return (r - centre[0]) ** 2 + (c - centre[1]) ** 2 <= radius**2


def scaled_shift(mask, factor, size, offset):
    """mask upsampled by an integer factor and placed at offset in a size x size image."""
    big = np.kron(mask, np.ones((factor, factor), dtype=bool))
    out = np.zeros((size, size), dtype=bool)
    out[offset[0] : offset[0] + big.shape[0], offset[1] : offset[1] + big.shape[1]] = big
    return out


L_SHAPE = np.zeros((30, 30), dtype=bool)
L_SHAPE[5:25, 8:13] = True
L_SHAPE[20:25, 8:20] = True


def test_silhouette_longer_side_fills_canvas_and_is_centred():
    mask = np.zeros((50, 50), dtype=bool)
    mask[7:17, 3:23] = True  # 10 x 20 rectangle
    out = normalise_silhouette(mask, canvas=64)
    expected = np.zeros((64, 64), dtype=bool)
    expected[16:48, :] = True  # 32 x 64, centred vertically
    np.testing.assert_array_equal(out, expected)


def test_empty_silhouette_raises():
    with pytest.raises(ValueError):
        normalise_silhouette(np.zeros((8, 8), dtype=bool))


@pytest.mark.parametrize("shape", [disk(30, (12, 15), 7), L_SHAPE], ids=["disk", "L"])
def test_translation_and_uniform_scale_give_iou_one(shape):
    bigger = scaled_shift(shape, 3, 120, (17, 5))
    assert revisit_geometry([shape], [bigger]) == 1.0


def test_rasterised_disks_of_different_size_nearly_match():
    # Independently rasterised, so pixel edges differ slightly.
    assert revisit_geometry([disk(50, (25, 22), 20)], [disk(140, (75, 60), 60)]) > 0.95


def test_different_shapes_give_iou_below_one():
    square = np.zeros((40, 40), dtype=bool)
    square[5:25, 10:30] = True
    # The square fills the canvas; a rasterised disk of radius r covers about pi r^2 of its
    # (2r + 1)^2 bounding box.
    expected = math.pi * 25**2 / 51**2
    assert revisit_geometry([square], [disk(60, (30, 30), 25)]) == pytest.approx(expected, abs=0.01)
    assert revisit_geometry([L_SHAPE], [square]) < 0.6


def test_geometry_max_over_references_and_empty_frames():
    square = np.zeros((20, 20), dtype=bool)
    square[2:12, 4:14] = True
    empty = np.zeros((20, 20), dtype=bool)
    assert revisit_geometry([L_SHAPE, square], [square, empty]) == 1.0
    assert revisit_geometry([square], [empty]) is None


# Visible Memory


def test_visible_memory_selects_frame_closest_in_orientation():
    # The first frame is far in orientation; the second is closest and identical in content.
    features = np.stack([E2, E1, -E1])
    assert return_similarity(E1, features, [40.0, 3.0, np.nan]) == 1.0
    assert return_similarity(E1, features, [1.0, 3.0, np.nan]) == 0.0
    assert return_similarity(E1, features, [50.0, 30.0, 2.0]) == 0.0  # clipped negative cosine


def test_visible_memory_window_without_frame_scores_zero_and_counts():
    windows = [
        (np.stack([E2, E1]), np.array([20.0, 1.0])),  # selects E1: 1
        (np.zeros((0, 3)), np.zeros(0)),  # no frame: 0
        (np.stack([E1]), np.array([np.nan])),  # no pose: 0
        (np.stack([(E1 + E2) / 2]), np.array([5.0])),  # cos 1/sqrt 2
    ]
    assert visible_memory(E1, windows) == pytest.approx((1 + 1 / np.sqrt(2)) / 4)


# Depth Spearman


@pytest.fixture
def depth():
    return np.random.default_rng(0).uniform(0.5, 20.0, size=(24, 32))


@pytest.mark.parametrize(
    "transform", [lambda d: 5 * d + 1, np.log, np.sqrt], ids=["affine", "log", "sqrt"]
)
def test_monotone_depth_transform_gives_one(depth, transform):
    assert depth_spearman(depth, transform(depth)) == pytest.approx(1.0)


@pytest.mark.parametrize("transform", [lambda d: -d, lambda d: 1 / d], ids=["negated", "inverse"])
def test_reversed_depth_order_gives_minus_one(depth, transform):
    assert depth_spearman(depth, transform(depth)) == pytest.approx(-1.0)


def test_depth_uses_only_pixels_valid_in_both(depth):
    revisit = 2 * depth
    revisit[:, :10] = np.random.default_rng(1).uniform(size=(24, 10))
    valid = np.ones_like(depth, dtype=bool)
    valid[:, :10] = False
    assert depth_spearman(depth, revisit, valid) == pytest.approx(1.0)
    revisit[:, :10] = np.nan
    assert depth_spearman(depth, revisit) == pytest.approx(1.0)


def test_undefined_depth_correlation_is_none_and_zero_in_eq1(depth):
    assert depth_spearman(depth, np.full_like(depth, 3.0)) is None
    rhos = [depth_spearman(depth, depth), depth_spearman(depth, np.full_like(depth, np.nan))]
    assert revisit_mean(rhos, n_revisits=2) == pytest.approx(0.5)


# Spherical Reconstruction Score (Eq. 6)

K = np.array([[40.0, 0.0, 32.0], [0.0, 40.0, 24.0], [0.0, 0.0, 1.0]])
SHAPE = (48, 64)
GRID = (120, 60)  # 3 degree bins
CENTRE = np.array([1.0, 0.5, -0.5])


def yaw(degrees):
    a = np.radians(degrees)
    return np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])


def pose(rotation, centre=CENTRE):
    c2w = np.eye(4)
    c2w[:3, :3], c2w[:3, 3] = rotation, centre
    return c2w


def rays(shape=SHAPE):
    """Camera rays K^-1 [u + 1/2, v + 1/2, 1], z = 1, shape (H, W, 3)."""
    v, u = np.indices(shape)
    pixels = np.stack([u + 0.5, v + 0.5, np.ones(shape)], axis=-1)
    return pixels @ np.linalg.inv(K).T


def box_depth(rotation, centre=CENTRE, half=5.0):
    """z-depth of the walls of the box [-half, half]^3 seen from a camera inside it."""
    world = rays() @ rotation.T
    with np.errstate(divide="ignore"):
        hits = (np.sign(world) * half - centre) / world
    return np.min(np.where(hits > 0, hits, np.inf), axis=-1)


def field(depth, rotation=np.eye(3)):
    return spherical_field(depth, K, pose(rotation), GRID, origin=CENTRE)


def test_field_bins_keep_the_nearest_log_range():
    depth = np.full((2, 2), 4.0)
    depth[0, 0] = 2.0  # all four pixels fall in one coarse bin
    occupied, log_range = spherical_field(depth, K, np.eye(4), (4, 2), origin=np.zeros(3))
    assert occupied.sum() == 1
    expected = np.log(2.0 * np.linalg.norm(rays((2, 2))[0, 0]))
    assert log_range[occupied][0] == pytest.approx(expected)
    assert np.isnan(log_range[~occupied]).all()


def test_field_axes_azimuth_from_z_elevation_up_is_minus_y():
    centre_ray = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])  # 1x1 image, ray +z
    ahead, _ = spherical_field([[2.0]], centre_ray, np.eye(4), (3, 3), origin=np.zeros(3))
    assert ahead[1, 1] and ahead.sum() == 1
    look_up = np.eye(4)
    look_up[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]  # camera +z -> world -y
    up, _ = spherical_field([[2.0]], centre_ray, look_up, (3, 3), origin=np.zeros(3))
    assert up[2].any() and up.sum() == 1
    look_right = pose(yaw(90.0), np.zeros(3))  # camera +z -> world +x, azimuth +pi/2
    right, _ = spherical_field([[2.0]], centre_ray, look_right, (6, 3), origin=np.zeros(3))
    assert right[1, 4] and right.sum() == 1  # (pi/2 + pi) / 2pi * 6 = 4.5


def test_identical_depth_scores_one():
    depth = box_depth(np.eye(3))
    assert reconstruction_score(field(depth), [field(depth)]) == pytest.approx(1.0)


def test_global_depth_scale_is_removed():
    depth = box_depth(np.eye(3))
    assert reconstruction_score(field(depth), [field(3.7 * depth)]) == pytest.approx(1.0)


def test_missing_surface_scales_by_overlap():
    # A sphere of radius 6 around the camera: every bin holds the same log-range, so only
    # |C|/|U| can lower the score, and the half-image revisit occupies a subset of the bins.
    depth = 6.0 / np.linalg.norm(rays(), axis=-1)
    half = depth.copy()
    half[:, 32:] = np.nan
    reference, revisit = field(depth), field(half)
    expected = revisit[0].sum() / reference[0].sum()
    assert np.all(reference[0] | revisit[0] == reference[0])
    assert reconstruction_similarity(reference, revisit) == pytest.approx(expected)
    assert 0.4 < expected < 0.6


def test_known_values_on_hand_built_fields():
    occupied_h = np.zeros((2, 6), dtype=bool)
    occupied_h[0] = True
    log_h = np.where(occupied_h, 1.0, np.nan)
    occupied_g = np.zeros((2, 6), dtype=bool)
    occupied_g[0, :4] = True
    occupied_g[1, :2] = True
    log_g = np.where(occupied_g, 0.5, np.nan)
    log_g[0, 3] = 1.5
    # C = 4 bins, U = 8; H - G = (0.5, 0.5, 0.5, -0.5), delta = 0.5,
    # |H - (G + delta)| = (0, 0, 0, 1).
    expected = 4 / 8 * (3 + np.exp(-1.0)) / 4
    score = reconstruction_similarity((occupied_h, log_h), (occupied_g, log_g))
    assert score == pytest.approx(expected)
    disjoint = (~occupied_h, np.where(~occupied_h, 1.0, np.nan))
    assert reconstruction_similarity((occupied_h, log_h), disjoint) == 0.0


def test_distorted_depth_scores_lower():
    depth = box_depth(np.eye(3))
    ramp = 1.0 + 1.5 * np.linspace(0.0, 1.0, SHAPE[1])  # depth stretched across the image
    score = reconstruction_score(field(depth), [field(depth * ramp)])
    assert score < 0.9


def test_rotated_camera_sees_the_same_world_points():
    reference = field(box_depth(np.eye(3)))
    turned = yaw(20.0)
    revisit = field(box_depth(turned), turned)
    overlap = (reference[0] & revisit[0]).sum() / (reference[0] | revisit[0]).sum()
    assert 0.5 < overlap < 0.9
    score = reconstruction_similarity(reference, revisit)
    assert score / overlap > 0.98
    # Ignoring the rotation fills the reference's own bins (overlap 1) with the wrong ranges.
    assert reconstruction_similarity(reference, field(box_depth(turned))) < 0.95


def test_invalid_revisit_scores_zero_and_counts():
    depth = box_depth(np.eye(3))
    assert reconstruction_score(field(depth), [field(depth), None]) == pytest.approx(0.5)


# Appendix G.1 qualification


def test_pose_qualification_needs_departure_and_return():
    assert pose_qualified([5.0, 35.0, 60.0], [40.0, 12.0])
    assert not pose_qualified([5.0, 25.0], [2.0])  # never left
    assert not pose_qualified([45.0], [31.0, 40.0])  # did not come back
    assert not pose_qualified([45.0], [12.0], return_tol_deg=5.0)
    assert not pose_qualified([45.0], [np.nan])


def test_tracking_qualification_needs_departure_and_valid_return():
    assert tracking_qualified([True, False, True], n_valid_return_frames=3)
    assert not tracking_qualified([True, True, True], n_valid_return_frames=3)  # always visible
    assert not tracking_qualified([True, False], n_valid_return_frames=0)


def test_a_target_cut_by_a_new_border_is_no_observation():
    conditioning = np.zeros((20, 30), dtype=bool)
    conditioning[5:10, 10:20] = True  # touches no border
    frames = np.zeros((4, 20, 30), dtype=bool)
    frames[0, 5:10, 12:22] = True  # shifted, whole
    frames[1, 5:10, 0:6] = True  # cut by the left border
    frames[2, 15:20, 10:20] = True  # touches the bottom border
    frames[3, 5:9, 10:14] = True  # 16 px: below min_pixels
    assert whole_in_view(frames, conditioning, min_pixels=20).tolist() == [True, False, False, False]
    assert borders_touched(frames).tolist() == [[False] * 4, [False, False, True, False],
                                                [False, True, False, False], [False] * 4]


def test_a_border_the_conditioning_frame_cuts_stays_allowed_unless_more_is_hidden():
    conditioning = np.zeros((20, 30), dtype=bool)
    conditioning[10:20, 10:20] = True  # a person cut at the bottom: 100 px
    frames = np.zeros((3, 20, 30), dtype=bool)
    frames[0, 10:20, 3:13] = True  # the same cut, elsewhere
    frames[1, 12:20, 10:20] = True  # 80 px: as much as MIN_AREA allows
    frames[2, 13:20, 10:20] = True  # 70 px: hidden behind the bottom border
    assert whole_in_view(frames, conditioning, min_pixels=20).tolist() == [True, True, False]
