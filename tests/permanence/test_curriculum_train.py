"""Curriculum training (Section 3.5, Appendix C): predictor-only, Laplace loss, a checkpoint like any other."""

import json
import math

import numpy as np
import pytest
import torch
from worldmemory.common.video import write_video
from worldmemory.models.vjepa2 import build_model, encode_visible, load_model, predict_hidden, weights_digest
from worldmemory.permanence.curriculum_train import check_settings, train_curriculum
from worldmemory.permanence.objectives import LaplaceScaleHead
from worldmemory.permanence.train import ema_update, train_step

MICRO = dict(crop_size=64, patch_size=16, frames_per_clip=8, tubelet_size=2, hidden_size=48,
             num_attention_heads=4, num_hidden_layers=1, pred_hidden_size=32,
             pred_num_attention_heads=4, pred_num_hidden_layers=1, num_pooler_layers=1)
SETTINGS = dict(curriculum="container", seed=0, steps=3, batch_size=2, lr=1e-3, warmup_steps=1)


@pytest.fixture(scope="module")
def init(tmp_path_factory):
    path = tmp_path_factory.mktemp("init")
    build_model(MICRO, seed=1).save_pretrained(path)
    return path


def digest(module):
    return weights_digest(module)


def test_training_changes_the_predictor_only_and_saves_its_scale_head(init, tmp_path):
    summary = train_curriculum(init, SETTINGS, tmp_path / "out", log=lambda *_: None)
    before, after = load_model(str(init)), load_model(str(tmp_path / "out"))
    assert digest(before.encoder) == digest(after.encoder)  # predictor-only: the encoder is frozen
    assert digest(before.predictor) != digest(after.predictor)
    head = LaplaceScaleHead.load(tmp_path / "out")
    assert head.dim == MICRO["hidden_size"] and head.linear.weight.abs().sum() > 0  # trained from zero
    log = (tmp_path / "out" / "train_log.csv").read_text().splitlines()
    assert log[0] == "step,mask,loss" and len(log) == 1 + SETTINGS["steps"]
    assert summary["settings"] == SETTINGS
    assert json.loads((tmp_path / "out" / "training.json").read_text())["init"] == str(init)


def test_training_is_deterministic_and_the_l1_loss_saves_no_head(init, tmp_path):
    for name in ("a", "b"):
        train_curriculum(init, {**SETTINGS, "loss": "l1"}, tmp_path / name, log=lambda *_: None)
    assert digest(load_model(str(tmp_path / "a"))) == digest(load_model(str(tmp_path / "b")))
    assert not (tmp_path / "a" / "scale_head.pt").exists()


def test_the_laplace_step_starts_at_l1_plus_log_2_and_predictor_only_leaves_the_encoder_without_gradients():
    """A fresh head has b = 1 everywhere: the first loss is the L1 loss plus log 2."""
    torch.manual_seed(0)
    model = build_model(MICRO, seed=2).train()
    target = build_model(MICRO, seed=2).encoder.eval()
    x = torch.randn(2, 8, 3, 64, 64)
    hidden = np.arange(16, 64)  # the last three slots
    visible = np.arange(16)
    with torch.no_grad():
        h = encode_visible(target, x)
        goal = torch.nn.functional.layer_norm(h, h.shape[-1:])[:, torch.as_tensor(hidden)]
        l1 = (predict_hidden(model.predictor, encode_visible(model.encoder, x, visible), visible, hidden) - goal
              ).abs().mean().item()
    head = LaplaceScaleHead(MICRO["hidden_size"])
    opt = torch.optim.SGD([*model.predictor.parameters(), *head.parameters()], lr=0.0)
    loss, _ = train_step(model, target, opt, x, hidden, scale_head=head, predictor_only=True)
    assert loss == pytest.approx(l1 + math.log(2), rel=1e-5)
    assert all(p.grad is None for p in model.encoder.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.predictor.parameters())
    assert head.linear.weight.grad.abs().sum() > 0


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """Two real video files of random frames, 12 and 20 frames of 80 x 96 px."""
    root = tmp_path_factory.mktemp("clips")
    rng = np.random.default_rng(0)
    for name, n in (("a.mkv", 12), ("b.mkv", 20)):
        write_video(root / name, rng.integers(0, 256, (n, 80, 96, 3), dtype=np.uint8), 15)
    return root


def test_continued_pretraining_on_the_users_clips_trains_the_encoder_against_an_ema_target(init, clips, tmp_path):
    """(iv): with encoder_lr the encoder trains too; (i): the same clips predictor-only leave it unchanged."""
    clip_settings = {**SETTINGS, "curriculum": "clips", "clips_dir": str(clips), "frame_step": 2,
                     "container_fraction": 0, "mixture": {"short_tube": 1, "long_tube": 1}}
    train_curriculum(init, {**clip_settings, "encoder_lr": 1e-3, "ema": 0.999}, tmp_path / "iv", log=lambda *_: None)
    train_curriculum(init, clip_settings, tmp_path / "i", log=lambda *_: None)
    before, iv, i = (load_model(str(p)) for p in (init, tmp_path / "iv", tmp_path / "i"))
    assert digest(before.encoder) != digest(iv.encoder) and digest(before.predictor) != digest(iv.predictor)
    assert digest(before.encoder) == digest(i.encoder) and digest(before.predictor) != digest(i.predictor)
    masks = [line.split(",")[1] for line in (tmp_path / "iv" / "train_log.csv").read_text().splitlines()[1:]]
    assert set(masks) <= {"short_tube", "long_tube"}


def test_the_ema_target_moves_a_thousandth_of_the_way_per_step():
    online, target = build_model(MICRO, seed=3).encoder, build_model(MICRO, seed=4).encoder
    w_online, w_target = (next(m.parameters()).detach().clone() for m in (online, target))
    ema_update(target, online, 0.999)
    assert torch.allclose(next(target.parameters()), 0.999 * w_target + 0.001 * w_online)


@pytest.mark.parametrize("bad, words", [
    ({"curriculum": "clips"}, ["clips_dir names the video directory", "'clips'"]),
    ({"clips_dir": "videos"}, ["clips_dir", "'container'"]),
    ({"curriculum": "boxes"}, ["curriculum = 'boxes'", "container"]),
    ({"loss": "l2"}, ["loss = 'l2'", "laplace"]),
    ({"steps": None}, ["lack 'steps'", "permanence.curricula.<name>.steps"]),
])
def test_bad_settings_are_refused_naming_the_key(bad, words):
    settings = {k: v for k, v in {**SETTINGS, **bad}.items() if v is not None}
    with pytest.raises(ValueError) as error:
        check_settings(settings)
    for word in words:
        assert word in str(error.value)
