"""The non-learned colour/gradient patch descriptor: known answers of its construction."""

import numpy as np
import pytest
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.perception.features import cosine, pool_under_mask

DESCRIPTOR = ColourGradientPatches()


def textured(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (1, h, w, 3), dtype=np.uint8)


def uniform(colour, h=28, w=28):
    return np.broadcast_to(np.array(colour, np.uint8), (1, h, w, 3)).copy()


def test_shape_contract():
    features, grid = DESCRIPTOR.patch_grid(np.concatenate([textured(30, 45), textured(30, 45, seed=1)]))
    assert grid.shape == (3, 4) and grid.padded_size == (42, 56)
    assert features.shape == (2, 3, 4, DESCRIPTOR.dim) and features.dtype == np.float32
    assert DESCRIPTOR.dim == 6 + 64 + 8
    np.testing.assert_allclose(np.linalg.norm(features, axis=-1), 1.0, rtol=1e-6)


def test_identical_patches_give_identical_descriptors():
    tiled = np.tile(textured(14, 14), (1, 2, 3, 1))
    features, _ = DESCRIPTOR.patch_grid(tiled)
    np.testing.assert_array_equal(features, np.broadcast_to(features[:, :1, :1], features.shape))


def test_red_and_blue_are_dissimilar():
    red, _ = DESCRIPTOR.patch_grid(uniform((255, 0, 0)))
    blue, _ = DESCRIPTOR.patch_grid(uniform((0, 0, 255)))
    assert cosine(red[0, 0, 0], blue[0, 0, 0]) < 0.1
    assert cosine(red[0, 0, 0], red[0, 1, 1]) == pytest.approx(1.0)


def test_shift_by_one_cell_shifts_the_descriptors():
    image = textured(28, 70)
    shifted = textured(28, 70, seed=1)  # its first column of cells is new content
    shifted[:, :, 14:] = image[:, :, :-14]
    a, _ = DESCRIPTOR.patch_grid(image)
    b, _ = DESCRIPTOR.patch_grid(shifted)
    np.testing.assert_allclose(b[:, :, 1:], a[:, :, :-1], rtol=0, atol=1e-7)
    assert not np.allclose(b[:, :, 0], a[:, :, 0])


def test_deterministic_and_independent_of_the_batch():
    batch = np.concatenate([textured(30, 45), textured(30, 45, seed=1)])
    features, _ = DESCRIPTOR.patch_grid(batch)
    np.testing.assert_array_equal(DESCRIPTOR.patch_grid(batch)[0], features)
    np.testing.assert_allclose(DESCRIPTOR.patch_grid(batch[1:])[0][0], features[1], atol=1e-7)


def test_padding_is_left_out_of_the_statistics():
    features, grid = DESCRIPTOR.patch_grid(uniform((30, 160, 90), h=20, w=30))  # border cells mostly padding
    assert grid.shape == (2, 3)
    np.testing.assert_allclose(features, np.broadcast_to(features[:, :1, :1], features.shape), atol=1e-7)


def test_gradient_orientation_tells_stripes_apart():
    stripes = np.zeros((1, 14, 14, 3), np.uint8)
    stripes[:, :, ::2] = 255  # vertical stripes: horizontal gradients
    vertical, _ = DESCRIPTOR.patch_grid(stripes)
    horizontal, _ = DESCRIPTOR.patch_grid(stripes.transpose(0, 2, 1, 3).copy())
    np.testing.assert_allclose(vertical[..., :70], horizontal[..., :70], atol=1e-7)  # same colours
    assert not np.allclose(vertical[..., 70:], horizontal[..., 70:])


def test_masks_pool_with_the_shared_function():
    image = uniform((255, 0, 0), w=42)
    image[:, :, 14:] = (0, 0, 255)
    features, grid = DESCRIPTOR.patch_grid(image)
    mask = np.zeros((28, 42), bool)
    mask[:, 3:10] = True  # inside the red column of cells
    np.testing.assert_allclose(pool_under_mask(features[0], mask, grid), features[0, 0, 0], rtol=1e-6)
