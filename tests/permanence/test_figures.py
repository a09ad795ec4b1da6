import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from worldmemory.permanence.figures import figure2, figure3, figure4, figure5a, figure6a, figure7, read_long

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


# --- Figures 3 and 7: small curves by hand, with every column of readouts.belief_curve ---------------

COLUMNS = ["model", "condition", "slot", "t_s", "n", "n_present", "p_present", "ci_lo", "ci_hi", "e_mean",
           "alpha_mean", "frac_moving", "frac_static", "frac_gone", "ttest_t", "ttest_p"]


def hand_rows(model, condition, p_present, fracs=None):
    """One row per slot from slot 0; ``fracs`` a (moving, static, gone) triple per slot, or NaN."""
    rows = []
    for slot, p in enumerate(p_present):
        moving, static, gone = fracs[slot] if fracs else (math.nan,) * 3
        rows.append({"model": model, "condition": condition, "slot": slot, "t_s": T[slot], "n": 20,
                     "n_present": round(20 * p), "p_present": p, "ci_lo": max(p - 0.2, 0.0),
                     "ci_hi": min(p + 0.2, 1.0), "e_mean": p - 0.5, "alpha_mean": p, "frac_moving": moving,
                     "frac_static": static, "frac_gone": gone, "ttest_t": math.nan, "ttest_p": math.nan})
    return rows


def lines_by_label(ax):
    return {line.get_label(): line for line in ax.get_lines()}


# Figure 7: fractions that differ per world, per model and per slot, so a swapped column shows.
FRACS_A = [(0.6, 0.3, 0.1), (0.5, 0.3, 0.2), (math.nan,) * 3, (0.1, 0.2, 0.7), (0.0, 0.1, 0.9)]
FRACS_B = [(0.2, 0.7, 0.1), (0.1, 0.8, 0.1), (0.1, 0.6, 0.3), (0.0, 0.4, 0.6), (0.0, 0.2, 0.8)]
FRACS_CONTROL = [(0.0, 0.0, 1.0)] * 5


def three_worlds_curve() -> pd.DataFrame:
    p = [0.9, 0.5, 0.4, 0.3, 0.2]
    rows = (hand_rows("released", "moving", p, FRACS_A)
            + hand_rows("released", "moving_never_rendered", p, FRACS_CONTROL)  # not drawn: main only
            + hand_rows("v2", "stationary", p, FRACS_CONTROL)  # not drawn: the moving ball only
            + hand_rows("v2", "moving", p, FRACS_B)
            + hand_rows("no_fractions", "moving", p)  # readout not computed: skipped
            + hand_rows("stationary_only", "stationary", p, FRACS_B))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_figure7_draws_the_three_worlds_per_model(tmp_path):
    fig = figure7(three_worlds_curve(), tmp_path / "f7.png", tmp_path / "f7.pdf")
    assert png_size(tmp_path / "f7.png")[0] > 500 and (tmp_path / "f7.pdf").read_bytes()[:5] == b"%PDF-"
    # one panel per model with fractions of the moving ball, in the curve's order
    assert [ax.get_title() for ax in fig.axes] == ["released", "v2"]
    for ax, fracs in zip(fig.axes, (FRACS_A, FRACS_B)):
        lines = lines_by_label(ax)
        assert sorted(lines) == ["gone", "moving", "static"]
        kept = [(slot, f) for slot, f in enumerate(fracs) if not math.isnan(f[0])]  # NaN rows skipped
        for i, world in enumerate(("moving", "static", "gone")):
            assert list(lines[world].get_xdata()) == [T[slot] for slot, _ in kept]
            assert list(lines[world].get_ydata()) == [f[i] for _, f in kept], world
        assert ax.get_ylim() == (-0.02, 1.02)
    # the panels share y, and the first two tubelets are shaded (moving and static overlap there)
    assert fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])
    assert len(fig.axes[0].patches) == 1


def test_figure6a_draws_the_box_and_both_controls_per_model_and_panel(tmp_path):
    """Each model's ball-in-the-box line solid, its never-shown-box and exit controls dashed and dotted,
    moving and stationary box in their own panels; other conditions are not drawn."""
    curve = {("base", "container_moving"): [0.1, 0.2, 0.0, 0.1], ("base", "container_moving_never_shown"): [0.1] * 4,
             ("base", "container_moving_exit"): [0.0] * 4, ("curriculum", "container_moving"): [1.0, 1.0, 0.9, 1.0],
             ("curriculum", "container_moving_exit"): [0.05] * 4, ("curriculum", "container_stationary"): [0.8] * 4,
             ("curriculum", "moving"): [0.3] * 4, ("curriculum", "container_moving_copy_last_view"): [0.7] * 4}
    rows = [r for (model, condition), p in curve.items() for r in hand_rows(model, condition, p)]
    fig = figure6a(pd.DataFrame(rows, columns=COLUMNS), tmp_path / "f6.png", tmp_path / "f6.pdf")
    assert png_size(tmp_path / "f6.png")[0] > 500 and (tmp_path / "f6.pdf").read_bytes()[:5] == b"%PDF-"
    moving, stationary = (lines_by_label(ax) for ax in fig.axes)
    expected = {"base, ball in the box": ("-", curve[("base", "container_moving")]),
                "base, never-shown box (control)": ("--", curve[("base", "container_moving_never_shown")]),
                "base, exit (control)": (":", curve[("base", "container_moving_exit")]),
                "curriculum, ball in the box": ("-", curve[("curriculum", "container_moving")]),
                "curriculum, exit (control)": (":", curve[("curriculum", "container_moving_exit")])}
    assert sorted(moving) == sorted([*expected, "chance"])
    for label, (style, p) in expected.items():
        assert moving[label].get_linestyle() == style and list(moving[label].get_ydata()) == p, label
        assert list(moving[label].get_xdata()) == T[:4]
    assert moving["base, exit (control)"].get_color() == moving["base, ball in the box"].get_color()
    assert moving["base, exit (control)"].get_color() != moving["curriculum, exit (control)"].get_color()
    assert sorted(stationary) == ["chance", "curriculum, ball in the box"]
    with pytest.raises(ValueError, match="no container condition"):
        figure6a(pd.DataFrame(hand_rows("base", "moving", [0.2]), columns=COLUMNS), tmp_path / "x.png",
                 tmp_path / "x.pdf")


def test_figure4_draws_one_panel_per_checkpoint_moving_solid_stationary_dashed(tmp_path):
    """Per checkpoint its own panel: moving solid, stationary dashed, each with its shaded interval and its
    never-rendered control thin with crosses in the motion's colour; other conditions are not drawn."""
    curve = {("init", "moving"): [0.9, 0.1, 0.0], ("init", "stationary"): [0.8, 0.7, 0.6],
             ("init", "moving_never_rendered"): [0.05] * 3, ("tube", "moving"): [1.0, 0.9, 0.5],
             ("tube", "stationary"): [0.2, 0.1, 0.0], ("tube", "moving_copy_last_view"): [0.4] * 3}
    rows = [r for (model, condition), p in curve.items() for r in hand_rows(model, condition, p)]
    fig = figure4(pd.DataFrame(rows, columns=COLUMNS), tmp_path / "f4.png", tmp_path / "f4.pdf")
    assert png_size(tmp_path / "f4.png")[0] > 500 and (tmp_path / "f4.pdf").read_bytes()[:5] == b"%PDF-"
    init, tube = fig.axes[:2]
    assert (init.get_title(), tube.get_title()) == ("init", "tube")
    lines = lines_by_label(init)
    assert lines["moving object"].get_linestyle() == "-" and list(lines["moving object"].get_ydata()) == [0.9, 0.1, 0.0]
    assert lines["stationary object"].get_linestyle() == "--"
    assert list(lines["stationary object"].get_ydata()) == [0.8, 0.7, 0.6]
    control = lines["moving object, never rendered"]
    assert control.get_marker() == "x" and control.get_color() == lines["moving object"].get_color()
    assert lines["moving object"].get_color() != lines["stationary object"].get_color()
    assert len(init.collections) == 2 and len(tube.collections) == 2  # one shaded interval per motion
    assert sorted(lines_by_label(tube)) == ["chance", "moving object", "stationary object"]
    with pytest.raises(ValueError, match="no 'moving' condition"):
        figure4(pd.DataFrame(hand_rows("init", "stationary", [0.2]), columns=COLUMNS), tmp_path / "x.png",
                tmp_path / "x.pdf")


def test_figure5a_puts_the_pixel_models_left_and_the_latent_ones_right(tmp_path):
    """The pixel-readout models in the left panel, the others in the right, each the moving ball solid and
    its never-visible control dashed in the model's colour; a missing pixel model is refused."""
    curve = {("videomae", "moving"): [0.4, 0.1, 0.0], ("videomae", "moving_never_visible"): [0.1, 0.0, 0.0],
             ("vjepa", "moving"): [0.9, 0.8, 0.7], ("vjepa", "moving_never_visible"): [0.2, 0.1, 0.0],
             ("vjepa", "stationary"): [0.5] * 3}
    rows = [r for (model, condition), p in curve.items() for r in hand_rows(model, condition, p)]
    fig = figure5a(pd.DataFrame(rows, columns=COLUMNS), tmp_path / "f5.png", tmp_path / "f5.pdf", pixel=["videomae"])
    assert png_size(tmp_path / "f5.png")[0] > 500
    pixel, latent = (lines_by_label(ax) for ax in fig.axes)
    assert sorted(pixel) == ["chance", "videomae", "videomae, never visible (control)"]
    assert sorted(latent) == ["chance", "vjepa", "vjepa, never visible (control)"]
    for lines, model in ((pixel, "videomae"), (latent, "vjepa")):
        main, control = lines[model], lines[f"{model}, never visible (control)"]
        assert main.get_linestyle() == "-" and list(main.get_ydata()) == curve[(model, "moving")]
        assert control.get_linestyle() == "--" and list(control.get_ydata()) == curve[(model, "moving_never_visible")]
        assert control.get_color() == main.get_color()
    assert pixel["videomae"].get_color() != latent["vjepa"].get_color()
    with pytest.raises(ValueError, match="none of the pixel-readout models"):
        figure5a(pd.DataFrame(rows, columns=COLUMNS), tmp_path / "x.png", tmp_path / "x.pdf", pixel=["absent"])


def test_figure7_without_the_moving_condition_raises(tmp_path):
    curve = three_worlds_curve()
    without = curve[curve["condition"] != "moving"]
    with pytest.raises(ValueError, match="'moving' condition"):
        figure7(without, tmp_path / "f.png", tmp_path / "f.pdf")
    no_fractions = curve.assign(frac_moving=math.nan, frac_static=math.nan, frac_gone=math.nan)
    with pytest.raises(ValueError, match="'moving' condition"):
        figure7(no_fractions, tmp_path / "f.png", tmp_path / "f.pdf")
    assert not (tmp_path / "f.png").exists()


# Figure 3: five slots in the window, the reveal conditions cover the first three (the gap).
MAIN_P = [0.9, 0.1, 0.2, 0.3, 0.4]
PRESENT_P = [0.95, 0.6, 0.8]
ABSENT_P = [0.7, 0.05, 0.0]
STATIONARY_P = [0.8, 0.7, 0.6, 0.5, 0.4]


def reveal_curves() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(main table, reveal query): the released model has both, ``no_reveal`` only the main table."""
    main = pd.DataFrame(hand_rows("released", "moving", MAIN_P) + hand_rows("released", "stationary", STATIONARY_P)
                        + hand_rows("no_reveal", "moving", MAIN_P), columns=COLUMNS)
    reveal = pd.DataFrame(hand_rows("released", "moving_reveal_present", PRESENT_P)
                          + hand_rows("released", "moving_reveal_absent", ABSENT_P)
                          + hand_rows("released", "stationary_reveal_present", PRESENT_P), columns=COLUMNS)
    return main, reveal


def test_figure3_reveal_present_solid_absent_dashed_no_reveal_dotted_over_the_gap(tmp_path):
    main, reveal = reveal_curves()
    fig = figure3(pd.concat([main, reveal]), tmp_path / "f3.png", tmp_path / "f3.pdf")
    assert png_size(tmp_path / "f3.png")[0] > 500 and (tmp_path / "f3.pdf").read_bytes()[:5] == b"%PDF-"
    moving, stationary = fig.axes[:2]
    assert "Moving" in moving.get_title() and "Figure 3" in moving.get_title()
    gap = T[:3]

    lines = lines_by_label(moving)
    assert sorted(lines) == sorted(["released, reveal shows the object", "released, reveal shows its absence",
                                    "released, no reveal", "chance"])  # no_reveal has no reveal: skipped
    present, absent = lines["released, reveal shows the object"], lines["released, reveal shows its absence"]
    assert present.get_linestyle() == "-" and list(present.get_ydata()) == PRESENT_P
    assert absent.get_linestyle() == "--" and list(absent.get_ydata()) == ABSENT_P
    no_reveal = lines["released, no reveal"]
    assert no_reveal.get_linestyle() == ":"
    assert list(no_reveal.get_xdata()) == gap and list(no_reveal.get_ydata()) == MAIN_P[:3]
    assert list(present.get_xdata()) == list(absent.get_xdata()) == gap
    assert list(lines["chance"].get_ydata()) == [0.5, 0.5] and lines["chance"].get_linestyle() == ":"
    # one colour per model for its three lines
    assert present.get_color() == absent.get_color() == no_reveal.get_color()

    # stationary: only the object's reveal was run; the main condition still only over its gap
    lines = lines_by_label(stationary)
    assert "released, reveal shows its absence" not in lines
    assert list(lines["released, reveal shows the object"].get_ydata()) == PRESENT_P
    assert list(lines["released, no reveal"].get_xdata()) == gap
    assert list(lines["released, no reveal"].get_ydata()) == STATIONARY_P[:3]


def test_figure3_paper_styles(tmp_path):
    main, reveal = reveal_curves()
    reveal = pd.concat([reveal, reveal.assign(model="v2")])
    curve = pd.concat([main, reveal])
    fig = figure3(curve, tmp_path / "f.png", tmp_path / "f.pdf", released=["released"], highlight="v2")
    lines = lines_by_label(fig.axes[0])
    assert lines["released, reveal shows the object"].get_color() == "0.6"
    assert lines["v2, reveal shows the object"].get_color() == "black"
    assert "v2, no reveal" not in lines


def test_figure3_without_reveal_conditions_raises(tmp_path):
    main, _ = reveal_curves()
    with pytest.raises(ValueError, match=r"moving_reveal_present.*queries/reveal/\{model\}\.csv"):
        figure3(main, tmp_path / "f.png", tmp_path / "f.pdf")


def test_read_long_keeps_each_condition_from_the_first_file(tmp_path):
    main, reveal = reveal_curves()
    # a reveal table that repeats the main condition with other numbers: the main table's is kept
    repeated = pd.concat([reveal, main[main["model"] == "released"].assign(p_present=0.0)])
    main.to_csv(tmp_path / "main.csv", index=False)
    repeated.to_csv(tmp_path / "reveal.csv", index=False)
    curve = read_long([tmp_path / "main.csv", tmp_path / "reveal.csv"])
    assert len(curve) == len(main) + len(reveal)
    moving = curve[(curve["model"] == "released") & (curve["condition"] == "moving")]
    assert list(moving["p_present"]) == MAIN_P


def run_cli(*args):
    subprocess.run([sys.executable, "-m", "worldmemory.permanence.figures", *map(str, args)],
                   cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")}, check=True)


@pytest.mark.parametrize("figure", ["3", "7"])
def test_cli_figures_3_and_7_are_byte_stable(tmp_path, figure):
    main, reveal = reveal_curves()
    if figure == "7":
        main = three_worlds_curve()
    main.to_csv(tmp_path / "table3_long.csv", index=False)
    reveal.to_csv(tmp_path / "reveal_long.csv", index=False)
    longs = ["--long", tmp_path / "table3_long.csv"] + (["--long", tmp_path / "reveal_long.csv"] * (figure == "3"))
    for run in ("a", "b"):
        run_cli(*longs, "--figure", figure, "--png", tmp_path / f"{run}.png", "--pdf", tmp_path / f"{run}.pdf",
                "--released", "released")
    assert png_size(tmp_path / "a.png")[0] > 500 and (tmp_path / "a.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    # the CLI draws the figure asked for, from all the --long files
    if figure == "3":
        figure3(pd.concat([main, reveal]), tmp_path / "c.png", tmp_path / "c.pdf", released=["released"])
    else:
        figure7(main, tmp_path / "c.png", tmp_path / "c.pdf")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "c.png").read_bytes()


def test_cli_figure3_needs_the_reveal_table(tmp_path):
    main, _ = reveal_curves()
    main.to_csv(tmp_path / "table3_long.csv", index=False)
    done = subprocess.run(
        [sys.executable, "-m", "worldmemory.permanence.figures", "--long", str(tmp_path / "table3_long.csv"),
         "--figure", "3", "--png", str(tmp_path / "f.png"), "--pdf", str(tmp_path / "f.pdf")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")}, capture_output=True, text=True,
    )
    assert done.returncode != 0 and "queries/reveal" in done.stderr
    assert not (tmp_path / "f.png").exists()
