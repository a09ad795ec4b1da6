"""Seconds per pretraining step of the embedded V-JEPA 2, and the GFLOP/s that makes.

Times :func:`~worldmemory.permanence.train.train_step` on batches gathered from a random pool laid
out as training lays out its pool (pixel-major), drawn as training draws them, with the config's
model, batch size and mask kinds: one warm-up step, then ``--steps`` steps per repeat,
``--repeats`` times. Prints the median, minimum and maximum seconds per step, the floating-point
operations of one step (torch's FLOP counter; its formula for SDPA counts the CPU attention kernels
too) and GFLOP/s at the median. Pixel values do not change the cost, so no clip is rendered.

    python -m worldmemory.permanence.train_benchmark --steps 10 --repeats 5
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

import numpy as np
import torch
import yaml
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from worldmemory.models.device import start_torch_job
from worldmemory.models.vjepa2 import build_model
from worldmemory.permanence.benchmark import REPO
from worldmemory.permanence.train import sample_batch, train_step

CPU_ATTENTION = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: (
        lambda q, k, v, *args, out_shape=None, **kwargs: sdpa_flop_count(q, k, v)),
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: (
        lambda grad, q, k, v, *args, out_shape=None, **kwargs: sdpa_backward_flop_count(grad, q, k, v)),
}


class Steps:
    """Training steps of one model on a random pixel-major pool (the layout the encoder's convolution sees)."""

    def __init__(self, model_config: dict, settings: dict, pool_clips: int = 16):
        self.model = build_model(model_config, seed=settings["seed"]).train()
        self.target = copy.deepcopy(self.model.encoder).eval().requires_grad_(False)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=settings["lr"])
        cfg = self.model.config
        self.side, self.slots = cfg.crop_size // cfg.patch_size, cfg.frames_per_clip // cfg.tubelet_size
        shape = (pool_clips, cfg.frames_per_clip, cfg.crop_size, cfg.crop_size, 3)
        self.pool = torch.randn(shape).permute(0, 1, 4, 2, 3)
        self.batch, self.kinds = settings["batch_size"], settings["mask_kinds"]
        self.rng = np.random.default_rng(0)
        self.count = 0

    def step(self) -> None:
        kind = self.kinds[self.count % len(self.kinds)]
        x, hidden = sample_batch(self.rng, self.pool, self.batch, kind, self.side, self.slots)
        train_step(self.model, self.target, self.opt, x, hidden)
        self.count += 1

    def flops(self, n: int = 4) -> float:
        """Mean floating-point operations per step over ``n`` steps (the masks' sizes vary)."""
        counter = FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION)
        with counter:
            for _ in range(n):
                self.step()
        return counter.get_total_flops() / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="vjepa2-tiny-scratch", help="a permanence model of config/config.yaml")
    ap.add_argument("--steps", type=int, default=10, help="steps per repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    start_torch_job("cpu", args.threads)
    spec = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["permanence"]["models"][args.model]
    steps = Steps(spec["config"], spec["train"])
    steps.step()  # warm-up: first calls allocate and pick kernels
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(args.steps):
            steps.step()
        times.append((time.perf_counter() - start) / args.steps)
    flops = steps.flops()
    median = statistics.median(times)
    print(json.dumps({
        "model": args.model, "threads": args.threads, "batch_size": spec["train"]["batch_size"],
        "seconds_per_step_median": round(median, 3), "seconds_per_step_min": round(min(times), 3),
        "seconds_per_step_max": round(max(times), 3), "gflop_per_step": round(flops / 1e9, 2),
        "gflop_per_s": round(flops / 1e9 / median, 1),
    }))


if __name__ == "__main__":
    main()
