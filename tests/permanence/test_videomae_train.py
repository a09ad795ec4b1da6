"""Pretraining the embedded VideoMAE: tube masks of a given ratio, its own loss, a loadable checkpoint, determinism."""

import json
import math

import numpy as np
import pytest
import torch
from worldmemory.models.videomae import build_videomae, load_videomae
from worldmemory.models.vjepa2 import weights_digest
from worldmemory.permanence.videomae_train import main, train, tube_mask

MICRO = dict(image_size=32, patch_size=8, num_frames=4, tubelet_size=2, hidden_size=32, num_hidden_layers=1,
             num_attention_heads=4, intermediate_size=64, decoder_hidden_size=32, decoder_num_hidden_layers=1,
             decoder_num_attention_heads=4, decoder_intermediate_size=64)
SETTINGS = dict(seed=3, steps=3, batch_size=2, clips=3, lr=1e-3, warmup_steps=1, weight_decay=0.05, mask_ratio=0.75)


@pytest.mark.parametrize("ratio, hidden", [(0.9, 57), (0.75, 48), (0.5, 32)])
def test_tube_mask_hides_the_ratio_in_every_frame(ratio, hidden):
    mask = tube_mask(np.random.default_rng(0), 4, 8, 3, ratio).numpy()
    assert mask.shape == (4, 3 * 64)
    per_slot = mask.reshape(4, 3, 64)
    assert (per_slot.sum(-1) == hidden).all()  # int(ratio * 64) per frame, as VideoMAE
    assert (per_slot == per_slot[:, :1]).all()  # the same patches in every slot: a tube
    assert len({row.tobytes() for row in per_slot[:, 0]}) == 4  # a mask per clip


@pytest.mark.parametrize("ratio", [0.0, 0.01, 1.0])
def test_a_ratio_that_hides_nothing_or_everything_is_refused(ratio):
    with pytest.raises(ValueError, match="at least one patch"):
        tube_mask(np.random.default_rng(0), 1, 8, 1, ratio)


def test_training_writes_a_loadable_model_deterministically(tmp_path):
    logs = []
    a = train(MICRO, SETTINGS, tmp_path / "a", log=logs.append)
    main(["--model-config", json.dumps(MICRO), "--settings", json.dumps(SETTINGS), "--threads",
          str(torch.get_num_threads()), "--out", str(tmp_path / "b")])
    model_a, model_b = load_videomae(str(tmp_path / "a")), load_videomae(str(tmp_path / "b"))
    assert weights_digest(model_a) == weights_digest(model_b)
    assert weights_digest(model_a) != weights_digest(build_videomae(MICRO, seed=SETTINGS["seed"]))
    losses = (tmp_path / "a" / "train_log.csv").read_text().splitlines()[1:]
    assert len(losses) == SETTINGS["steps"] and all(math.isfinite(float(line.split(",")[1])) for line in losses)
    record = json.loads((tmp_path / "a" / "training.json").read_text())
    assert record["settings"] == SETTINGS and record["model_config"] == MICRO
    assert 0 < a["final_loss"] < 10 and any("step 3/3" in line for line in logs)


def test_an_image_size_the_renderer_cannot_downsample_to_is_refused(tmp_path):
    with pytest.raises(ValueError, match="must divide 256"):
        train({**MICRO, "image_size": 48}, SETTINGS, tmp_path / "m", log=lambda *_: None)
