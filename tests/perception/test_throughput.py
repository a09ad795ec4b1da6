"""The estimator throughput script (perception/throughput.py), run at tiny sizes: every learned
estimator is saved, loaded by its backend as a prefetched checkpoint is, and timed."""

import json

from worldmemory.perception import throughput


def test_each_estimator_is_loaded_by_its_backend_and_timed(capsys):
    throughput.main(["--sizes", "tiny", "--frames", "2", "--height", "30", "--width", "44", "--repeats", "1"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["estimator"] for r in rows] == list(throughput.ESTIMATORS)
    for row in rows:
        assert row["architecture"] == "tiny" and (row["frames"], row["height"], row["width"]) == (2, 30, 44)
        assert row["params_m"] > 0 and row["frames_per_s"] > 0 and row["peak_gpu_gib"] is None
