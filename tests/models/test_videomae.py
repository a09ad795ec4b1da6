"""VideoMAE's pixel readout (Section 3.4, Appendix E) on a tiny random config of the real transformers class."""

import numpy as np
import pytest
import torch
import transformers.models.videomae.modeling_videomae as modeling
from transformers import VideoMAEModel
from worldmemory.models.videomae import (
    VideoMAEBackend,
    build_videomae,
    describe,
    from_cubes,
    load_videomae,
    to_cubes,
    videomae_backend_from_spec,
)
from worldmemory.models.vjepa2 import copy_last_view, weights_digest
from worldmemory.permanence.masks import TokenGrid

TINY = dict(image_size=32, patch_size=8, num_frames=4, tubelet_size=2, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=64, decoder_hidden_size=32, decoder_num_hidden_layers=1,
            decoder_num_attention_heads=4, decoder_intermediate_size=64)
GRID = TokenGrid(crop_size=32, patch_size=8, tubelet_size=2, n_frames=4)
# Hidden: rows 1-2, cols 1-2 of slot 1 (a block from the "event" on); the target is part of it.
HIDDEN = GRID.tokens([1], rows=[1, 1, 2, 2], cols=[1, 2, 1, 2])
VISIBLE = np.setdiff1d(np.arange(GRID.n_tokens), HIDDEN)
TARGET = HIDDEN[[3, 0, 2]]  # a subset, out of order: the gather must follow it


@pytest.fixture(scope="module")
def backend():
    return VideoMAEBackend(build_videomae(TINY, seed=0))


def clip(seed=0, batch=2):
    x = np.random.default_rng(seed).integers(0, 256, (batch, 4, 32, 32, 3), dtype=np.uint8)
    x[:, 0:2, 0:8, 8:16] = 100 + (np.arange(8) % 2)[:, None, None]  # a near-flat patch: the eps matters there
    return x


def hidden_pixels_changed(x):
    y = x.copy()
    y[:, 2:4, 8:24, 8:24] = 255 - y[:, 2:4, 8:24, 8:24]  # frames of slot 1, rows/cols 1-2 of the block
    return y


def run(backend, x, visible=VISIBLE, target=TARGET):
    with torch.inference_mode():
        ctx = backend.encode(backend.preprocess(x), visible)
        return ctx, backend.predict(ctx, visible, target)


def full_mask(batch=2):
    mask = torch.ones(batch, GRID.n_tokens, dtype=torch.bool)
    mask[:, torch.as_tensor(VISIBLE)] = False
    return mask


def test_references_are_the_hand_computed_normalised_patch_targets(backend):
    x = clip()
    with torch.inference_mode():
        refs = backend.encode(backend.preprocess(x), None).numpy()
    frames = x.astype(np.float64) / 255  # (B, T, H, W, C)
    for b in range(2):
        for token in range(GRID.n_tokens):
            slot, cell = divmod(token, 16)
            row, col = divmod(cell, 4)
            cube = frames[b, 2 * slot : 2 * slot + 2, 8 * row : 8 * row + 8, 8 * col : 8 * col + 8]  # (t, y, x, c)
            values = cube.reshape(-1, 3)
            expected = (values - values.mean(0)) / (values.std(0, ddof=1) + 1e-6)
            np.testing.assert_allclose(refs[b, token], expected.reshape(-1), atol=2e-4)


def test_references_are_transformers_labels_bit_for_bit(backend, monkeypatch):
    """The loss's labels are the targets of the masked tokens: the references equal them exactly."""
    seen = {}

    class Recorder(torch.nn.MSELoss):
        def forward(self, logits, labels):
            seen["labels"] = labels
            return super().forward(logits, labels)

    monkeypatch.setattr(modeling, "MSELoss", Recorder)
    x = backend.preprocess(clip())
    with torch.inference_mode():
        backend.model(pixel_values=x, bool_masked_pos=full_mask())
        refs = backend.encode(x, None)
    assert torch.equal(refs[:, torch.as_tensor(HIDDEN)], seen["labels"])


def test_predict_is_the_library_decoder_output_at_target(backend):
    x = clip()
    _, pred = run(backend, x)
    with torch.inference_mode():
        logits = backend.model(pixel_values=backend.preprocess(x), bool_masked_pos=full_mask()).logits
    assert pred.shape == (2, len(TARGET), 2 * 8 * 8 * 3)
    assert torch.equal(pred, logits[:, torch.as_tensor(np.searchsorted(HIDDEN, TARGET))])


def test_changing_hidden_pixels_leaves_context_and_prediction_bit_identical(backend):
    x = clip()
    ctx_a, pred_a = run(backend, x)
    ctx_b, pred_b = run(backend, hidden_pixels_changed(x))
    assert torch.equal(ctx_a, ctx_b)  # the Prober keys the context on the visible pixels (reads_hidden False)
    assert torch.equal(pred_a, pred_b)


def test_changing_a_visible_pixel_changes_prediction(backend):
    x = clip()
    y = x.copy()
    y[:, 0, 0, 0] = 255 - y[:, 0, 0, 0]  # slot 0, patch (0, 0): visible
    assert not torch.equal(run(backend, x)[1], run(backend, y)[1])


def test_library_forward_drops_masked_tokens_before_the_encoder(backend):
    """What would leak if the context kept the hidden pixels: nothing reaches the logits (the encoder
    drops masked tokens); they reach only the loss's labels."""
    a, b = (backend.preprocess(c) for c in (clip(), hidden_pixels_changed(clip())))
    with torch.inference_mode():
        out_a = backend.model(pixel_values=a, bool_masked_pos=full_mask())
        out_b = backend.model(pixel_values=b, bool_masked_pos=full_mask())
    assert torch.equal(out_a.logits, out_b.logits)
    assert out_a.loss != out_b.loss


def test_context_starts_with_the_visible_references_for_copy_last_view(backend):
    x = backend.preprocess(clip())
    with torch.inference_mode():
        refs, ctx = backend.encode(x, None), backend.encode(x, VISIBLE)
    assert torch.equal(ctx[:, : len(VISIBLE)], refs[:, torch.as_tensor(VISIBLE)])
    copied = copy_last_view(ctx, VISIBLE, HIDDEN, 16)
    assert torch.equal(copied, refs[:, torch.as_tensor(HIDDEN - 16)])  # the same patches one slot earlier


def test_cubes_round_trip():
    x = torch.randn(2, 4, 3, 32, 32)
    assert torch.equal(from_cubes(to_cubes(x, 2, 8).flatten(2), 2, 8, 4), x)


def test_a_visible_target_is_refused(backend):
    with pytest.raises(ValueError, match=r"target tokens \[0\] are visible"):
        run(backend, clip(), target=np.array([0, HIDDEN[0]]))


def test_a_clip_of_another_length_is_refused(backend):
    with pytest.raises(ValueError, match="takes clips of 4 frames"):
        backend.preprocess(np.zeros((1, 8, 32, 32, 3), np.uint8))


def test_preprocess_squash_resizes_by_area(backend):
    x = np.random.default_rng(1).integers(0, 256, (1, 4, 64, 64, 3), dtype=np.uint8)
    small = x.astype(np.float32).reshape(1, 4, 32, 2, 32, 2, 3).mean(axis=(3, 5))
    expected = (torch.as_tensor(small).permute(0, 1, 4, 2, 3) / 255 - backend.mean) / backend.std
    torch.testing.assert_close(backend.preprocess(x), expected)


def test_a_model_without_norm_pix_loss_is_refused():
    with pytest.raises(ValueError, match="norm_pix_loss=False"):
        VideoMAEBackend(build_videomae({**TINY, "norm_pix_loss": False}))


def test_specs_load_saved_weights_and_refuse_an_encoder_only_checkpoint(tmp_path, backend):
    backend.model.save_pretrained(tmp_path / "m")
    digest = weights_digest(backend.model)
    for spec, weights in (({"source": "local", "path": str(tmp_path / "m")}, None),
                          ({"source": "train"}, str(tmp_path / "m")),
                          ({"source": "random", "config": TINY}, None)):
        assert weights_digest(videomae_backend_from_spec(spec, weights).model) == digest
    assert describe(backend.model, {"source": "random"})["weights_sha256"] == digest
    with pytest.raises(ValueError, match="needs --weights"):
        videomae_backend_from_spec({"source": "hf"})
    VideoMAEModel(backend.model.config).save_pretrained(tmp_path / "encoder")
    with pytest.raises(ValueError, match="pretraining checkpoint with its decoder"):
        load_videomae(str(tmp_path / "encoder"))
