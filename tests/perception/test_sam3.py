"""The SAM3 tracker on a tiny random checkpoint of the real class, saved with its processor and
loaded as a released one is (in .venv-perception/: the processor needs torchvision).

As for SAM2 (test_sam2.py, which also covers the thresholding and input checks the two share),
random weights cannot track, but two things hold whatever the weights: a mask prompt is the output
of its frame, and what reaches the model is fixed by the checkpoint's processor (the frame resized
to its square and normalised with the mean and std it was saved with: SAM3's 0.5 here).
"""

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, models
from transformers import (
    PreTrainedTokenizerFast,
    Sam2VideoVideoProcessor,
    Sam3ImageProcessor,
    Sam3TrackerVideoConfig,
    Sam3TrackerVideoModel,
    Sam3TrackerVideoProcessor,
    Sam3VideoConfig,
    Sam3VideoProcessor,
)
from worldmemory.perception import registry
from worldmemory.perception.sam3 import Sam3Tracker

pytestmark = pytest.mark.torchvision

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


def tiny_processor(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)) -> Sam3TrackerVideoProcessor:
    """SAM3's tracker processor resizing to the model's SIZE (1008 in facebook/sam3), its video
    processor (transformers has no SAM3 one: SAM2's class) saved with ``mean`` and ``std``."""
    square = {"height": SIZE, "width": SIZE}
    return Sam3TrackerVideoProcessor(
        image_processor=Sam3ImageProcessor(size=square, mask_size={"height": 16, "width": 16}),
        video_processor=Sam2VideoVideoProcessor(size=square, image_mean=list(mean), image_std=list(std)))


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Sam3TrackerVideoModel(tiny_config())


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, model):
    path = tmp_path_factory.mktemp("sam3")
    model.save_pretrained(path)
    tiny_processor().save_pretrained(path)
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


def encoded(tracker, value=200):
    """What the vision encoder gets of a uniform 3-frame video of ``value`` tracked from frame 1."""
    seen, uniform = [], np.full((3, H, W, 3), value, dtype=np.uint8)
    with tracker.model.vision_encoder.register_forward_pre_hook(lambda _, args: seen.append(args[0].clone())):
        tracker.track(uniform, rect(slice(12, 36), slice(20, 60)), start=1)  # frames 1 and 2 are encoded
    return seen


def test_frames_reach_the_model_as_its_square_with_sam3_normalisation(tracker):
    """Each frame is resized to the processor's square and normalised with the mean = std = 0.5 it
    was saved with (not SAM2's ImageNet values): a uniform frame of value v reaches the vision
    encoder as (v/255 - 0.5) / 0.5."""
    seen = encoded(tracker)
    assert len(seen) == 2 and {tuple(pixels.shape) for pixels in seen} == {(1, 3, SIZE, SIZE)}
    torch.testing.assert_close(seen[0][0, :, 10, 10], torch.full((3,), (200 / 255 - 0.5) / 0.5))


def test_the_saved_processor_sets_the_normalisation(tmp_path, model):
    """The mean and std are the checkpoint's saved processor's, whatever they are, and so is every
    other setting of it: one saved with do_normalize false hands the model v / 255."""
    model.save_pretrained(tmp_path)
    tiny_processor(mean=(0.25, 0.5, 0.75), std=(0.5, 0.25, 0.125)).save_pretrained(tmp_path)
    pixel = encoded(Sam3Tracker(str(tmp_path)))[0][0, :, 10, 10]
    expected = (200 / 255 - torch.tensor([0.25, 0.5, 0.75])) / torch.tensor([0.5, 0.25, 0.125])
    torch.testing.assert_close(pixel, expected)
    processor = tiny_processor()
    processor.video_processor.do_normalize = False
    processor.save_pretrained(tmp_path)
    torch.testing.assert_close(encoded(Sam3Tracker(str(tmp_path)))[0][0, :, 10, 10], torch.full((3,), 200 / 255))


def test_it_loads_the_tracker_out_of_a_full_sam3_video_checkpoint(tmp_path, model):
    """facebook/sam3 is a ``Sam3VideoModel`` checkpoint (detector and tracker): the tracker is built
    from its tracker_config and takes the tracker_model.* weights, the detector's left out; its
    processor, a ``Sam3VideoProcessor`` (a text tokenizer too), is read as the tracker's."""
    Sam3VideoConfig(tracker_config=tiny_config().to_dict()).save_pretrained(tmp_path)
    text = Tokenizer(models.WordLevel({"<|endoftext|>": 0, "cat": 1}, unk_token="<|endoftext|>"))
    tracker_processor = tiny_processor()
    Sam3VideoProcessor(image_processor=tracker_processor.image_processor,
                       video_processor=tracker_processor.video_processor,
                       tokenizer=PreTrainedTokenizerFast(tokenizer_object=text, pad_token="<|endoftext|>"),
                       ).save_pretrained(tmp_path)
    weights = {f"tracker_model.{k}": v.contiguous() for k, v in model.state_dict().items()}
    save_file({**weights, "detector_model.anything": torch.zeros(1)}, tmp_path / "model.safetensors",
              metadata={"format": "pt"})
    tracker = Sam3Tracker(str(tmp_path))
    loaded = tracker.model
    assert tuple(tracker.processor.video_processor.image_mean) == (0.5, 0.5, 0.5)
    assert loaded.config.model_type == "sam3_tracker_video" and loaded.config.image_size == SIZE
    expected = model.state_dict()
    assert all(torch.equal(value, expected[key]) for key, value in loaded.state_dict().items())


def test_the_registry_builds_it_and_a_missing_model_names_the_prefetch_step(tmp_path, checkpoint):
    assert "sam3" in registry.names("tracking")
    backend = registry.create("tracking", "sam3", model=str(checkpoint), min_pixels=5)
    assert isinstance(backend, Sam3Tracker) and backend.name == "sam3" and backend.min_pixels == 5
    with pytest.raises(FileNotFoundError, match="SAM3 tracker .*prefetch_perception"):
        Sam3Tracker(str(tmp_path / "absent"))
