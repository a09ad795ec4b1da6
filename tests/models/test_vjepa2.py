"""The leak-free V-JEPA 2 path on a tiny random config of the real transformers class."""

import numpy as np
import pytest
import torch
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model, copy_last_view, load_model, weights_digest
from worldmemory.permanence.masks import TokenGrid

TINY = dict(crop_size=32, patch_size=8, frames_per_clip=8, tubelet_size=2, hidden_size=48,
            num_attention_heads=4, num_hidden_layers=2, pred_hidden_size=32,
            pred_num_attention_heads=4, pred_num_hidden_layers=2, num_pooler_layers=1)
GRID = TokenGrid(crop_size=32, patch_size=8, n_frames=8)


@pytest.fixture(scope="module")
def backend():
    return VJEPA2Backend(build_model(TINY, seed=0))


def clip(seed=0):
    return np.random.default_rng(seed).integers(0, 256, (1, 8, 32, 32, 3), dtype=np.uint8)


# Hidden: rows 2-3, cols 1-2 of slots 2 and 3 (a block from the "event" on).
HIDDEN = GRID.tokens([2, 3], rows=[2, 2, 3, 3], cols=[1, 2, 1, 2])
VISIBLE = np.setdiff1d(np.arange(GRID.n_tokens), HIDDEN)


def hidden_pixels_changed(x):
    y = x.copy()
    y[:, 4:8, 16:32, 8:24] = 255 - y[:, 4:8, 16:32, 8:24]  # frames of slots 2-3, rows/cols of the block
    return y


def run(backend, x, visible=VISIBLE, target=HIDDEN):
    with torch.inference_mode():
        ctx = backend.encode(backend.preprocess(x), visible)
        return backend.predict(ctx, visible, target)


def test_changing_hidden_pixels_leaves_prediction_bit_identical(backend):
    x = clip()
    assert torch.equal(run(backend, x), run(backend, hidden_pixels_changed(x)))


def test_changing_a_visible_pixel_changes_prediction(backend):
    x = clip()
    y = x.copy()
    y[0, 0, 0, 0] = 255 - y[0, 0, 0, 0]  # slot 0, patch (0, 0): visible
    assert not torch.equal(run(backend, x), run(backend, y))


def test_transformers_forward_leaks_hidden_pixels(backend):
    """Why the leak-free path exists: the library's forward encodes every token first."""
    x = clip()
    vis, tgt = torch.as_tensor(VISIBLE)[None], torch.as_tensor(HIDDEN)[None]
    with torch.inference_mode():
        a = backend.model(backend.preprocess(x), context_mask=[vis], target_mask=[tgt]).predictor_output
        changed = backend.preprocess(hidden_pixels_changed(x))
        b = backend.model(changed, context_mask=[vis], target_mask=[tgt]).predictor_output
    assert not torch.equal(a.last_hidden_state, b.last_hidden_state)


def test_full_encoding_matches_transformers(backend):
    x = backend.preprocess(clip())
    with torch.inference_mode():
        ours = backend.encode(x)
        theirs = backend.model.get_vision_features(x)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)


def test_predictor_wiring_matches_transformers_on_the_same_context(backend):
    """Given the same context tokens, our predictor call equals the library's."""
    x = backend.preprocess(clip())
    vis, tgt = torch.as_tensor(VISIBLE)[None], torch.as_tensor(HIDDEN)[None]
    with torch.inference_mode():
        theirs = backend.model(x, context_mask=[vis], target_mask=[tgt]).predictor_output.last_hidden_state
        full = backend.encode(x)
        ours = backend.predict(full[:, VISIBLE], VISIBLE, HIDDEN)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)


def test_token_order_is_time_major(backend):
    """Token (slot, row, col) is computed from that tubelet and patch only (before attention)."""
    x = clip()
    y = x.copy()
    y[0, 2:4, 8:16, 24:32] = 0  # slot 1, row 1, col 3
    with torch.inference_mode():
        ea = backend.model.encoder.embeddings(backend.preprocess(x))
        eb = backend.model.encoder.embeddings(backend.preprocess(y))
    changed = torch.nonzero((ea != eb).any(-1)[0]).ravel().tolist()
    assert changed == [int(GRID.index(1, 1, 3))]


def test_preprocess_resizes_by_area_and_normalises(backend):
    x = np.full((1, 8, 64, 64, 3), 128, dtype=np.uint8)
    out = backend.preprocess(x)
    assert out.shape == (1, 8, 3, 32, 32)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    torch.testing.assert_close(out[0, 0], ((128 / 255 - mean) / std).expand(3, 32, 32))


def test_copy_last_view_takes_the_last_visible_slot():
    tps = 4
    visible = np.array([0, 1, 2, 3, 4, 5, 6, 7])  # slots 0 and 1 fully visible
    target = np.array([8, 9, 13])  # slot 2 cells 0, 1 and slot 3 cell 1
    ctx = torch.arange(8, dtype=torch.float32).view(1, 8, 1)
    out = copy_last_view(ctx, visible, target, tps)
    assert out.ravel().tolist() == [4.0, 5.0, 5.0]
    with pytest.raises(ValueError):
        copy_last_view(ctx, np.array([4, 5, 6, 7]), np.array([0]), tps)


def test_saved_model_loads_back_identically(backend, tmp_path):
    backend.model.save_pretrained(tmp_path / "m")
    loaded = load_model(str(tmp_path / "m"))
    assert weights_digest(loaded) == weights_digest(backend.model)
    with pytest.raises(FileNotFoundError):
        load_model(str(tmp_path))
