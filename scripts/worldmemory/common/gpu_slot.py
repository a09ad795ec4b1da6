"""Each GPU job on its own device of a multi-GPU machine: ``python -m worldmemory.common.gpu_slot N COMMAND...``.

``snakemake --resources gpu=8`` lets eight jobs of ``gpu=1`` run at once on an 8-GPU node without
SLURM, but Snakemake does not say which device each may use: all would start on device 0. The
GPU rules therefore start their command through this wrapper with their ``gpu`` resource. It takes
N devices that no other job holds, by an exclusive ``flock`` on ``<locks>/<device>.lock`` for each,
sets ``CUDA_VISIBLE_DEVICES`` to them and execs COMMAND with the locks' descriptors left open, so
a device stays taken for as long as the job's process, or any child still running, lives. When
fewer than N are free it waits, saying so once.

* Devices: the environment's ``CUDA_VISIBLE_DEVICES`` when set (give the workflow a subset of the
  node's GPUs that way), else the indices ``nvidia-smi`` lists.
* Locks: under ``$WORLDMEMORY_GPU_LOCKS`` (default ``/tmp/worldmemory-gpu-locks``, one set per
  machine, so that runs of several working directories share the devices).
* N = 0 execs COMMAND unchanged; so does a SLURM job (``SLURM_JOB_ID`` set: SLURM has assigned its
  GPUs and set ``CUDA_VISIBLE_DEVICES``), and, with a note, a machine with no device to list.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

LOCKS_VARIABLE = "WORLDMEMORY_GPU_LOCKS"
DEFAULT_LOCKS = "/tmp/worldmemory-gpu-locks"
POLL_S = 1.0


def visible_devices(environ) -> list[str]:
    """The devices jobs may take: CUDA_VISIBLE_DEVICES if set, else nvidia-smi's indices."""
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip()]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def claim(n: int, devices: list[str], lock_dir: Path, poll_s: float = POLL_S) -> tuple[list[str], list[int]]:
    """(devices, open lock descriptors) of ``n`` of ``devices`` whose locks this process now
    holds; waits while fewer than ``n`` are free."""
    if n > len(devices):
        raise ValueError(f"the job asks for {n} GPUs but only {len(devices)} are visible ({','.join(devices)}); "
                         "lower its gpu resource or make more devices visible (CUDA_VISIBLE_DEVICES)")
    lock_dir.mkdir(parents=True, exist_ok=True)
    waiting = False
    while True:
        taken = []
        for device in devices:
            fd = os.open(lock_dir / f"{device}.lock", os.O_RDONLY | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            taken.append((device, fd))
            if len(taken) == n:
                return [d for d, _ in taken], [fd for _, fd in taken]
        for _, fd in taken:
            os.close(fd)  # closing the descriptor releases its lock
        if not waiting:
            print(f"[gpu_slot] waiting for {n} free GPU(s) of {','.join(devices)} (locks in {lock_dir})",
                  file=sys.stderr, flush=True)
            waiting = True
        time.sleep(poll_s)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or not argv[0].isdigit():
        raise SystemExit("usage: python -m worldmemory.common.gpu_slot N COMMAND [ARGS...]")
    n, command = int(argv[0]), argv[1:]
    if n > 0 and "SLURM_JOB_ID" not in os.environ:
        devices = visible_devices(os.environ)
        if devices:
            lock_dir = Path(os.environ.get(LOCKS_VARIABLE, DEFAULT_LOCKS))
            try:
                chosen, fds = claim(n, devices, lock_dir)
            except ValueError as e:
                raise SystemExit(f"[gpu_slot] {e}") from None
            for fd in fds:
                os.set_inheritable(fd, True)  # held across exec, and by the job's children
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(chosen)
            print(f"[gpu_slot] CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']}", file=sys.stderr, flush=True)
        else:
            print("[gpu_slot] no GPU listed (no CUDA_VISIBLE_DEVICES, no nvidia-smi): the job runs without one",
                  file=sys.stderr, flush=True)
    sys.stdout.flush()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
