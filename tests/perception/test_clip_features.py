"""CLIP vision patch features on a tiny random config of the real transformers class."""

import numpy as np
import pytest
import torch
from transformers import CLIPConfig, CLIPModel
from worldmemory.perception import registry
from worldmemory.perception.clip_features import ClipFeatures
from worldmemory.perception.dinov2 import Dinov2Features
from worldmemory.perception.features import feature_backend, global_feature, pool_under_mask

TINY = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=2, patch_size=14,
            image_size=28)  # a 2 x 2 grid of learned position embeddings
CLIP_MEAN = np.array([0.48145466, 0.4578275, 0.40821073])
CLIP_STD = np.array([0.26862954, 0.26130258, 0.27577711])


@pytest.fixture(scope="module")
def backend():
    return ClipFeatures.from_config(TINY, seed=0)


@pytest.fixture(scope="module")
def saved(backend, tmp_path_factory):
    path = tmp_path_factory.mktemp("clip")
    backend.model.save_pretrained(path)
    return path


def images(h, w, n=1, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def hidden(backend, pixels, interpolate=True):
    """The model's own last hidden state (CLS first) and its post_layernorm."""
    with torch.inference_mode():
        tokens = backend.model(pixel_values=pixels, interpolate_pos_encoding=interpolate).last_hidden_state
        return tokens.numpy(), backend.model.post_layernorm(tokens).numpy()


def normalised(x):
    return torch.as_tensor(((x / 255.0 - CLIP_MEAN) / CLIP_STD).transpose(0, 3, 1, 2), dtype=torch.float32)


def test_grid_is_padded_and_features_are_the_layer_normed_patch_tokens(backend):
    """30 x 45 is no multiple of 14 and no 2 x 2 grid: ceil gives 3 x 4 cells, the position
    embeddings are interpolated to them, and the CLS token is left out."""
    x = images(30, 45, n=2)
    features, grid = backend.patch_grid(x)
    assert grid.shape == (3, 4) and grid.padded_size == (42, 56)
    assert features.shape == (2, 3, 4, 32) and features.dtype == np.float32
    raw, normed = hidden(backend, backend.preprocess(x)[0])
    assert raw.shape[1] == 1 + 12  # CLS, then gh * gw patches
    np.testing.assert_allclose(features.reshape(2, 12, 32), normed[:, 1:], rtol=1e-5, atol=1e-5)
    assert not np.allclose(features.reshape(2, 12, 32), raw[:, 1:], atol=1e-3)  # post_layernorm applied
    np.testing.assert_allclose(features.mean(-1), 0.0, atol=1e-5)  # the norm's initial weight 1, bias 0


def test_position_embeddings_are_interpolated_to_other_grids(backend):
    """The model refuses a grid other than its config's without interpolation; at the config's
    own size, interpolation is the identity, so the features are the plain forward's."""
    pixels, _ = backend.preprocess(images(30, 45))
    with pytest.raises(ValueError, match="doesn't match model"), torch.inference_mode():
        backend.model(pixel_values=pixels)
    x = images(28, 28)
    features, grid = backend.patch_grid(x)
    assert grid.shape == (2, 2) and backend.preprocess(x)[0].shape == (1, 3, 28, 28)
    _, plain = hidden(backend, normalised(x), interpolate=False)
    np.testing.assert_allclose(features.reshape(1, 4, 32), plain[:, 1:], rtol=1e-5, atol=1e-5)


def test_normalisation_is_clips_and_padding_is_its_mean_colour(backend):
    x = images(30, 45)
    pixels, _ = backend.preprocess(x)
    assert not pixels[:, :, 30:].any() and not pixels[:, :, :, 45:].any()
    np.testing.assert_allclose(pixels[:, :, :30, :45], normalised(x), atol=1e-6)
    grey = np.full((1, 14, 14, 3), np.round(CLIP_MEAN * 255), np.uint8)  # CLIP's mean to a uint8 step
    assert np.abs(backend.preprocess(grey)[0].numpy()).max() < 0.5 / 255 / CLIP_STD.min()
    white = backend.preprocess(np.full((1, 14, 14, 3), 255, np.uint8))[0][0, :, 0, 0].numpy()
    np.testing.assert_allclose(white, (1 - CLIP_MEAN) / CLIP_STD, rtol=1e-6)  # not ImageNet's 2.25, 2.43, 2.64


def test_features_depend_on_the_image_and_only_on_it(backend):
    x = np.concatenate([images(30, 45, seed=0), images(30, 45, seed=0), images(30, 45, seed=1)])
    features, _ = backend.patch_grid(x)
    np.testing.assert_array_equal(features[0], features[1])
    assert not np.allclose(features[0], features[2])


def test_masks_pool_through_the_shared_pooling(backend):
    features, grid = backend.patch_grid(images(30, 45))
    f = features[0]
    mask = np.zeros((30, 45), bool)
    mask[5:25, 10:40] = True
    pooled = pool_under_mask(f, mask, grid)
    assert pooled.shape == (32,) and np.isfinite(pooled).all()
    one_cell = np.zeros((30, 45), bool)
    one_cell[14:28, 28:42] = True
    np.testing.assert_allclose(pool_under_mask(f, one_cell, grid), f[1, 2], rtol=1e-5, atol=1e-6)
    assert global_feature(features).shape == (1, 32)


def test_save_and_load_round_trip_through_the_registry(backend, saved):
    x = images(30, 45)
    expected = backend.patch_grid(x)[0]
    for loaded in (ClipFeatures.from_pretrained(str(saved)), feature_backend("clip", str(saved)),
                   registry.create("features", "clip", model=backend.model)):
        assert isinstance(loaded, ClipFeatures) and loaded.name == "clip"
        np.testing.assert_array_equal(loaded.patch_grid(x)[0], expected)
    with pytest.raises(ValueError, match="features 'clip' need a checkpoint"):
        feature_backend("clip")


def test_a_whole_clip_model_loads_its_vision_tower(tmp_path):
    """Released CLIP checkpoints are CLIPModels (text and vision towers): the vision one is read."""
    torch.manual_seed(0)
    text = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=2, vocab_size=50)
    whole = CLIPModel(CLIPConfig(vision_config=TINY, text_config=text, projection_dim=8))
    whole.save_pretrained(tmp_path)
    loaded = ClipFeatures.from_pretrained(str(tmp_path)).model.state_dict()
    vision = {k.removeprefix("vision_model."): v for k, v in whole.state_dict().items()
              if k.startswith("vision_model.")}
    assert loaded.keys() == vision.keys()
    assert all(torch.equal(loaded[k], vision[k]) for k in vision)


def test_missing_or_wrong_checkpoints_fail_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        ClipFeatures.from_pretrained(str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="no config.json"):
        ClipFeatures.from_pretrained(str(tmp_path))
    dino = {k: v for k, v in TINY.items() if k != "intermediate_size"}
    Dinov2Features.from_config(dino).model.save_pretrained(tmp_path / "dino")
    with pytest.raises(ValueError, match="not CLIP"):
        ClipFeatures.from_pretrained(str(tmp_path / "dino"))
