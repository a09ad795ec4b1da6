"""The torch device of a job, checked before any work.

Config validation runs where Snakemake runs, often a login node without a GPU, so it cannot ask
whether CUDA is there; each job that takes ``--device`` asks instead, as its first step. Without
this, ``device: cuda`` on a CPU-only machine fails minutes in, deep in a model, with
``AssertionError: Torch not compiled with CUDA enabled``.
"""

from __future__ import annotations

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
