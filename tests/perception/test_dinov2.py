"""DINOv2 patch features on tiny random configs of the real transformers classes."""

import numpy as np
import pytest
import torch
from worldmemory.perception.dinov2 import Dinov2Features
from worldmemory.perception.features import cosine, global_feature, pool_under_mask

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, patch_size=14, image_size=28)
REGISTERS = dict(TINY, num_register_tokens=4)
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


@pytest.fixture(scope="module", params=[TINY, REGISTERS], ids=["plain", "registers"])
def backend(request):
    return Dinov2Features.from_config(request.param, seed=0)


def images(h, w, n=1, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def forward(backend, pixels):
    with torch.inference_mode():
        return backend.model(pixel_values=pixels).last_hidden_state.numpy()


def normalised(x):
    return torch.as_tensor(((x / 255.0 - MEAN) / STD).transpose(0, 3, 1, 2), dtype=torch.float32)


def test_registers_config_builds_the_registers_model(backend):
    expected = "Dinov2WithRegistersModel" if backend.num_register_tokens else "Dinov2Model"
    assert type(backend.model).__name__ == expected
    assert backend.num_register_tokens in (0, 4)


def test_grid_is_padded_and_tokens_are_the_models_patch_tokens(backend):
    x = images(30, 45, n=2)
    features, grid = backend.patch_grid(x)
    assert grid.shape == (3, 4) and grid.padded_size == (42, 56)
    assert features.shape == (2, 3, 4, 32) and features.dtype == np.float32
    tokens = forward(backend, backend.preprocess(x)[0])
    r = backend.num_register_tokens
    assert tokens.shape[1] == 1 + r + 12  # CLS, registers, then gh * gw patches
    np.testing.assert_allclose(features.reshape(2, 12, 32), tokens[:, 1 + r:], rtol=1e-5, atol=1e-5)


def test_padding_is_zero_after_normalisation_and_keeps_the_image(backend):
    x = images(30, 45)
    pixels, _ = backend.preprocess(x)
    assert pixels.shape == (1, 3, 42, 56)
    assert not pixels[:, :, 30:].any() and not pixels[:, :, :, 45:].any()
    np.testing.assert_allclose(pixels[:, :, :30, :45], normalised(x), atol=1e-6)


def test_image_of_whole_patches_is_not_padded(backend):
    x = images(28, 28)
    pixels, grid = backend.preprocess(x)
    assert pixels.shape == (1, 3, 28, 28) and grid.padded_size == (28, 28)
    features, _ = backend.patch_grid(x)
    direct = forward(backend, normalised(x))[:, 1 + backend.num_register_tokens:]
    np.testing.assert_allclose(features.reshape(1, 4, 32), direct, rtol=1e-5, atol=1e-5)


def test_identical_images_give_identical_features(backend):
    x = np.repeat(images(30, 45), 2, axis=0)
    features, _ = backend.patch_grid(x)
    np.testing.assert_array_equal(features[0], features[1])
    assert cosine(global_feature(features[0]), global_feature(features[1])) == pytest.approx(1.0)
    np.testing.assert_array_equal(backend.patch_grid(x)[0], features)


def test_different_images_give_different_features(backend):
    a, _ = backend.patch_grid(images(28, 28, seed=0))
    b, _ = backend.patch_grid(images(28, 28, seed=1))
    assert not np.allclose(a, b)


def test_save_and_load_round_trip(backend, tmp_path):
    backend.model.save_pretrained(tmp_path)
    loaded = Dinov2Features.from_pretrained(str(tmp_path))
    assert type(loaded.model) is type(backend.model) and loaded.name == backend.name
    x = images(30, 45)
    np.testing.assert_array_equal(loaded.patch_grid(x)[0], backend.patch_grid(x)[0])


def test_directory_without_config_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError):
        Dinov2Features.from_pretrained(str(tmp_path))


@pytest.fixture(scope="module")
def cells(backend):
    features, grid = backend.patch_grid(images(30, 45))
    return features[0].astype(np.float64), grid


def test_full_mask_weights_cells_by_their_area_inside_the_image(cells):
    f, grid = cells
    area = np.outer([14, 14, 2], [14, 14, 14, 3])  # rows 28-29 and columns 42-44 are the image's last
    expected = (area[..., None] * f).sum((0, 1)) / area.sum()
    pooled = pool_under_mask(f, np.ones((30, 45), bool), grid)
    np.testing.assert_allclose(pooled, expected, rtol=1e-5)
    assert not np.allclose(pooled, f.mean((0, 1)), rtol=1e-3)


def test_mask_of_one_cell_gives_that_cell(cells):
    f, grid = cells
    mask = np.zeros((30, 45), bool)
    mask[14:28, 28:42] = True
    np.testing.assert_allclose(pool_under_mask(f, mask, grid), f[1, 2], rtol=1e-6)


def test_half_a_cell_weighs_half(cells):
    f, grid = cells
    mask = np.zeros((30, 45), bool)
    mask[0:7, 0:14] = True  # top half of cell (0, 0)
    mask[14:28, 14:28] = True  # all of cell (1, 1)
    expected = (0.5 * f[0, 0] + f[1, 1]) / 1.5
    np.testing.assert_allclose(pool_under_mask(f, mask, grid), expected, rtol=1e-6)


def test_empty_mask_pools_to_none(cells):
    f, grid = cells
    assert pool_under_mask(f, np.zeros((30, 45), bool), grid) is None


def test_mask_must_match_the_image(cells):
    f, grid = cells
    with pytest.raises(ValueError):
        pool_under_mask(f, np.ones((42, 56), bool), grid)


def test_max_side_resize_maps_the_mask_with_the_image():
    backend = Dinov2Features.from_config(TINY, seed=0, max_side=45)
    features, grid = backend.patch_grid(images(60, 90))
    assert grid.input_size == (30, 45) and features.shape == (1, 3, 4, 32)
    mask = np.zeros((60, 90), bool)
    mask[28:56, 0:28] = True  # image pixels of input rows 14-27, columns 0-13: cell (1, 0)
    np.testing.assert_allclose(pool_under_mask(features[0], mask, grid), features[0, 1, 0], rtol=1e-6)
