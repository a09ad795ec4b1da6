"""Continue training a V-JEPA 2 checkpoint on a curriculum rendered on the fly (Section 3.5, Appendix C).

*Tracking Is Not Permanence*, Section 3.5 (ii)-(iii) and Appendix C ("Synthetic container
curriculum": 3,000 predictor-only steps of 12 clips from the released weights, scenes rendered on
the fly, 70% container-mask batches and 30% the generic mixture) and Appendix I (the domain-matched
curricula *nothing moves* and *nothing persists*, trained without container masks). The loss is L1
on the layer-normed target encoding under a learned per-token Laplace scale (objectives.py);
predictor-only: the encoder is frozen, so the target encoder is the encoder itself (no EMA). The
checkpoint is saved as a ``VJEPA2Model`` directory with its scale head (``scale_head.pt``), a model
like any other for the probe.

Settings (JSON; config ``permanence.curricula.<name>``): ``curriculum`` (``container``,
``nothing_moves``, ``nothing_persists``), ``container_fraction`` (0.7; 0 and 1 are the ablations'),
``mixture`` (mask kind -> weight; default the v2 mixture), ``loss`` (``laplace`` or ``l1``),
``steps``, ``batch_size``, ``lr``, ``warmup_steps``, ``weight_decay``, ``seed``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from worldmemory.common.seeds import stable_rng
from worldmemory.models.device import torch_device
from worldmemory.models.vjepa2 import VJEPA2Backend, deterministic, load_model
from worldmemory.permanence.curricula import CONTAINER_FRACTION, sample_curriculum_batch
from worldmemory.permanence.mask_generators import V2_MIXTURE
from worldmemory.permanence.objectives import LaplaceScaleHead
from worldmemory.permanence.render import TRAIN_NAMESPACE
from worldmemory.permanence.train import lr_factor, save_run, train_step

VARIANTS = {"container": "moving", "nothing_moves": "nothing_moves", "nothing_persists": "nothing_persists"}
LOSSES = ("laplace", "l1")


def check_settings(settings: dict) -> None:
    """Refuse settings the loop cannot run, naming the key, what was expected and the fix."""
    for key in ("curriculum", "steps", "batch_size", "lr", "warmup_steps", "seed"):
        if key not in settings:
            raise ValueError(f"curriculum settings lack '{key}' (permanence.curricula.<name>.{key}); see "
                             "config/config.yaml's commented example")
    if settings["curriculum"] not in VARIANTS:
        raise ValueError(f"curriculum = {settings['curriculum']!r}; expected one of {sorted(VARIANTS)}")
    if settings.get("loss", "laplace") not in LOSSES:
        raise ValueError(f"loss = {settings['loss']!r}; expected one of {LOSSES}")


def train_curriculum(init: Path, settings: dict, out: Path, device: str = "cpu", log=print) -> dict:
    """Predictor-only training of the checkpoint in ``init`` on ``settings['curriculum']``; saves to ``out``."""
    check_settings(settings)
    model = load_model(str(init))
    backend = VJEPA2Backend(model, device)  # moves the model; used for preprocessing
    cfg = model.config
    model.train()
    model.encoder.eval().requires_grad_(False)  # predictor-only: the encoder is also the target
    laplace = settings.get("loss", "laplace") == "laplace"
    head = LaplaceScaleHead(cfg.hidden_size).to(backend.device) if laplace else None
    params = [*model.predictor.parameters(), *(head.parameters() if head else [])]
    steps, warmup = settings["steps"], settings["warmup_steps"]
    opt = torch.optim.AdamW(params, lr=settings["lr"], weight_decay=settings.get("weight_decay", 0.04))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, steps, warmup))
    rng = stable_rng(f"{settings['curriculum']}/seed{settings['seed']}", TRAIN_NAMESPACE)
    history, t0 = [], time.time()
    for step in range(steps):
        clips, hidden, kind = sample_curriculum_batch(
            rng, settings["batch_size"], cfg.frames_per_clip, cfg.crop_size, cfg.patch_size, cfg.tubelet_size,
            settings.get("container_fraction", CONTAINER_FRACTION), settings.get("mixture", V2_MIXTURE),
            VARIANTS[settings["curriculum"]])
        x = backend.preprocess(clips)
        loss, _ = train_step(model, model.encoder, opt, x, hidden, scale_head=head, predictor_only=True)
        sched.step()
        history.append((step, kind, loss))
        if step % 25 == 0 or step == steps - 1:
            log(f"[curriculum] step {step + 1}/{steps} ({kind}) loss {loss:.4f} {time.time() - t0:.0f}s")
    if head is not None:
        head.cpu().save(out)
    return save_run(model, out, "step,mask,loss", history, time.time() - t0, settings=settings, init=str(init))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--init", required=True, type=Path, help="the VJEPA2Model directory training starts from")
    ap.add_argument("--settings", required=True, help="curriculum settings (JSON)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    torch_device(args.device)
    torch.set_num_threads(args.threads)
    deterministic(args.device)
    summary = train_curriculum(args.init, json.loads(args.settings), args.out, args.device)
    print(f"[curriculum] done: final loss {summary['final_loss']}, {summary['seconds']}s -> {args.out}")


if __name__ == "__main__":
    main()
