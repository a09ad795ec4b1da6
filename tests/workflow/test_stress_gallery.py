"""The stress gallery through the real rules on the tiny configs, cut to one human case (and
PersistBench's two sequences) and the reference models the stress models read: each stress model is
an external run `stress.<model>` made from the stored rollouts, scored through the estimators, and
`results/<study>/stress.csv` says per expectation what was measured and whether it holds."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from worldmemory.common.video import read_video
from worldmemory.external.stress import SOURCES
from worldmemory.report.stress import COLUMNS, expectations

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "config" / "tiny_{study}.yaml"
STRESS = "results/{study}/stress.csv"
pytestmark = pytest.mark.workflow


def small_config(tmp_path, study):
    config = yaml.safe_load(Path(str(TINY).format(study=study)).read_text())
    block = config[study]
    block["models"] = {m: block["models"][m] for m in ("omniscient", "amnesic") if m in block["models"]}
    block["agreement"] = False  # the stress table makes the replays its expectations read
    if study == "worldmembench":
        block["cases"]["per_family"] = {"human": 1, "object": 0, "environment": 0, "dynamic": 0}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("study", ["worldmembench", "persistbench"])
def test_the_stress_table_checks_every_stress_model(tmp_path, snakemake, study):
    dry = snakemake(tmp_path, small_config(tmp_path, study), "-n", "results/table2.csv" if study == "worldmembench"
                    else "results/persistbench/table1.csv").stdout
    assert "stress." not in dry  # the main job's tables plan no stress run
    snakemake(tmp_path, small_config(tmp_path, study), STRESS.format(study=study))
    table = pd.read_csv(tmp_path / STRESS.format(study=study), keep_default_na=False)
    assert list(table.columns) == COLUMNS
    expected = [(e.model, e.column) for e in expectations(study)]
    assert list(zip(table["model"], table["column"])) == expected
    assert set(table["model"]) == set(SOURCES[study])
    assert (tmp_path / STRESS.format(study=study)).with_suffix(".json").stat().st_size > 0
    rows = table.set_index(["model", "column"])
    rollouts = tmp_path / "results" / study / "rollouts"
    if study == "worldmembench":
        source = read_video(rollouts / "omniscient" / "human_000" / "LRLR" / "video.mkv").astype(int)
        mirrored = read_video(rollouts / "stress.mirrored" / "human_000" / "LRLR" / "video.mp4")
        assert np.abs(mirrored - source[:, :, ::-1]).mean() < 2  # the mirror, through the MP4
        assert rows.loc[("frozen", "rpe_rot"), "holds"] == "True"
    else:
        black = rows.loc["black"]
        assert (black["measured"].astype(float) == 0).all() and (black["holds"].astype(str) == "True").all()
