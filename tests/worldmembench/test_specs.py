"""Table 4 (Appendix C) from the rollouts' own videos and trajectories (worldmembench/specs.py)."""

import pandas as pd
import pytest
from worldmemory.worldmembench import specs
from worldmemory.worldmembench.cases import write_embedded_cases
from worldmemory.worldmembench.rollout import write_rollouts

PARAMS = {"n_frames": 49, "hold_frames": 4, "final_hold_frames": 3, "fps": 8.0}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("specs")
    write_embedded_cases(root / "cases", 1, 64, 48, {"human": ["LRLR", "LRLRLR"], "object": ["LRLR"],
                                                     "environment": ["LRUD"], "dynamic": ["LR-Hold"]})
    write_rollouts(root / "cases", "perfect", "reference", {}, PARAMS, root / "perfect", reference="omniscient")
    write_rollouts(root / "cases", "half-size", "reference", {}, PARAMS, root / "half-size", width=32, height=24,
                   reference="omniscient")
    return root


def test_table4_reads_resolution_fps_frames_and_durations_from_the_rollouts(runs):
    table = specs.table4(runs / "cases", [runs / "perfect", runs / "half-size"])
    assert list(table.columns) == specs.COLUMNS
    perfect, half = (row._asdict() for row in table.itertuples(index=False))
    move = (49 - 4 - 3) // 4  # LRLRLR moves at LRLR's speed: two moves more
    assert perfect == {"model": "perfect", "kind": "reference", "resolution": "64x48", "fps": "8",
                       "frames": f"LRLR 49; LRLRLR {49 + 2 * move}; LRUD 49; LR-Hold 49",
                       "duration_s": f"LRLR 6.1; LRLRLR {(49 + 2 * move) / 8:.1f}; LRUD 6.1; LR-Hold 6.1",
                       "conditioning": "64x48"}
    assert half["resolution"] == "32x24" and half["conditioning"] == "64x48"


def test_cli_writes_the_csv(runs, tmp_path):
    specs.main(["--cases", str(runs / "cases"), "--rollouts", str(runs / "perfect"), "--out", str(tmp_path / "t4.csv")])
    assert pd.read_csv(tmp_path / "t4.csv")["model"].tolist() == ["perfect"]
