import os
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
from worldmemory.permanence.figures import figure2

REPO = Path(__file__).resolve().parents[2]
T = [slot * 2 / 7.5 for slot in range(14)]
# model -> conditions it has; the second model lacks copy-last-view and the stationary control.
RUNS = {
    "facebook/vjepa2-vith-fpc64-256": ["moving", "moving_never_rendered", "moving_copy_last_view",
                                       "stationary", "stationary_never_rendered", "stationary_copy_last_view"],
    "v2": ["moving", "moving_never_rendered", "stationary"],
}


def synthetic_curve() -> pd.DataFrame:
    rows = [
        {"model": model, "condition": condition, "slot": slot, "t_s": t,
         "p_present": p, "ci_lo": max(p - 0.13, 0.0), "ci_hi": min(p + 0.13, 1.0)}
        for model, conditions in RUNS.items() for condition in conditions
        for slot, t in enumerate(T) for p in [max(0.9 - 0.1 * slot, 0.0)]
    ]
    return pd.DataFrame(rows)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_figure2_writes_files_and_draws_lines(tmp_path):
    png, pdf = tmp_path / "fig.png", tmp_path / "fig.pdf"
    fig = figure2(synthetic_curve(), png, pdf)
    width, height = png_size(png)
    assert width > 500 and height > 300
    assert pdf.read_bytes()[:5] == b"%PDF-"

    moving, stationary = fig.axes[:2]
    # one line per (model, condition) in the panel, plus the chance line
    assert len(moving.get_lines()) == 3 + 2 + 1
    assert len(stationary.get_lines()) == 3 + 1 + 1
    assert len(moving.collections) == len(stationary.collections) == 2  # one CI band per model
    styles = {line.get_label(): line.get_linestyle() for line in moving.get_lines()}
    assert styles["v2"] == "-" and styles["v2, never rendered (control)"] == "--"
    assert styles["facebook/vjepa2-vith-fpc64-256, copy last view"] == "-." and styles["chance"] == ":"
    assert moving.get_ylim() == (-0.02, 1.02)
    assert "Figure 2a" in moving.get_title()


def test_paper_styles_and_visible_controls(tmp_path):
    """As the paper draws it: released models grey, the highlighted one thick black with a red
    control, other models coloured; a control identical to its main line is drawn above it with
    markers, so it is never hidden."""
    curve = synthetic_curve()
    fig = figure2(curve, tmp_path / "f.png", tmp_path / "f.pdf", released=["facebook/vjepa2-vith-fpc64-256"],
                  highlight="facebook/vjepa2-vith-fpc64-256")
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    vith = "facebook/vjepa2-vith-fpc64-256"
    assert lines[vith].get_color() == "black" and lines[vith].get_linewidth() > lines["v2"].get_linewidth()
    assert lines[vith + ", never rendered (control)"].get_color() == "tab:red"
    assert lines["v2"].get_color() not in ("black", "tab:red", "0.6")
    for model in RUNS:  # the synthetic controls equal their main lines
        control, main = lines[model + ", never rendered (control)"], lines[model]
        assert list(control.get_ydata()) == list(main.get_ydata())
        assert control.get_zorder() > main.get_zorder() and control.get_marker() not in (None, "None", "")

    fig = figure2(curve, tmp_path / "g.png", tmp_path / "g.pdf", released=["v2"])
    assert {line.get_label(): line for line in fig.axes[0].get_lines()}["v2"].get_color() == "0.6"


def test_figure2_is_byte_stable(tmp_path):
    curve = synthetic_curve()
    figure2(curve, tmp_path / "a.png", tmp_path / "a.pdf")
    figure2(curve, tmp_path / "b.png", tmp_path / "b.pdf")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()


def test_cli(tmp_path):
    long = tmp_path / "table3_long.csv"
    synthetic_curve().to_csv(long, index=False)
    subprocess.run(
        [sys.executable, "-m", "worldmemory.permanence.figures", "--long", str(long),
         "--png", str(tmp_path / "f.png"), "--pdf", str(tmp_path / "f.pdf")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")}, check=True,
    )
    assert png_size(tmp_path / "f.png")[0] > 500
