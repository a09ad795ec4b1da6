"""The torch set-up of a job: its device, checked before any work, its threads, determinism.

Config validation runs where Snakemake runs, often a login node without a GPU, so it cannot ask
whether CUDA is there; each job that takes ``--device`` asks instead, as its first step. Without
this, ``device: cuda`` on a CPU-only machine fails minutes in, deep in a model, with
``AssertionError: Torch not compiled with CUDA enabled``. Every torch entry point (training,
probe, IntPhys, benchmarks) takes ``--device`` and ``--threads`` and starts with
:func:`start_torch_job`, so the check, the thread count and determinism are set up in one place.
"""

from __future__ import annotations

import argparse

import torch


class DeviceUnavailable(RuntimeError):
    """The configured device does not exist on this machine."""


def torch_device(name: str) -> torch.device:
    """``torch.device(name)``, or DeviceUnavailable naming the config key ``device``, its value,
    why this machine cannot run it and the fix (a GPU node, or ``device: cpu``)."""
    try:
        device = torch.device(name)
    except RuntimeError as e:
        raise DeviceUnavailable(f"config key `device` is {name!r}: not a torch device ({e}). "
                                "Fix: `device: cpu` or `device: cuda[:N]`.") from None
    if device.type != "cuda":
        return device
    if not torch.cuda.is_available():
        why = ("this torch was built without CUDA (torch.version.cuda is None)"
               if torch.version.cuda is None else
               "torch.cuda.is_available() is False (no GPU visible to this job: a CPU node, "
               "an empty CUDA_VISIBLE_DEVICES, or no NVIDIA driver)")
    elif device.index is not None and device.index >= torch.cuda.device_count():
        why = f"this machine has {torch.cuda.device_count()} visible GPU(s), so no cuda:{device.index}"
    else:
        return device
    raise DeviceUnavailable(
        f"config key `device` is {name!r}, but this machine has no such CUDA device: {why}. "
        "Fix: run it on a GPU node (`--profile profiles/slurm` sends model jobs to the GPU "
        "partition with gpu=1 when `device` names a GPU), or set `device: cpu` "
        "(e.g. `--config device=cpu`).")


def deterministic(device: str) -> None:
    """Same inputs, same numbers: strict on the CPU; on a GPU, warn where cuBLAS/cuDNN cannot promise it.

    Deterministic mode also fills every new tensor with NaN, a guard against reading memory never
    written; no kernel used here does (outputs are the same bits without it), and filling took a
    tenth of a training step.
    """
    torch.use_deterministic_algorithms(True, warn_only=device != "cpu")
    torch.utils.deterministic.fill_uninitialized_memory = False


def add_torch_arguments(parser: argparse.ArgumentParser, threads: int = 1) -> None:
    """``--device`` and ``--threads`` (default ``threads``: a benchmark's own), read by :func:`start_torch_job`."""
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda or cuda:N")
    parser.add_argument("--threads", type=int, default=threads, help="torch CPU threads (the rule's threads)")


def start_torch_job(device: str, threads: int) -> None:
    """A job's first step: the device checked (a missing GPU fails here, before any work), torch's
    CPU threads set to the job's share, determinism on."""
    torch_device(device)
    torch.set_num_threads(threads)
    deterministic(device)
