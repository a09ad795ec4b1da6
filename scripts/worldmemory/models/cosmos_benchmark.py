"""Time and memory of one teacher-forced Cosmos-Predict1 clip: five 16x16 chunks (1,280 tokens).

*Tracking Is Not Permanence*, Appendix F scores 33-frame clips tokenised into five latent chunks of
16x16 tokens. This runs :func:`~worldmemory.models.cosmos_ar.token_log_likelihoods` once on such a
clip of random tokens with random weights (``random_cosmos_ar``, allocated directly in the dtype)
and prints the build time, the forward time, the peak resident memory of the process and, on a GPU,
the peak allocated device memory. Random weights cost the same as the released ones, so this sizes
the real run without the 8 GB download:

    python -m worldmemory.models.cosmos_benchmark --device cpu --dtype bfloat16
"""

from __future__ import annotations

import argparse
import math
import platform
import resource
import time
from pathlib import Path

import torch

from worldmemory.models.cosmos_ar import CosmosARConfig, random_cosmos_ar, token_log_likelihoods


def machine(device: torch.device) -> str:
    """The processor (or GPU) the run used, in words."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")] if cpuinfo.exists() else []
    return f"{names[0] if names else platform.processor()}, {torch.get_num_threads()} torch threads"


def run(config: CosmosARConfig, device: torch.device, dtype: torch.dtype, seed: int = 0) -> dict:
    """Build a random model, score one clip; the measurements as a dict."""
    start = time.perf_counter()
    model = random_cosmos_ar(config, seed=seed, device=device, dtype=dtype)
    built = time.perf_counter()
    tokens = torch.randint(0, config.vocab_size, (1, *config.latent_shape),
                           generator=torch.Generator().manual_seed(seed))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    begin = time.perf_counter()
    ll = token_log_likelihoods(model, tokens)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    end = time.perf_counter()
    result = {
        "machine": machine(device), "dtype": str(dtype).removeprefix("torch."),
        "parameters": sum(p.numel() for p in model.parameters()),
        "tokens": math.prod(config.latent_shape), "build_s": built - start, "forward_s": end - begin,
        # ru_maxrss is in KiB on Linux
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "mean_log_likelihood": ll.view(-1)[1:].mean().item(), "uniform": -math.log(config.vocab_size),
    }
    if device.type == "cuda":
        result["peak_gpu_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--size", default="released", choices=["released", "tiny"],
                    help="released: the 4B sizes of Appendix F; tiny: the test model")
    args = ap.parse_args(argv)
    config = CosmosARConfig.released() if args.size == "released" else CosmosARConfig.tiny()
    result = run(config, torch.device(args.device), getattr(torch, args.dtype))
    for key, value in result.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")


if __name__ == "__main__":
    main()
