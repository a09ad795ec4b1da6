"""torch_device: a job asked for a GPU this machine lacks stops first, naming `device` and the fix;
start_torch_job: every torch entry point's one set-up (device, threads, determinism)."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from worldmemory.models.device import DeviceUnavailable, add_torch_arguments, start_torch_job, torch_device

REPO = Path(__file__).resolve().parents[2]
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


def test_cpu_is_always_there():
    assert torch_device("cpu") == torch.device("cpu")


@no_cuda
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_without_cuda_names_key_value_and_fix(name):
    with pytest.raises(DeviceUnavailable) as info:
        torch_device(name)
    message = str(info.value)
    assert f"config key `device` is {name!r}" in message
    assert "no such CUDA device" in message
    assert "Fix: run it on a GPU node" in message and "`device: cpu`" in message


def test_not_a_device():
    with pytest.raises(DeviceUnavailable, match="not a torch device"):
        torch_device("gpu")


@no_cuda
def test_train_cli_stops_before_any_work(tmp_path):
    """The check comes before the (unparsed, invalid) model config and before anything is written."""
    out = tmp_path / "model"
    result = subprocess.run(
        [sys.executable, "-m", "worldmemory.permanence.train", "--model-config", "not json",
         "--settings", "{}", "--device", "cuda", "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
    assert result.returncode != 0
    assert "DeviceUnavailable: config key `device` is 'cuda'" in result.stderr
    assert "`device: cpu`" in result.stderr
    assert not out.exists()


@no_cuda
def test_score_backends_check_the_device_before_loading_dinov2(tmp_path):
    from worldmemory.perception.features import feature_backend

    with pytest.raises(DeviceUnavailable, match="config key `device` is 'cuda'"):
        feature_backend("dinov2", str(tmp_path / "not-loaded"), "cuda")


def test_a_torch_job_starts_with_its_threads_and_determinism_set():
    parser = argparse.ArgumentParser()
    add_torch_arguments(parser, threads=3)
    assert vars(parser.parse_args([])) == {"device": "cpu", "threads": 3}
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    try:
        start_torch_job("cpu", 1)
        assert torch.get_num_threads() == 1
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()
        assert torch.utils.deterministic.fill_uninitialized_memory is False
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])
