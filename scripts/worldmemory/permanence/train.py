"""Pretrain a small V-JEPA 2 from scratch on scenes of the renderer's family (the embedded default).

The released checkpoints cannot be downloaded on a laptop or in CI, so the embedded default trains
its own model with the same transformers class and the V-JEPA recipe in miniature (Bardes et al.,
2024; *Tracking Is Not Permanence*, Section 3.5 (iv) and Appendix C):

* the context encoder sees only the visible tokens of multi-block tube masks (spatial blocks
  hidden in every frame: "short" = 8 blocks of 15% of the frame, "long" = 2 blocks of 70%); the
  temporally-partial kinds of Section 3.5 (i) ("temporal_block", "causal") can be mixed in by
  config to train the curriculum the paper contrasts with the released masks;
* the predictor regresses the hidden tokens onto the layer-normed output of an EMA target encoder
  of the full clip, with an L1 loss;
* training clips come from :func:`render_training_clip` (random balls, boxes, distractors and
  backgrounds), never from the probe's evaluation scenes.

The saved model is a ``VJEPA2Model`` directory (context encoder + predictor), loadable by the
same code that loads a released checkpoint.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from worldmemory.common.seeds import stable_rng
from worldmemory.models.device import add_torch_arguments, start_torch_job
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model, encode_visible, predict_hidden
from worldmemory.permanence.mask_generators import sample_mask
from worldmemory.permanence.objectives import laplace_nll
from worldmemory.permanence.render import TRAIN_NAMESPACE, render_training_clip


def area_downsample(clip: np.ndarray, factor: int) -> np.ndarray:
    """uint8 frames (T, H, W, 3) averaged over ``factor`` x ``factor`` cells, rounded half to even.

    Summed as integers: ``factor`` divides 256, so the mean of the integer sum is exact and equals
    numpy's float32 mean over the cells, at a fifth of its cost (its strided reduction took 80% of
    rendering the pool).
    """
    total = np.zeros((clip.shape[0], clip.shape[1] // factor, clip.shape[2] // factor, 3), np.uint32)
    for dy in range(factor):
        for dx in range(factor):
            total += clip[:, dy::factor, dx::factor]
    return np.rint(total / factor**2).astype(np.uint8)


def render_pool(rng: np.random.Generator, n_clips: int, n_frames: int, crop_size: int) -> np.ndarray:
    """Training clips rendered at 256 px and area-downsampled to the model's input size (uint8)."""
    pool = np.empty((n_clips, n_frames, crop_size, crop_size, 3), np.uint8)
    for i in range(n_clips):
        pool[i] = area_downsample(render_training_clip(rng, n_frames=n_frames, size=256), 256 // crop_size)
    return pool


def normalised_pool(backend: VJEPA2Backend, pool: np.ndarray, chunk: int = 16) -> torch.Tensor:
    """The pool preprocessed once: float32 (N, T, 3, crop, crop) (12 bytes per pixel).

    Preprocessing is per pixel, so a batch gathered from this tensor, flipped or not, has the bits
    of the same batch preprocessed at its step (it took a tenth of every step). The values are
    stored pixel-major, as preprocessing leaves them: the encoder's convolution rounds differently
    on another memory layout.
    """
    out = torch.empty(pool.shape, dtype=torch.float32, device=backend.device)
    for start in range(0, len(pool), chunk):
        out[start : start + chunk] = backend.preprocess(pool[start : start + chunk]).permute(0, 1, 3, 4, 2)
    return out.permute(0, 1, 4, 2, 3)


def sample_clips(rng: np.random.Generator, pool: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Clips drawn from the pool, flipped left-right half of the time (the ball's row and motion must
    not be memorised)."""
    x = pool[torch.as_tensor(rng.integers(0, len(pool), batch_size))]
    return x.flip(-1) if rng.random() < 0.5 else x


def sample_batch(rng: np.random.Generator, pool: torch.Tensor, batch_size: int, kind: str, side: int,
                 slots: int) -> tuple[torch.Tensor, np.ndarray]:
    """A training batch: clips drawn from the pool (sample_clips) and the hidden token indices of one
    mask of ``kind``."""
    x = sample_clips(rng, pool, batch_size)
    return x, sample_mask(rng, kind, side, slots)


def lr_factor(step: int, steps: int, warmup: int) -> float:
    """The learning rate's factor at ``step``: linear warm-up over ``warmup`` steps times a cosine decay."""
    return min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps))


def train_step(model, target_encoder, opt, x: torch.Tensor, hidden: np.ndarray, scale_head=None,
               predictor_only: bool = False) -> tuple[float, float]:
    """One V-JEPA step: the predictor regresses the hidden tokens (L1) onto the layer-normed target
    encoding of the full clip from the context encoder's visible tokens. Returns the loss and the
    target's spread over tokens (a collapse shows as a spread near 0). With ``scale_head`` the loss is
    the Laplace negative log-likelihood under its per-token scale (Section 3.5); ``predictor_only``
    encodes the context without gradients (the curricula's frozen encoder)."""
    cfg = model.config  # the clip's own token count: a curriculum's windows may be shorter than frames_per_clip
    visible = np.setdiff1d(np.arange(x.shape[1] // cfg.tubelet_size * (cfg.crop_size // cfg.patch_size) ** 2), hidden)
    with torch.no_grad():
        h = encode_visible(target_encoder, x)
        target = F.layer_norm(h, (h.shape[-1],))[:, torch.as_tensor(hidden)]
    with torch.set_grad_enabled(not predictor_only):
        context = encode_visible(model.encoder, x, visible)
    pred = predict_hidden(model.predictor, context, visible, hidden)
    loss = laplace_nll(pred, target, scale_head(pred)) if scale_head is not None else (pred - target).abs().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item(), float(h.std(dim=1).mean())


def ema_update(target_encoder, encoder, momentum: float) -> None:
    """target <- momentum * target + (1 - momentum) * online, parameter by parameter."""
    with torch.no_grad():
        for pt, pc in zip(target_encoder.parameters(), encoder.parameters()):
            pt.mul_(momentum).add_(pc.detach(), alpha=1 - momentum)


def train(model_config: dict, settings: dict, out: Path, device: str = "cpu", log=print) -> dict:
    seed = settings["seed"]
    rng = stable_rng(f"seed{seed}", TRAIN_NAMESPACE)  # disjoint from the evaluation scenes' generators
    model = build_model(model_config, seed=seed)
    backend = VJEPA2Backend(model, device)  # moves the model; used here for preprocessing
    model.train()
    target_encoder = copy.deepcopy(model.encoder).eval().requires_grad_(False)
    cfg = model.config
    side, slots = cfg.crop_size // cfg.patch_size, cfg.frames_per_clip // cfg.tubelet_size
    t0 = time.time()
    pool = normalised_pool(backend, render_pool(rng, settings["clips"], cfg.frames_per_clip, cfg.crop_size))
    log(f"[train] rendered {len(pool)} training clips ({pool.numel() * 4 / 2**30:.1f} GiB as float32) "
        f"in {time.time() - t0:.1f}s")

    steps, warmup = settings["steps"], settings["warmup_steps"]
    opt = torch.optim.AdamW(model.parameters(), lr=settings["lr"], weight_decay=settings["weight_decay"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, steps, warmup))
    ema0, ema1 = settings["ema"]
    kinds = settings["mask_kinds"]
    history = []
    for step in range(steps):
        x, hidden = sample_batch(rng, pool, settings["batch_size"], kinds[step % len(kinds)], side, slots)
        loss, target_std = train_step(model, target_encoder, opt, x, hidden)
        sched.step()
        ema_update(target_encoder, model.encoder, ema0 + (ema1 - ema0) * step / max(steps - 1, 1))
        history.append((step, loss))
        if step % 25 == 0 or step == steps - 1:
            log(f"[train] step {step + 1}/{steps} loss {loss:.4f} target std {target_std:.3f} {time.time() - t0:.0f}s")

    return save_run(model, out, "step,loss", history, time.time() - t0, settings=settings, model_config=model_config)


def save_run(model, out: Path, header: str, rows, seconds: float, **record) -> dict:
    """Write a trained model (loadable with from_pretrained), its per-step log (``header``; floats
    to 6 decimals, the loss last) and training.json: ``record``, the final loss, the thread count
    (float reductions round differently per count) and the seconds. Returns that summary."""
    out.mkdir(parents=True, exist_ok=True)
    model.eval().cpu().save_pretrained(out)
    cells = (",".join(f"{v:.6f}" if isinstance(v, float) else str(v) for v in row) for row in rows)
    (out / "train_log.csv").write_text(header + "\n" + "".join(line + "\n" for line in cells))
    summary = {**record, "final_loss": round(rows[-1][-1], 6), "threads": torch.get_num_threads(),
               "seconds": round(seconds, 1)}
    (out / "training.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-config", required=True, help="VJEPA2Config keyword arguments (JSON)")
    ap.add_argument("--settings", required=True, help="training settings (JSON)")
    add_torch_arguments(ap)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    start_torch_job(args.device, args.threads)
    summary = train(json.loads(args.model_config), json.loads(args.settings), args.out, args.device)
    print(f"[train] done: final loss {summary['final_loss']}, {summary['seconds']}s -> {args.out}")


if __name__ == "__main__":
    main()
