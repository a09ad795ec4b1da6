"""The Depth Anything backend on tiny random checkpoints of the real class, saved and loaded as a
released one is (its image processor included)."""

import numpy as np
import pytest
import torch
from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config, DPTImageProcessorPil
from worldmemory.perception.depth import DepthAnythingDepth


def save_checkpoint(path, kind: str):
    backbone = Dinov2Config(hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64,
                            image_size=28, patch_size=14, out_features=["stage1", "stage2", "stage3", "stage4"],
                            reshape_hidden_states=False)
    config = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=32, neck_hidden_sizes=[8, 16, 32, 32],
                                 fusion_hidden_size=16, head_hidden_size=8, depth_estimation_type=kind, max_depth=20)
    torch.manual_seed(0)
    DepthAnythingForDepthEstimation(config).save_pretrained(path)
    # Depth Anything V2's processor settings at a small size: aspect kept, sides multiples of the patch
    DPTImageProcessorPil(size={"height": 28, "width": 28}, keep_aspect_ratio=True, ensure_multiple_of=14,
                         do_pad=False).save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module", params=["relative", "metric"])
def checkpoint(request, tmp_path_factory):
    return request.param, save_checkpoint(tmp_path_factory.mktemp(request.param), request.param)


def frames(n=5, h=48, w=64, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def test_one_map_per_frame_at_the_frames_size(checkpoint):
    kind, path = checkpoint
    backend = DepthAnythingDepth(path)
    out = backend.estimate(frames())
    assert out.shape == (5, 48, 64) and out.dtype == np.float32 and np.isfinite(out).all()
    assert backend.metric == (kind == "metric")


def test_batches_do_not_change_the_maps(checkpoint):
    _, path = checkpoint
    x = frames()
    np.testing.assert_allclose(DepthAnythingDepth(path, batch_size=1).estimate(x),
                               DepthAnythingDepth(path, batch_size=3).estimate(x), rtol=1e-4, atol=1e-5)


def test_the_frame_is_read_through_the_checkpoints_processor(checkpoint):
    """The model sees the frame resized to sides that are multiples of the patch (28 x 42 for 48 x 64,
    aspect kept) and normalised; each output map depends on its own frame only."""
    _, path = checkpoint
    backend = DepthAnythingDepth(path)
    seen = []
    backend.model.register_forward_pre_hook(lambda module, args, kwargs: seen.append(kwargs["pixel_values"].shape),
                                            with_kwargs=True)
    x = frames(2)
    a = backend.estimate(x)
    y = x.copy()
    y[1] = 255 - y[1]
    b = backend.estimate(y)
    assert seen[0] == (2, 3, 28, 42)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[1], b[1])


def test_a_missing_model_or_bad_frames_fail_clearly(tmp_path, checkpoint):
    with pytest.raises(FileNotFoundError, match="prefetch_perception"):
        DepthAnythingDepth(str(tmp_path / "absent"))
    with pytest.raises(ValueError, match="uint8"):
        DepthAnythingDepth(checkpoint[1]).estimate(frames().astype(np.float32))
