"""The SAM3 tracker on a tiny random checkpoint of the real class, saved and loaded as a released one is.

As for SAM2 (test_sam2.py, which also covers the thresholding and input checks the two share),
random weights cannot track, but two things hold whatever the weights: a mask prompt is the output
of its frame, and what reaches the model is fixed by the preprocessing (the frame resized to the
model's square and normalised with SAM3's mean = std = 0.5, or with what the checkpoint's saved
processor says).
"""

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from transformers import Sam3TrackerVideoConfig, Sam3TrackerVideoModel, Sam3VideoConfig
from worldmemory.perception import registry
from worldmemory.perception.sam2 import video_normalisation
from worldmemory.perception.sam3 import Sam3Tracker

SIZE = 56  # the model's square input: 4 x 4 patches of 14 pixels; mask logits are 16 a side
H, W = 48, 80  # the videos' size: not square, not SIZE
WIDTH = 128  # SAM's one channel width (FPN, prompt encoder, mask decoder, memory); the memory keys stay 64


def tiny_config() -> Sam3TrackerVideoConfig:
    """SAM3's tracker at its smallest: a two-layer ViT (one windowed, one global block) whose
    position embeddings are learned for SIZE itself, one memory-attention layer, one fuser layer."""
    vit = dict(model_type="sam3_vit_model", hidden_size=32, intermediate_size=32, num_hidden_layers=2,
               num_attention_heads=2, window_size=2, global_attn_indexes=[1], pretrain_image_size=SIZE)
    return Sam3TrackerVideoConfig(
        image_size=SIZE,  # sets the ViT's, the prompt encoder's, the feature and the RoPE sizes
        vision_config=dict(model_type="sam3_vision_model", backbone_config=vit, fpn_hidden_size=WIDTH),
        prompt_encoder_config=dict(hidden_size=WIDTH, mask_input_channels=4),
        mask_decoder_config=dict(hidden_size=WIDTH, mlp_dim=32, num_hidden_layers=1, num_attention_heads=2,
                                 iou_head_hidden_dim=16),
        memory_attention_hidden_size=WIDTH, memory_encoder_hidden_size=WIDTH, mask_downsampler_embed_dim=WIDTH,
        memory_fuser_embed_dim=WIDTH, memory_attention_num_layers=1, memory_fuser_num_layers=1,
        memory_attention_feed_forward_hidden_size=32, memory_fuser_intermediate_dim=32)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Sam3TrackerVideoModel(tiny_config())


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, model):
    path = tmp_path_factory.mktemp("sam3")
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tracker(checkpoint):
    return Sam3Tracker(str(checkpoint))


def video(n=5, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, H, W, 3), dtype=np.uint8)


def rect(rows, cols):
    """An (H, W) mask, True on rows x cols (two slices)."""
    out = np.zeros((H, W), dtype=bool)
    out[rows, cols] = True
    return out


def overlap(a, b):
    return (a & b).sum() / (a | b).sum()


def test_the_prompt_is_its_frames_mask_at_the_videos_size_and_earlier_frames_are_empty(tracker):
    """One (H, W) bool mask per frame of a non-square video; the prompt reaches the model on frame
    ``start`` (resized to the model's square and back, it is that frame's mask), frames before it
    are empty, and which prompt was given decides the mask."""
    x = video()
    left, right = rect(slice(12, 36), slice(10, 35)), rect(slice(12, 36), slice(45, 70))
    out = tracker.track(x, left, start=2)
    assert out.shape == (5, H, W) and out.dtype == bool
    assert not out[:2].any()
    assert overlap(out[2], left) > 0.9 and overlap(out[2], right) == 0
    assert overlap(tracker.track(x, right, start=2)[2], right) > 0.9


def test_frames_reach_the_model_as_its_square_with_sam3_normalisation(tracker):
    """Each frame is resized to the config's image size and normalised with mean = std = 0.5 (not
    SAM2's ImageNet values): a uniform frame of value v reaches the vision encoder as (v/255 - 0.5) / 0.5."""
    seen, uniform = [], np.full((3, H, W, 3), 200, dtype=np.uint8)
    with tracker.model.vision_encoder.register_forward_pre_hook(lambda _, args: seen.append(args[0].clone())):
        tracker.track(uniform, rect(slice(12, 36), slice(20, 60)), start=1)  # frames 1 and 2 are encoded
    assert len(seen) == 2 and {tuple(pixels.shape) for pixels in seen} == {(1, 3, SIZE, SIZE)}
    torch.testing.assert_close(seen[0][0, :, 10, 10], torch.full((3,), (200 / 255 - 0.5) / 0.5))


def test_a_saved_processor_sets_the_normalisation(tmp_path, checkpoint):
    """Where the checkpoint has a saved processor, its video processor's mean and std are used, read
    as transformers reads them: processor_config.json's nested entry first, then the legacy files."""
    nested = {"processor_class": "Sam3TrackerVideoProcessor", "image_processor": {"image_mean": [0.9] * 3},
              "video_processor": {"video_processor_type": "Sam2VideoVideoProcessor",
                                  "image_mean": [0.25, 0.5, 0.75], "image_std": [0.5, 0.25, 0.125]}}
    shutil.copytree(checkpoint, tmp_path / "model")
    (tmp_path / "model" / "processor_config.json").write_text(json.dumps(nested))
    (tmp_path / "model" / "video_preprocessor_config.json").write_text(json.dumps({"image_mean": [0.1] * 3}))
    tracker = Sam3Tracker(str(tmp_path / "model"))
    assert tracker.mean.flatten().tolist() == [0.25, 0.5, 0.75] and tracker.std.flatten().tolist() == [0.5, 0.25, 0.125]
    (tmp_path / "model" / "processor_config.json").write_text(json.dumps({"processor_class": "X"}))
    assert video_normalisation(tmp_path / "model", [0.5] * 3, [0.5] * 3) == ([0.1] * 3, [0.5] * 3)
    assert video_normalisation(tmp_path, [0.5] * 3, [0.5] * 3) == ([0.5] * 3, [0.5] * 3)


def test_it_loads_the_tracker_out_of_a_full_sam3_video_checkpoint(tmp_path, model):
    """facebook/sam3 is a ``Sam3VideoModel`` checkpoint (detector and tracker): the tracker is built
    from its tracker_config and takes the tracker_model.* weights; the detector's are left out."""
    Sam3VideoConfig(tracker_config=tiny_config().to_dict()).save_pretrained(tmp_path)
    weights = {f"tracker_model.{k}": v.contiguous() for k, v in model.state_dict().items()}
    save_file({**weights, "detector_model.anything": torch.zeros(1)}, tmp_path / "model.safetensors",
              metadata={"format": "pt"})
    loaded = Sam3Tracker(str(tmp_path)).model
    assert loaded.config.model_type == "sam3_tracker_video" and loaded.config.image_size == SIZE
    expected = model.state_dict()
    assert all(torch.equal(value, expected[key]) for key, value in loaded.state_dict().items())


def test_the_registry_builds_it_and_a_missing_model_names_the_prefetch_step(tmp_path, checkpoint):
    assert "sam3" in registry.names("tracking")
    backend = registry.create("tracking", "sam3", model=str(checkpoint), min_pixels=5)
    assert isinstance(backend, Sam3Tracker) and backend.name == "sam3" and backend.min_pixels == 5
    with pytest.raises(FileNotFoundError, match="SAM3 tracker .*prefetch_perception"):
        Sam3Tracker(str(tmp_path / "absent"))
