"""One device per GPU job (common/gpu_slot.py): jobs that run at once never share a device, a job
waits while every device is taken, and the wrapper execs its command with CUDA_VISIBLE_DEVICES set."""

import os
import subprocess
import sys
import threading
import time

import pytest
from worldmemory.common.gpu_slot import claim, visible_devices

PRINT_DEVICES = [sys.executable, "-c", "import os; print(os.environ.get('CUDA_VISIBLE_DEVICES'))"]


def wrapped(n: str, env: dict, command=PRINT_DEVICES) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worldmemory.common.gpu_slot", n, *command],
                          env={**os.environ, **env}, capture_output=True, text=True, check=True)


def test_held_devices_are_not_given_twice_and_a_release_frees_one(tmp_path):
    first, fds = claim(1, ["0", "1"], tmp_path)
    second, more = claim(1, ["0", "1"], tmp_path)
    assert first != second and sorted(first + second) == ["0", "1"]
    got = []
    waiter = threading.Thread(target=lambda: got.append(claim(1, ["0", "1"], tmp_path, poll_s=0.05)))
    waiter.start()
    time.sleep(0.3)
    assert not got  # every device is taken: it waits
    os.close(fds[0])  # the first job ends
    waiter.join(5)
    assert got and got[0][0] == first
    for fd in (*more, *got[0][1]):
        os.close(fd)
    with pytest.raises(ValueError, match="asks for 3 GPUs but only 2 are visible"):
        claim(3, ["0", "1"], tmp_path)


def test_the_wrapper_sets_the_device_and_holds_it_for_the_commands_life(tmp_path):
    env = {"CUDA_VISIBLE_DEVICES": "4,5", "WORLDMEMORY_GPU_LOCKS": str(tmp_path)}
    env.pop("SLURM_JOB_ID", None)
    assert wrapped("1", env).stdout.strip() == "4"  # the first free one
    holder = subprocess.Popen([sys.executable, "-m", "worldmemory.common.gpu_slot", "1", "sleep", "2"],
                              env={**os.environ, **env})
    time.sleep(0.5)
    assert wrapped("1", env).stdout.strip() == "5"  # 4 is held by the running command
    holder.wait()
    assert wrapped("2", env).stdout.strip() == "4,5"


def test_no_gpu_asked_slurm_or_no_device_leave_the_environment_alone(tmp_path, monkeypatch):
    env = {"CUDA_VISIBLE_DEVICES": "4,5", "WORLDMEMORY_GPU_LOCKS": str(tmp_path)}
    assert wrapped("0", env).stdout.strip() == "4,5"
    assert wrapped("1", {**env, "SLURM_JOB_ID": "17"}).stdout.strip() == "4,5"  # SLURM assigned them
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    assert visible_devices(os.environ) == []
    done = subprocess.run([sys.executable, "-m", "worldmemory.common.gpu_slot", "1", *PRINT_DEVICES],
                          env={"PATH": str(tmp_path), "WORLDMEMORY_GPU_LOCKS": str(tmp_path)},
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "None" and "no GPU listed" in done.stderr
