"""Pretraining the embedded model: V-JEPA tube masks, a loadable checkpoint, determinism."""

import json

import numpy as np
import pytest
import torch
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model, load_model, weights_digest
from worldmemory.permanence.mask_generators import sample_mask
from worldmemory.permanence.train import area_downsample, normalised_pool, train

MICRO = dict(crop_size=64, patch_size=16, frames_per_clip=8, tubelet_size=2, hidden_size=48,
             num_attention_heads=4, num_hidden_layers=1, pred_hidden_size=32,
             pred_num_attention_heads=4, pred_num_hidden_layers=1, num_pooler_layers=1)
SETTINGS = dict(seed=3, steps=3, batch_size=2, clips=3, lr=1e-3, warmup_steps=1, weight_decay=0.04,
                ema=[0.99, 0.999], mask_kinds=["short_tube", "long_tube"])


def slots_of(hidden, tokens_per_slot=64):
    return [set((hidden[(hidden // tokens_per_slot) == s] % tokens_per_slot).tolist()) for s in range(4)]


@pytest.mark.parametrize("kind", ["short_tube", "long_tube"])
def test_tube_masks_hide_the_same_cells_in_every_slot(kind):
    rng = np.random.default_rng(0)
    for _ in range(20):
        cells = slots_of(sample_mask(rng, kind, 8, 4))
        assert all(c == cells[0] for c in cells)
        assert 0 < len(cells[0]) < 64  # something hidden, something visible


@pytest.mark.parametrize("kind", ["temporal_block", "causal"])
def test_temporally_partial_masks_hide_from_a_slot_to_the_end(kind):
    rng = np.random.default_rng(0)
    firsts = set()
    for _ in range(30):
        cells = slots_of(sample_mask(rng, kind, 8, 4))
        first = next(s for s in range(4) if cells[s])
        assert first >= 1 and not any(cells[:first])  # the start of the clip stays visible
        assert all(c == cells[first] for c in cells[first:])
        assert (len(cells[first]) == 64) == (kind == "causal")
        firsts.add(first)
    assert firsts == {1, 2, 3}


def test_long_masks_hide_more_than_short_ones():
    rng = np.random.default_rng(1)
    frac = {k: np.mean([len(sample_mask(rng, k, 8, 1)) / 64 for _ in range(200)]) for k in ("short_tube", "long_tube")}
    assert frac["long_tube"] > frac["short_tube"] > 0.3


def test_training_writes_a_loadable_model_deterministically(tmp_path):
    logs = []
    a = train(MICRO, SETTINGS, tmp_path / "a", log=logs.append)
    train(MICRO, SETTINGS, tmp_path / "b", log=lambda *_: None)
    model_a, model_b = load_model(str(tmp_path / "a")), load_model(str(tmp_path / "b"))
    assert weights_digest(model_a) == weights_digest(model_b)
    assert (tmp_path / "a" / "train_log.csv").read_text().count("\n") == 1 + SETTINGS["steps"]
    record = json.loads((tmp_path / "a" / "training.json").read_text())
    assert record["settings"] == SETTINGS and record["threads"] == torch.get_num_threads()
    assert a["final_loss"] > 0 and any("step 3/3" in line for line in logs)


def test_normalised_pool_gives_the_bits_of_per_step_preprocessing():
    """Training gathers batches from the pool normalised once: the same bits as preprocessing the
    uint8 batch at its step, for a flipped batch too (the flip commutes with per-pixel maps)."""
    backend = VJEPA2Backend(build_model(MICRO))
    pool = np.random.default_rng(0).integers(0, 256, (5, 8, 64, 64, 3), dtype=np.uint8)
    normalised = normalised_pool(backend, pool, chunk=2)
    pick = np.array([4, 0, 4])
    assert torch.equal(normalised[torch.as_tensor(pick)], backend.preprocess(pool[pick]))
    flipped = np.ascontiguousarray(pool[pick][:, :, :, ::-1])
    assert torch.equal(normalised[torch.as_tensor(pick)].flip(-1), backend.preprocess(flipped))
    assert not torch.equal(normalised[torch.as_tensor(pick)], backend.preprocess(flipped))


def test_training_changes_the_weights(tmp_path):
    train(MICRO, SETTINGS, tmp_path / "m", log=lambda *_: None)
    assert weights_digest(load_model(str(tmp_path / "m"))) != weights_digest(build_model(MICRO, seed=SETTINGS["seed"]))


@pytest.mark.parametrize("factor", [2, 4])
def test_area_downsample_is_the_float_mean_of_each_cell_rounded_half_to_even(factor):
    clip = np.random.default_rng(factor).integers(0, 256, (3, 16, 16, 3), dtype=np.uint8)
    cells = clip.astype(np.float32).reshape(3, 16 // factor, factor, 16 // factor, factor, 3).mean(axis=(2, 4))
    assert np.array_equal(area_downsample(clip, factor), np.rint(cells).astype(np.uint8))
    half = np.zeros((1, 2, 2, 3), np.uint8)
    half[0, 0, :, 0] = [1, 2]  # cell mean 0.75 -> 1; channel 1: mean 0.5 -> 0 (half to even)
    half[0, 0, 0, 1] = 2
    assert area_downsample(half, 2)[0, 0, 0].tolist() == [1, 0, 0]
