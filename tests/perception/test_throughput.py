"""The estimator throughput script (perception/throughput.py), run at tiny sizes: every learned
estimator is saved, loaded by its backend as a prefetched checkpoint is, and timed."""

import json

import pytest
from worldmemory.perception import throughput

SAM2 = ["tracking/sam2"]  # its processor needs torchvision: timed in .venv-perception/
CORE = [name for name in throughput.ESTIMATORS if name not in SAM2]


@pytest.mark.parametrize("names", [CORE, pytest.param(SAM2, marks=pytest.mark.torchvision)], ids=["core", "sam2"])
def test_each_estimator_is_loaded_by_its_backend_and_timed(capsys, names):
    throughput.main(["--sizes", "tiny", "--frames", "2", "--height", "30", "--width", "44", "--repeats", "1",
                     "--only", *names])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["estimator"] for r in rows] == names
    for row in rows:
        assert row["architecture"] == "tiny" and (row["frames"], row["height"], row["width"]) == (2, 30, 44)
        assert row["params_m"] > 0 and row["frames_per_s"] > 0 and row["peak_gpu_gib"] is None
