"""What a rollout costs (common/usage.py): the sampled memory of a command's whole process group,
GPU memory as nvidia-smi reports it for that group, and this process's own peak."""

import os
import subprocess
import sys
import time

from worldmemory.common.usage import GroupMonitor, gpu_memory_mb, group_pids, own_usage

ALLOCATE = "import time; block = bytearray(300 * 2**20); block[::4096] = b'x' * len(block[::4096]); time.sleep(1.5)"


def test_a_commands_peak_memory_is_sampled_over_its_process_group():
    proc = subprocess.Popen(["bash", "-c", f"{sys.executable} -c \"{ALLOCATE}\" & wait"], start_new_session=True)
    monitor = GroupMonitor(proc.pid)
    time.sleep(0.2)
    assert len(group_pids(proc.pid)) >= 2  # bash and its python child
    proc.wait()
    usage = monitor.stop()
    assert usage.peak_rss_mb > 250 and 1.4 < usage.wall_s < 10
    assert usage.peak_gpu_mb is None or usage.peak_gpu_mb >= 0  # None: no nvidia-smi on this machine


def test_own_usage_is_this_processs_peak():
    started = time.perf_counter()
    usage = own_usage(started)
    assert usage.wall_s >= 0 and usage.peak_rss_mb > 10
    assert set(usage.to_json()) == {"wall_s", "peak_rss_mb", "peak_gpu_mb"}


def test_gpu_memory_is_the_groups_share_of_nvidia_smis_list(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{os.getpid()}, 1200'\necho '1, 999999'\necho '{os.getpid()}, 300'\n")
    smi.chmod(0o755)
    assert gpu_memory_mb(str(smi), {os.getpid()}) == 1500.0
    assert gpu_memory_mb(str(smi), set()) == 0.0
    assert gpu_memory_mb(str(tmp_path / "missing"), {1}) is None
