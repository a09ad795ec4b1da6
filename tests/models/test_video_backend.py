"""The base both masked latent predictors stand on: one normalisation, one crop/patch/tubelet
reading, one spec dispatch."""

import numpy as np
import pytest
import torch
from worldmemory.models.video_backend import VideoBackend, model_from_spec
from worldmemory.models.videomae import VideoMAEBackend, build_videomae
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model

# ImageNet's channel statistics, written out: the numbers both models were trained with
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
VJEPA2 = dict(crop_size=16, patch_size=8, frames_per_clip=2, tubelet_size=2, hidden_size=16, num_attention_heads=2,
              num_hidden_layers=1, pred_hidden_size=16, pred_num_attention_heads=2, pred_num_hidden_layers=1,
              num_pooler_layers=1)
VIDEOMAE = dict(image_size=24, patch_size=4, num_frames=2, tubelet_size=1, hidden_size=16, num_hidden_layers=1,
                num_attention_heads=2, intermediate_size=16, decoder_hidden_size=16, decoder_num_hidden_layers=1,
                decoder_num_attention_heads=2, decoder_intermediate_size=16)


@pytest.fixture(scope="module")
def backends():
    return VJEPA2Backend(build_model(VJEPA2)), VideoMAEBackend(build_videomae(VIDEOMAE))


def test_both_backends_read_their_own_configs_through_the_base(backends):
    vjepa2, videomae = backends
    assert isinstance(vjepa2, VideoBackend) and isinstance(videomae, VideoBackend)
    assert (vjepa2.crop_size, vjepa2.patch_size, vjepa2.tubelet_size) == (16, 8, 2)
    assert (videomae.crop_size, videomae.patch_size, videomae.tubelet_size) == (24, 4, 1)


def test_both_backends_normalise_with_imagenet_statistics(backends):
    pixel = np.array([200, 100, 0], np.uint8)
    expected = torch.tensor([(v / 255 - m) / s for v, m, s in zip(pixel, MEAN, STD)], dtype=torch.float32)
    for backend in backends:
        x = backend.preprocess(np.tile(pixel, (1, 2, 40, 40, 1)))
        side = backend.crop_size
        assert x.shape == (1, 2, 3, side, side)  # squash-resized to the model's crop
        torch.testing.assert_close(x[0, 1, :, side - 1, 0], expected)


def test_a_spec_names_where_the_model_comes_from():
    def build(config, seed):
        return ("built", config, seed)

    def load(path):
        return ("loaded", path)

    spec = {"source": "random", "config": {"a": 1}, "seed": 3}
    assert model_from_spec(spec, None, build, load) == ("built", {"a": 1}, 3)
    assert model_from_spec({"source": "random", "config": {}}, "ignored", build, load) == ("built", {}, 0)
    assert model_from_spec({"source": "local", "path": "/m"}, "ignored", build, load) == ("loaded", "/m")
    assert model_from_spec({"source": "hf"}, "resources/models/x", build, load) == ("loaded", "resources/models/x")
    assert model_from_spec({"source": "train"}, "results/w", build, load) == ("loaded", "results/w")
    with pytest.raises(ValueError, match="source 'train' needs --weights"):
        model_from_spec({"source": "train"}, None, build, load)
    with pytest.raises(ValueError, match="unknown model source 'zoo'"):
        model_from_spec({"source": "zoo"}, None, build, load)
