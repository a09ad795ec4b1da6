"""Table 8 (memory per condition and control, scene-bootstrap intervals, fraction positive, prefix
swap) on hand-made evidence with known answers, its side-by-side with the paper, and Figure 5b."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from worldmemory.permanence import cosmos_tables as T
from worldmemory.permanence import figures

N = 30


def evidence(condition: str, main, exit_, never, swap_main=0.0, differing=0) -> pd.DataFrame:
    rows = []
    for pair, values in (("main", main), ("exit", exit_), ("never_shown", never)):
        for i, v in enumerate(values):
            rows.append({"model": "m", "condition": condition, "motion": condition.split("_")[0],
                         "hidden_frames": 8, "hidden_s": 1.07, "scene": f"s{i}", "pair": pair, "evidence": v,
                         "evidence_swapped": v + (swap_main if pair == "main" else 0.0),
                         "prefix_tokens_differing": differing if (pair == "main" and i == 0) else 0})
    return pd.DataFrame(rows)


def test_memory_interval_and_fraction_have_their_known_values():
    scenes = np.arange(N, dtype=float)
    table = T.table8(evidence("stationary_h08", 10 + scenes, scenes - 5, scenes, swap_main=0.25, differing=300),
                     resamples=2000)
    exit_row = table[table["control"] == "exit"].iloc[0]
    never_row = table[table["control"] == "never_shown"].iloc[0]
    assert exit_row["memory"] == pytest.approx(15.0) and exit_row["positive_fraction"] == 1.0
    assert (exit_row["ci_lo"], exit_row["ci_hi"]) == (15.0, 15.0)  # the same memory in every scene
    assert never_row["memory"] == pytest.approx(10.0)
    assert exit_row["evidence_main"] == pytest.approx(10 + scenes.mean())
    assert exit_row["swap_change_main"] == pytest.approx(0.25) and exit_row["swap_change_control"] == 0.0
    assert exit_row["prefix_differs_main"] == 1 and exit_row["prefix_differs_control"] == 0
    assert exit_row["hidden_s"] == 1.07 and exit_row["scenes"] == N


def test_interval_resamples_scenes_and_is_seeded():
    rng = np.random.default_rng(0)
    memory = rng.normal(2.0, 4.0, N)
    frame = evidence("moving_h16", memory, np.zeros(N), np.zeros(N))
    first, again = T.table8(frame, resamples=4000), T.table8(frame, resamples=4000)
    assert first.equals(again)
    row = first.iloc[0]
    half = 1.96 * memory.std(ddof=0) / np.sqrt(N)
    assert row["ci_lo"] == pytest.approx(memory.mean() - half, abs=0.25)
    assert row["ci_hi"] == pytest.approx(memory.mean() + half, abs=0.25)
    assert row["positive_fraction"] == pytest.approx((memory > 0).mean())


def test_a_control_on_other_scenes_is_refused():
    frame = evidence("moving_h08", np.ones(N), np.zeros(N), np.zeros(N))
    frame = frame[~((frame["pair"] == "exit") & (frame["scene"] == "s3"))]
    with pytest.raises(ValueError, match="exit control covers other scenes"):
        T.table8(frame, resamples=10)


def test_the_paper_statistics_read_our_rows():
    frame = pd.concat([evidence("moving_h08", np.full(N, 4.0), np.zeros(N), np.full(N, 1.0), swap_main=-0.5),
                       evidence("moving_h16", np.full(N, 2.0), np.zeros(N), np.full(N, 3.0), swap_main=0.1)])
    table = T.table8(frame, resamples=10)
    assert T.our_statistic(table, "m", "moving_h08", "memory@exit") == pytest.approx(4.0)
    assert T.our_statistic(table, "m", "moving_h08+moving_h16", "memory@never_shown") == pytest.approx(1.0)
    assert T.our_statistic(table, "m", "box", "max_abs_swap_change_main") == pytest.approx(0.5)
    assert np.isnan(T.our_statistic(table, "m", "stationary_h08", "memory@exit"))
    paper = pd.read_csv("resources/paper_values/permanence_table8.csv")
    side = T.paper_side_by_side(table, paper, {"nvidia/Cosmos-Predict1-4B": "m"})
    assert len(side) == len(paper) == 19
    row = side[(side["condition"] == "moving_h08") & (side["statistic"] == "memory@exit")].iloc[0]
    assert (row["paper"], row["ours"]) == (-2.7, 4.0)
    assert T.paper_side_by_side(table, paper, {}).empty


def test_figure5b_draws_table8(tmp_path):
    frame = pd.concat([evidence(c, np.full(N, 4.0), np.zeros(N), np.full(N, 1.0))
                       for c in ("stationary_h08", "moving_h08")])
    table = T.table8(frame, resamples=10)
    table.loc[table["condition"] == "moving_h08", "hidden_s"] = np.nan  # a visible-continuation label
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    fig = figures.figure5b(table, png, pdf)
    heights = sorted(round(p.get_height(), 6) for p in fig.axes[0].patches)
    assert heights == [1.0] * 4
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:4] == b"%PDF"
    with pytest.raises(ValueError, match="Table 8"):
        figures.figure5b(frame, png, pdf)
