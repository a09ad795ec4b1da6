"""Cosmos-Predict1's autoregressive readout through the real rules (Section 4.5, Appendix F): the
2-layer random model and the scripted tokenizer of tests/config/tiny.yaml score every condition's
scenes, and Table 8, its side-by-side with the paper, Figure 5b and the log-likelihood check build."""

import math
from pathlib import Path

import pandas as pd
import pytest
from worldmemory.permanence import cosmos_scenes, cosmos_tables

TINY = Path(__file__).resolve().parents[1] / "config" / "tiny.yaml"
pytestmark = pytest.mark.workflow


def test_table8_figure5b_and_the_loglik_check_build(tmp_path, snakemake):
    snakemake(tmp_path, TINY, "results/permanence/table8.csv", "results/permanence/figure5b.png",
              "results/permanence/cosmos/loglik_check.csv")
    out = tmp_path / "results" / "permanence"
    evidence = pd.read_csv(out / "cosmos" / "evidence.csv")
    assert len(evidence) == len(cosmos_scenes.CONDITIONS) * 2 * len(cosmos_scenes.PAIRS)
    assert (evidence["prefix_tokens_differing"] == 0).all()  # the scripted tokenizer is causal
    assert (evidence["evidence_swapped"] == evidence["evidence"]).all()
    table = pd.read_csv(out / "table8.csv")
    assert list(table.columns) == cosmos_tables.COLUMNS
    assert len(table) == len(cosmos_scenes.CONDITIONS) * 2 and (table["scenes"] == 2).all()
    assert set(table["model"]) == {"cosmos-tiny-test"} and set(table["control"]) == {"exit", "never_shown"}
    assert ((table["ci_lo"] <= table["memory"]) & (table["memory"] <= table["ci_hi"])).all()
    paper = pd.read_csv(out / "table8_vs_paper.csv")
    assert list(paper.columns) == ["model", "run", "condition", "statistic", "paper", "ours", "note"]
    assert paper.empty  # a random model is no run of the released one
    assert (out / "figure5b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    check = pd.read_csv(out / "cosmos" / "loglik_check.csv")
    assert check["uniform"].iloc[0] == pytest.approx(-math.log(64), abs=1e-4)  # the scripted codebook
    assert check["paper_natural"].iloc[0] == -5.5 and check["clips"].iloc[0] == 4 * 2
    assert check["tokens"].iloc[0] == 8 * (5 * 16 * 16 - 1)
