"""The LAION aesthetic backend on a tiny random CLIPModel saved and loaded as a real checkpoint is."""

import numpy as np
import pytest
import torch
from torch import nn
from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel
from worldmemory.perception.aesthetic import LaionAesthetic
from worldmemory.worldmembench.metrics.video_quality import NORMALISATION

EMBED = 16
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
              image_size=32, patch_size=8)
TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            vocab_size=100, max_position_embeddings=16)


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("clip")
    CLIPModel(CLIPConfig(text_config=TEXT, vision_config=VISION, projection_dim=EMBED)).save_pretrained(path)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def clip(clip_dir):
    model = CLIPModel.from_pretrained(clip_dir, dtype=torch.float32).eval()
    return model, CLIPImageProcessor.from_pretrained(clip_dir)


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(EMBED, 1024), nn.Dropout(0.2), nn.Linear(1024, 128), nn.Dropout(0.2),
                         nn.Linear(128, 64), nn.Dropout(0.1), nn.Linear(64, 16), nn.Linear(16, 1)).eval()


def save_head(path, state):
    torch.save(state, path)
    return str(path)


@pytest.fixture(scope="module")
def mlp_head(tmp_path_factory):
    head = mlp()
    path = save_head(tmp_path_factory.mktemp("head") / "mlp.pth",
                     {f"layers.{k}": v for k, v in head.state_dict().items()})
    return head, path


@pytest.fixture(scope="module")
def backend(clip_dir, mlp_head):
    return LaionAesthetic(model=str(clip_dir), head=mlp_head[1])


def frames(n=5, h=40, w=60, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def manual_embedding(clip, x):
    model, processor = clip
    inputs = processor(images=list(x), return_tensors="pt")
    assert tuple(inputs["pixel_values"].shape) == (len(x), 3, 32, 32)
    with torch.no_grad():
        out = model.get_image_features(**inputs)
    out = out if isinstance(out, torch.Tensor) else out.pooler_output
    return (out / out.norm(dim=-1, keepdim=True)).numpy()


def test_embedding_is_the_processors_pixels_through_clip_then_l2_normalised(backend, clip):
    x = frames()
    got = backend.embed(x)
    assert got.shape == (5, EMBED)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(got, manual_embedding(clip, x), atol=1e-5)


def test_linear_head_scores_component_k_of_the_normalised_embedding_plus_bias(clip_dir, clip, tmp_path):
    k, b = 3, 5.0
    weight = torch.zeros(1, EMBED)
    weight[0, k] = 1.0
    head = save_head(tmp_path / "linear.pth", {"weight": weight, "bias": torch.tensor([b])})
    x = frames(seed=1)
    raw = LaionAesthetic(model=str(clip_dir), head=head).score(x)
    assert raw.shape == (5,) and raw.dtype == np.float64
    np.testing.assert_allclose(raw, manual_embedding(clip, x)[:, k] + b, atol=1e-5)


def test_mlp_head_matches_a_manual_sequential_forward(backend, clip, mlp_head):
    x = frames(seed=2)
    with torch.no_grad():
        expected = mlp_head[0](torch.as_tensor(manual_embedding(clip, x))).squeeze(-1).numpy()
    np.testing.assert_allclose(backend.score(x), expected, atol=1e-5)


def test_normalise_is_raw_over_ten_clipped_as_video_quality_says():
    assert (LaionAesthetic.low, LaionAesthetic.high) == (NORMALISATION["aesthetic_quality"]["low"],
                                                         NORMALISATION["aesthetic_quality"]["high"])
    assert [LaionAesthetic.normalise(r) for r in (0.0, 5.0, 12.0, -1.0)] == [0.0, 0.5, 1.0, 0.0]


def test_batch_size_does_not_change_scores(backend, clip_dir, mlp_head):
    x = frames(n=7, seed=3)
    one = LaionAesthetic(model=str(clip_dir), head=mlp_head[1], batch_size=1)
    assert (one.batch_size, backend.batch_size) == (1, 32)
    many = backend.score(x)
    np.testing.assert_allclose(one.score(x), many, atol=1e-6)
    np.testing.assert_allclose(one.score(x[4:5]), many[4:5], atol=1e-6)
    assert backend.score(x[:0]).shape == (0,) and backend.embed(x[:0]).shape == (0, EMBED)


@pytest.mark.parametrize("bad", [np.zeros((2, 8, 8, 3), np.float32), np.zeros((8, 8, 3), np.uint8),
                                 np.zeros((2, 8, 8, 4), np.uint8)])
def test_rejects_frames_that_are_not_uint8_rgb(backend, bad):
    with pytest.raises(ValueError, match="uint8 RGB"):
        backend.score(bad)


def test_head_of_another_layout_fails_naming_its_keys(clip_dir, tmp_path):
    head = save_head(tmp_path / "other.pth", {"fc.weight": torch.zeros(1, EMBED), "fc.bias": torch.zeros(1)})
    with pytest.raises(ValueError, match=r"other\.pth.*fc\.bias, fc\.weight.*sa_0_4_vit_l_14_linear.*layers\.7"):
        LaionAesthetic(model=str(clip_dir), head=head)
    with pytest.raises(FileNotFoundError, match="missing.pth"):
        LaionAesthetic(model=str(clip_dir), head=str(tmp_path / "missing.pth"))


def test_head_for_another_embedding_size_fails(clip_dir, tmp_path):
    head = save_head(tmp_path / "l768.pth", {"weight": torch.zeros(1, 768), "bias": torch.zeros(1)})
    with pytest.raises(ValueError, match="768-dim.*16-dim"):
        LaionAesthetic(model=str(clip_dir), head=head)


@pytest.mark.parametrize("source,match", [
    ("nobody/no-such-clip", r"'nobody/no-such-clip' at revision 'v9'.*prefetch step"),
    ("/nonexistent/models/clip", r"/nonexistent/models/clip .*does not exist.*prefetch step")])
def test_missing_clip_model_fails_with_the_prefetch_hint(monkeypatch, mlp_head, source, match):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)  # read at import time
    with pytest.raises(FileNotFoundError, match=match):
        LaionAesthetic(model=source, revision="v9", head=mlp_head[1])
