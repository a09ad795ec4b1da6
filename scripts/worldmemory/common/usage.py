"""What one rollout cost: wall time, peak memory and, on a GPU, peak GPU memory.

Each rollout records these in a sidecar (``cost.json``) that Table 4's latency file and the
planning command (``./run.sh plan``) read. A model that runs as a command is sampled while it
runs: every process of its process group (its launchers and workers), resident memory summed
from ``/proc``, GPU memory summed from ``nvidia-smi``'s per-process list where the machine has it;
a command too short for a sample reports the largest finished child's peak (``getrusage``). Work
done inside this process (the reference models) reports this process's peak resident memory.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SAMPLE_S = 0.5  # seconds between two samples of a running command
GPU_SAMPLE_S = 2.0  # nvidia-smi is a process start of its own: sampled less often
PAGE_MB = resource.getpagesize() / 2**20


@dataclass
class Usage:
    wall_s: float
    peak_rss_mb: float | None = None
    peak_gpu_mb: float | None = None  # None: no GPU could be read (no nvidia-smi)

    def to_json(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def own_usage(started: float) -> Usage:
    """The usage of work done in this process since ``started`` (time.perf_counter()): its wall
    time and this process's peak resident memory so far."""
    return Usage(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


class GroupMonitor:
    """Samples the resident and GPU memory of process group ``pgid`` in a thread until stopped."""

    def __init__(self, pgid: int):
        self.pgid, self.peak_rss, self.peak_gpu = pgid, 0.0, None
        self.started = time.perf_counter()
        self._stop = threading.Event()
        self._smi = shutil.which("nvidia-smi")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> Usage:
        self._stop.set()
        self._thread.join()
        rss = self.peak_rss or resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        return Usage(time.perf_counter() - self.started, rss, self.peak_gpu)

    def _run(self) -> None:
        next_gpu = 0.0
        while not self._stop.wait(SAMPLE_S):
            pids = group_pids(self.pgid)
            self.peak_rss = max(self.peak_rss, sum(_rss_mb(p) for p in pids))
            if self._smi and time.perf_counter() >= next_gpu:
                next_gpu = time.perf_counter() + GPU_SAMPLE_S
                used = gpu_memory_mb(self._smi, pids)
                if used is not None:
                    self.peak_gpu = max(self.peak_gpu or 0.0, used)


def group_pids(pgid: int) -> set[int]:
    """The live processes of group ``pgid`` (Linux /proc; none elsewhere)."""
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError):
            continue
        if int(pgrp) == pgid and state not in "ZX":
            pids.add(int(stat.parent.name))
    return pids


def _rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_MB
    except (OSError, IndexError, ValueError):
        return 0.0


def gpu_memory_mb(smi: str, pids: set[int]) -> float | None:
    """GPU memory used by ``pids`` according to nvidia-smi (MiB); None if it cannot tell."""
    try:
        out = subprocess.run([smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    used = 0.0
    for line in out.splitlines():
        pid, _, memory = line.partition(",")
        if pid.strip().isdigit() and int(pid) in pids:
            used += float(memory.strip() or 0)
    return used
