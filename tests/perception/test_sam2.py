"""The SAM2 tracker on a tiny random checkpoint of the real class, saved with its processor and
loaded as a released one is (in .venv-perception/: the processor needs torchvision).

Random weights cannot track, but two things hold whatever the weights: SAM2 takes a mask prompt as
the truth of its frame (its output there is the prompt), and what reaches the model is fixed by
the checkpoint's processor (the frame resized to its square and ImageNet-normalised).
"""

import numpy as np
import pytest
import torch
from transformers import (
    Sam2ImageProcessor,
    Sam2VideoConfig,
    Sam2VideoModel,
    Sam2VideoProcessor,
    Sam2VideoVideoProcessor,
)
from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD
from worldmemory.perception import registry
from worldmemory.perception.sam2 import Sam2Tracker

pytestmark = pytest.mark.torchvision

SIZE = 64  # the model's square input; the mask decoder's logits are SIZE / 4 a side
H, W = 48, 80  # the videos' size: not square, not SIZE


def tiny_config() -> Sam2VideoConfig:
    """SAM2's architecture at its smallest: one Hiera block per stage, one memory-attention layer.
    What cannot shrink: the memory encoder's 64 output channels (the memory attention's keys are
    64 wide) and a hidden size a multiple of them above 64 (object pointers are split into 64-wide
    tokens)."""
    dims = [8, 16, 32, 64]
    backbone = dict(model_type="sam2_hiera_det_model", hidden_size=dims[0], image_size=[SIZE, SIZE],
                    blocks_per_stage=[1, 1, 1, 1], embed_dim_per_stage=dims, num_attention_heads_per_stage=[1] * 4,
                    window_size_per_stage=[4, 4, 4, 2], global_attention_blocks=[0],
                    window_positional_embedding_background_size=[4, 4])
    vision = dict(model_type="sam2_vision_model", backbone_config=backbone, backbone_channel_list=dims[::-1],
                  backbone_feature_sizes=[[SIZE // 4] * 2, [SIZE // 8] * 2, [SIZE // 16] * 2], fpn_hidden_size=128)
    return Sam2VideoConfig(
        image_size=SIZE, vision_config=vision,
        prompt_encoder_config=dict(hidden_size=128, image_size=SIZE, patch_size=16, mask_input_channels=4),
        mask_decoder_config=dict(hidden_size=128, mlp_dim=32, num_hidden_layers=1, num_attention_heads=2,
                                 iou_head_hidden_dim=16),
        memory_attention_hidden_size=128, memory_attention_num_layers=1, memory_attention_feed_forward_hidden_size=32,
        memory_attention_rope_feat_sizes=[SIZE // 16] * 2, memory_encoder_hidden_size=128,
        memory_encoder_output_channels=64, mask_downsampler_embed_dim=128, memory_fuser_embed_dim=128,
        memory_fuser_intermediate_dim=32, memory_fuser_num_layers=1)


def tiny_processor() -> Sam2VideoProcessor:
    """SAM2's processor at its class defaults (ImageNet's mean and std, bilinear resize) but for the
    square it resizes to, the model's SIZE (1024 in the released checkpoints)."""
    square = {"height": SIZE, "width": SIZE}
    return Sam2VideoProcessor(image_processor=Sam2ImageProcessor(size=square, mask_size={"height": SIZE // 4,
                                                                                       "width": SIZE // 4}),
                              video_processor=Sam2VideoVideoProcessor(size=square))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("sam2")
    torch.manual_seed(0)
    Sam2VideoModel(tiny_config()).save_pretrained(path)
    tiny_processor().save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def tracker(checkpoint):
    return Sam2Tracker(checkpoint)


def frames(n=5, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, H, W, 3), dtype=np.uint8)


def box(y0, y1, x0, x1):
    mask = np.zeros((H, W), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def iou(a, b):
    return np.logical_and(a, b).sum() / np.logical_or(a, b).sum()


def test_one_mask_per_frame_at_the_videos_size(tracker):
    out = tracker.track(frames(), box(12, 36, 20, 60))
    assert out.shape == (5, H, W) and out.dtype == bool


def test_the_prompt_is_the_mask_of_its_frame_and_earlier_frames_are_empty(tracker):
    """The prompt reaches the model on frame ``start`` (resized to the model's square and back, it is
    that frame's mask); frames before ``start`` are empty; the camera path is ignored."""
    x = frames()
    left, right = box(12, 36, 10, 35), box(12, 36, 45, 70)
    out = tracker.track(x, left, start=2)
    assert not out[:2].any()
    assert iou(out[2], left) > 0.9 and iou(out[2], right) == 0
    assert iou(tracker.track(x, right, start=2)[2], right) > 0.9
    camera = (np.tile(np.eye(4), (5, 1, 1)), np.eye(3))
    np.testing.assert_array_equal(tracker.track(x, left, start=2, camera=camera), out)


def test_frames_reach_the_model_as_its_normalised_square(tracker):
    """Each frame is resized to the processor's square and ImageNet-normalised by the checkpoint's
    processor: a uniform frame of value v reaches the model as (v / 255 - mean) / std."""
    seen = []
    hook = tracker.model.vision_encoder.register_forward_pre_hook(lambda module, args: seen.append(args[0].clone()))
    try:
        tracker.track(np.full((3, H, W, 3), 200, dtype=np.uint8), box(12, 36, 20, 60), start=1)
    finally:
        hook.remove()
    assert len(seen) >= 2 and all(p.shape == (1, 3, SIZE, SIZE) for p in seen)
    expected = (200 / 255 - torch.tensor(IMAGENET_DEFAULT_MEAN)) / torch.tensor(IMAGENET_DEFAULT_STD)
    torch.testing.assert_close(seen[0][0, :, 10, 10], expected.float())


def test_every_frame_from_start_to_the_end_is_thresholded_in_place(checkpoint):
    """Below every logit (out of view is -1024) each frame from ``start`` to the end is whole;
    the prompt's frame has logits +-10 (SAM2's mask-as-output), above them it is empty; a mask
    smaller than min_pixels is out of view."""
    x, prompt = frames(4), box(12, 36, 20, 60)
    out = Sam2Tracker(checkpoint, threshold=-2000).track(x, prompt, start=1)
    assert not out[0].any() and out[1:].all()
    assert not Sam2Tracker(checkpoint, threshold=10.5).track(x, prompt)[0].any()
    assert not Sam2Tracker(checkpoint, min_pixels=prompt.sum() * 2).track(x, prompt)[0].any()
    assert not Sam2Tracker(checkpoint).track(x, np.zeros((H, W), dtype=bool)).any()


def test_a_missing_model_or_processor_or_bad_input_fails_clearly(tmp_path, tracker):
    with pytest.raises(FileNotFoundError, match="prefetch_perception"):
        Sam2Tracker(str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="config.json"):
        Sam2Tracker(str(tmp_path))
    tracker.model.save_pretrained(tmp_path)  # a model without its processor
    with pytest.raises(FileNotFoundError, match=r"not its processor \(expected processor_config.json or "
                                                r"preprocessor_config.json\).*prefetch_perception"):
        Sam2Tracker(str(tmp_path))
    with pytest.raises(ValueError, match="uint8"):
        tracker.track(frames().astype(np.float32), box(12, 36, 20, 60))
    with pytest.raises(ValueError, match="uint8"):
        tracker.track(frames()[..., 0], box(12, 36, 20, 60))
    with pytest.raises(ValueError, match="does not match"):
        tracker.track(frames(), np.ones((H, H), dtype=bool))
    with pytest.raises(ValueError, match="start"):
        tracker.track(frames(), box(12, 36, 20, 60), start=5)


def test_the_registry_builds_it(checkpoint):
    assert "sam2" in registry.names("tracking")
    backend = registry.create("tracking", "sam2", model=checkpoint, min_pixels=5)
    assert isinstance(backend, Sam2Tracker) and backend.name == "sam2" and backend.min_pixels == 5
