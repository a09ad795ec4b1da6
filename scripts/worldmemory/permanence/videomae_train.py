"""Pretrain a small VideoMAE from scratch on scenes of the renderer's family (the embedded pixel readout).

The released VideoMAE checkpoints (Appendix E of *Tracking Is Not Permanence*: base and large,
Kinetics-400) cannot be downloaded on a laptop or in CI, so the embedded default trains its own
``VideoMAEForPreTraining`` with the VideoMAE recipe in miniature (Tong et al., 2022):

* tube masking: a random ``mask_ratio`` of the spatial patches (VideoMAE's 90%) hidden in every
  frame, drawn per clip; the count per frame is ``int(mask_ratio * patches)``, as VideoMAE's
  TubeMaskingGenerator;
* the model's own loss: MSE of the decoder's reconstruction of the masked tokens against their
  per-patch normalised pixels (``norm_pix_loss``; the backend refuses a model without it);
* AdamW with VideoMAE's betas (0.9, 0.95), linear warmup then cosine decay;
* training clips from the same pool as the V-JEPA pretraining (train.render_pool under
  TRAIN_NAMESPACE, the same clips for the same seed), never the probe's evaluation scenes.

The saved model is a ``VideoMAEForPreTraining`` directory, loadable by
models.videomae.load_videomae like a released checkpoint.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from worldmemory.common.seeds import stable_rng
from worldmemory.models.device import add_torch_arguments, start_torch_job
from worldmemory.models.videomae import VideoMAEBackend, build_videomae
from worldmemory.permanence.render import TRAIN_NAMESPACE
from worldmemory.permanence.train import lr_factor, normalised_pool, render_pool, sample_clips, save_run

RENDER_SIZE = 256  # render_pool renders at 256 px and area-downsamples by an integer factor
BETAS = (0.9, 0.95)  # VideoMAE's AdamW betas (Tong et al., 2022)


def tube_mask(rng: np.random.Generator, batch_size: int, side: int, slots: int, ratio: float) -> torch.Tensor:
    """bool_masked_pos (B, slots * side * side): per clip, int(ratio * side**2) random patches hidden in every slot."""
    per_slot = side * side
    n_hidden = int(ratio * per_slot)
    if not 0 < n_hidden < per_slot:
        raise ValueError(f"mask_ratio {ratio} hides {n_hidden} of the {per_slot} patches of a frame; expected a "
                         "ratio that hides at least one patch and keeps at least one visible (VideoMAE: 0.9)")
    cells = np.zeros((batch_size, per_slot), bool)
    for row in cells:
        row[rng.choice(per_slot, n_hidden, replace=False)] = True
    return torch.as_tensor(np.tile(cells, (1, slots)))  # time-major: slot * side**2 + cell


def train(model_config: dict, settings: dict, out: Path, device: str = "cpu", log=print) -> dict:
    seed = settings["seed"]
    rng = stable_rng(f"seed{seed}", TRAIN_NAMESPACE)  # the V-JEPA pretraining's clips, not the probe's scenes
    model = build_videomae(model_config, seed=seed)
    backend = VideoMAEBackend(model, device)  # refuses norm_pix_loss=False; moves the model; preprocesses
    cfg = model.config
    if RENDER_SIZE % cfg.image_size:
        raise ValueError(f"image_size {cfg.image_size} must divide {RENDER_SIZE} (the training clips are rendered "
                         f"at {RENDER_SIZE} px and area-downsampled by an integer factor): use 128, 64 or 32")
    model.train()
    slots = cfg.num_frames // cfg.tubelet_size
    t0 = time.time()
    pool = normalised_pool(backend, render_pool(rng, settings["clips"], cfg.num_frames, cfg.image_size))
    log(f"[videomae_train] rendered {len(pool)} training clips in {time.time() - t0:.1f}s")

    steps, warmup = settings["steps"], settings["warmup_steps"]
    opt = torch.optim.AdamW(model.parameters(), lr=settings["lr"], weight_decay=settings["weight_decay"], betas=BETAS)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, steps, warmup))
    history = []
    for step in range(steps):
        x = sample_clips(rng, pool, settings["batch_size"])
        mask = tube_mask(rng, settings["batch_size"], backend.side, slots, settings["mask_ratio"]).to(backend.device)
        loss = model(pixel_values=x, bool_masked_pos=mask).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        history.append((step, loss.item()))
        if step % 25 == 0 or step == steps - 1:
            log(f"[videomae_train] step {step + 1}/{steps} loss {history[-1][1]:.4f} {time.time() - t0:.0f}s")

    return save_run(model, out, "step,loss", history, time.time() - t0, settings=settings, model_config=model_config)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-config", required=True, help="VideoMAEConfig keyword arguments (JSON)")
    ap.add_argument("--settings", required=True, help="training settings (JSON)")
    add_torch_arguments(ap)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    start_torch_job(args.device, args.threads)
    summary = train(json.loads(args.model_config), json.loads(args.settings), args.out, args.device)
    print(f"[videomae_train] done: final loss {summary['final_loss']}, {summary['seconds']}s -> {args.out}")


if __name__ == "__main__":
    main()
