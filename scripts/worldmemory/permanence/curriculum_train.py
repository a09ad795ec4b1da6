"""Continue training a V-JEPA 2 checkpoint on a curriculum (Section 3.5, Appendix C).

*Tracking Is Not Permanence*, Section 3.5 (ii)-(iii) and Appendix C ("Synthetic container
curriculum": 3,000 predictor-only steps of 12 clips from the released weights, scenes rendered on
the fly, 70% container-mask batches and 30% the generic mixture) and Appendix I (the domain-matched
curricula *nothing moves* and *nothing persists*, trained without container masks). The loss is L1
on the layer-normed target encoding under a learned per-token Laplace scale (objectives.py);
predictor-only: the encoder is frozen, so the target encoder is the encoder itself (no EMA). The
checkpoint is saved as a ``VJEPA2Model`` directory with its scale head (``scale_head.pt``), a model
like any other for the probe.

``curriculum: clips`` draws the generic-mixture batches from a directory of the user's own video
(``clips_dir``; permanence.clip_directory), the natural-video interventions: (i) predictor-only
with the v2 mixture on 16-frame windows at frame step 2; (iv) continued pretraining, where
``encoder_lr`` makes the context encoder trainable at its own learning rate against a target
encoder that is an EMA of it (``ema``, Appendix C's 0.999), with tube masks only or a mixture and
a fraction of synthetic container batches.

Settings (JSON; config ``permanence.curricula.<name>``): ``curriculum`` (``container``,
``nothing_moves``, ``nothing_persists``, ``clips``), ``clips_dir`` and ``frame_step`` (clips only),
``frames`` (window length; default the model's frames_per_clip), ``container_fraction`` (0.7; 0 and
1 are the ablations'), ``mixture`` (mask kind -> weight; default the v2 mixture), ``loss``
(``laplace`` or ``l1``), ``steps``, ``batch_size``, ``lr`` (the predictor's), ``encoder_lr`` and
``ema`` (continued pretraining), ``warmup_steps``, ``weight_decay``, ``seed``.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import torch

from worldmemory.common.seeds import stable_rng
from worldmemory.models.device import add_torch_arguments, start_torch_job
from worldmemory.models.vjepa2 import VJEPA2Backend, load_model
from worldmemory.permanence.clip_directory import ClipDirectory
from worldmemory.permanence.curricula import CONTAINER_FRACTION, sample_curriculum_batch
from worldmemory.permanence.mask_generators import V2_MIXTURE
from worldmemory.permanence.objectives import LaplaceScaleHead
from worldmemory.permanence.render import TRAIN_NAMESPACE
from worldmemory.permanence.train import ema_update, lr_factor, save_run, train_step

# curriculum -> the renderer's variant of its container batches (and of its generic ones, but for clips)
VARIANTS = {"container": "moving", "nothing_moves": "nothing_moves", "nothing_persists": "nothing_persists",
            "clips": "moving"}
EMA = 0.999  # Appendix C: "target encoder is an EMA of the context encoder with momentum 0.999"
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
    if (settings["curriculum"] == "clips") != ("clips_dir" in settings):
        raise ValueError("clips_dir names the video directory of curriculum 'clips' and of no other curriculum; "
                         f"got curriculum {settings['curriculum']!r} with clips_dir {settings.get('clips_dir')!r}")


def train_curriculum(init: Path, settings: dict, out: Path, device: str = "cpu", log=print) -> dict:
    """Predictor-only training of the checkpoint in ``init`` on ``settings['curriculum']``; saves to ``out``."""
    check_settings(settings)
    model = load_model(str(init))
    backend = VJEPA2Backend(model, device)  # moves the model; used for preprocessing
    cfg = model.config
    model.train()
    continued = "encoder_lr" in settings  # (iv): the encoder trains against an EMA of itself
    target = copy.deepcopy(model.encoder) if continued else model.encoder  # else it is its own target
    target.eval().requires_grad_(False)
    laplace = settings.get("loss", "laplace") == "laplace"
    head = LaplaceScaleHead(cfg.hidden_size).to(backend.device) if laplace else None
    groups = [{"params": [*model.predictor.parameters(), *(head.parameters() if head else [])]}]
    if continued:
        groups.append({"params": list(model.encoder.parameters()), "lr": settings["encoder_lr"]})
    steps, warmup = settings["steps"], settings["warmup_steps"]
    opt = torch.optim.AdamW(groups, lr=settings["lr"], weight_decay=settings.get("weight_decay", 0.04))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, steps, warmup))
    rng = stable_rng(f"{settings['curriculum']}/seed{settings['seed']}", TRAIN_NAMESPACE)
    frames = settings.get("frames", cfg.frames_per_clip)
    generic = None
    if settings["curriculum"] == "clips":
        source = ClipDirectory(settings["clips_dir"], frames, cfg.crop_size, settings.get("frame_step", 1))
        generic = source.sample
        log(f"[curriculum] {len(source.paths)} clips under {settings['clips_dir']}")
    history, t0 = [], time.time()
    for step in range(steps):
        clips, hidden, kind = sample_curriculum_batch(
            rng, settings["batch_size"], frames, cfg.crop_size, cfg.patch_size, cfg.tubelet_size,
            settings.get("container_fraction", CONTAINER_FRACTION), settings.get("mixture", V2_MIXTURE),
            VARIANTS[settings["curriculum"]], generic=generic)
        x = backend.preprocess(clips)
        loss, _ = train_step(model, target, opt, x, hidden, scale_head=head, predictor_only=not continued)
        sched.step()
        if continued:
            ema_update(target, model.encoder, settings.get("ema", EMA))
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
    add_torch_arguments(ap)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    start_torch_job(args.device, args.threads)
    summary = train_curriculum(args.init, json.loads(args.settings), args.out, args.device)
    print(f"[curriculum] done: final loss {summary['final_loss']}, {summary['seconds']}s -> {args.out}")


if __name__ == "__main__":
    main()
