"""Figures 2a, 3, 4, 5a, 5b, 6a and 7 of *Tracking Is Not Permanence*, drawn from belief-curve long tables.

Figure 2a: P(present) by seconds since last visible (Section 4.1). Figure 3: the decision in the
gap with a reveal at the end (Section 4.2). Figure 4: the moving and the stationary object per
training condition (Section 4.4). Figure 5a: the pixel readout (VideoMAE) beside the latent one
(Section 4.5). Figure 5b: Cosmos-Predict1's fraction of scenes expecting the ball at the reveal,
from Table 8 (cosmos_tables; Section 4.5). Figure 6a: a ball in a visible box (Section 4.6).
Figure 7: nearest of three worlds over the hidden band (Appendix D). A matplotlib Figure is built
without pyplot, so nothing depends on a display or global state; file metadata that would carry a
date or version is dropped so that reruns give the same bytes.
"""

from __future__ import annotations

import argparse

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from worldmemory.report.figures import save_figure

PANELS = (("moving", "Moving object"), ("stationary", "Stationary object"))
# condition suffix -> (line style, legend suffix)
VARIANTS = {
    "": ("-", ""),
    "_never_rendered": ("--", ", never rendered (control)"),
    "_copy_last_view": ("-.", ", copy last view"),
}
RELEASED_GREY, CONTROL_RED = "0.6", "tab:red"
# Figure 3: condition suffix -> (line style, legend suffix); "" is the main condition (no reveal).
REVEALS = {
    "_reveal_present": ("-", ", reveal shows the object"),
    "_reveal_absent": ("--", ", reveal shows its absence"),
}
NO_REVEAL = (":", ", no reveal")
REVEAL_SOURCE = "results/permanence/queries/reveal/{model}.csv"
# Figure 6a: the visible container's panels and its conditions' suffixes -> (line style, legend suffix).
BOX_PANELS = (("container_moving", "Moving box"), ("container_stationary", "Stationary box"))
BOX_LINES = {
    "": ("-", ", ball in the box"),
    "_never_shown": ("--", ", never-shown box (control)"),
    "_exit": (":", ", exit (control)"),
}
# Figure 7: the three worlds of Section 3.3, in the order of readouts.BANDS.
WORLDS = ("moving", "static", "gone")
WORLD_MARKERS = {"moving": "o", "static": "s", "gone": "x"}


def _colours(models, released: set, highlight: str | None) -> dict:
    """A colorblind-palette colour for every model that is neither released nor highlighted."""
    coloured = [m for m in models if m not in released and m != highlight]
    return dict(zip(coloured, sns.color_palette("colorblind", len(coloured))))


def _model_style(model: str, colour, released: set, highlight: str | None) -> dict:
    """Colour and width of a model's lines: highlighted thick black, released thin grey."""
    if model == highlight:
        return {"color": "black", "linewidth": 2.8}
    if model in released:
        return {"color": RELEASED_GREY, "linewidth": 1.0}
    return {"color": colour, "linewidth": 1.5}


def _style(model: str, suffix: str, colour, released: set, highlight: str | None) -> dict:
    """Line properties as the paper draws Figure 2: released scales thin grey, the highlighted one
    (ViT-H) thick black with its control red, every other model in its own colour.

    Controls carry markers and are drawn above their main line: a model without memory reads
    exactly its control, and the control must still be seen there.
    """
    style = {"linestyle": VARIANTS[suffix][0], "zorder": 2, **_model_style(model, colour, released, highlight)}
    if suffix:
        style.update(marker="x" if suffix == "_never_rendered" else ".", markersize=4, zorder=3)
        if model == highlight and suffix == "_never_rendered":
            style["color"] = CONTROL_RED
    return style


def _rows(curve: pd.DataFrame, model: str, condition: str) -> pd.DataFrame:
    return curve[(curve["model"] == model) & (curve["condition"] == condition)].sort_values("t_s")


def figure2(curve: pd.DataFrame, out_png, out_pdf, released=(), highlight: str | None = None) -> Figure:
    """Two panels (moving | stationary), one line per model and condition; writes PNG and PDF.

    Main condition solid with its Clopper-Pearson band, never-rendered control dashed with x
    markers, copy-last-view dash-dot, chance dotted grey. ``released`` models (the paper's
    checkpoints) are grey and ``highlight`` thick black with a red control, as in the paper; the
    others (trained, calibration) get colours. Returns the Figure for inspection.
    """
    released = set(released)
    models = list(dict.fromkeys(curve["model"]))
    colours = _colours(models, released, highlight)
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (main, title) in zip(axes, PANELS):
        for model in models:
            for suffix, (_, label) in VARIANTS.items():
                rows = _rows(curve, model, main + suffix)
                if rows.empty:
                    continue
                style = _style(model, suffix, colours.get(model), released, highlight)
                ax.plot(rows["t_s"], rows["p_present"], label=model + label, **style)
                if not suffix:
                    ax.fill_between(rows["t_s"], rows["ci_lo"], rows["ci_hi"], color=style["color"], alpha=0.2,
                                    linewidth=0)
        ax.axhline(0.5, color="grey", linestyle=":", label="chance")
        # the limits keep lines at 0 and 1 visible
        ax.set(title=f"{title} (cf. paper Figure 2a)", xlabel="seconds since last visible", ylim=(-0.02, 1.02))
        ax.legend(fontsize="x-small", loc="upper right")
    axes[0].set_ylabel("P(present)")
    fig.suptitle("Belief that a hidden object is still there (Tracking Is Not Permanence, Figure 2a)")
    save_figure(fig, out_png, out_pdf)
    return fig


def figure3(curve: pd.DataFrame, out_png, out_pdf, released=(), highlight: str | None = None) -> Figure:
    """Reveal at the end (Section 4.2): the decision in the gap; writes PNG and PDF.

    Two panels (moving | stationary), one colour per model (``released`` grey, ``highlight`` thick
    black, as in Figure 2a). P(present) when the reveal shows the object
    (``{motion}_reveal_present``) is solid, when it shows its absence (``{motion}_reveal_absent``)
    dashed, and without a reveal (the main condition ``{motion}``) dotted; chance dotted grey. The
    reveal conditions cover only the gap (the slots before the revealed last two), so the main
    condition is drawn only at the time points the model's reveal conditions have: the three lines
    share the x range. Models without reveal conditions are skipped; a curve with none at all
    raises ValueError. Returns the Figure for inspection.
    """
    released = set(released)
    reveal_conditions = [motion + suffix for motion, _ in PANELS for suffix in REVEALS]
    models = list(dict.fromkeys(curve.loc[curve["condition"].isin(reveal_conditions), "model"]))
    if not models:
        raise ValueError(
            f"no reveal condition in the curve: Figure 3 needs {', '.join(reveal_conditions)} (with the main "
            f"conditions moving, stationary), which come from the reveal query ({REVEAL_SOURCE}); "
            "pass its long CSV with --long beside the main table's"
        )
    colours = _colours(models, released, highlight)
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (motion, title) in zip(axes, PANELS):
        for model in models:
            style = _model_style(model, colours.get(model), released, highlight)
            gap = set()
            for suffix, (linestyle, label) in REVEALS.items():
                rows = _rows(curve, model, motion + suffix)
                if rows.empty:
                    continue
                gap.update(rows["t_s"].round(9))
                ax.plot(rows["t_s"], rows["p_present"], label=model + label, linestyle=linestyle, marker=".",
                        markersize=4, **style)
            main = _rows(curve, model, motion)
            main = main[main["t_s"].round(9).isin(gap)]
            if not main.empty:
                ax.plot(main["t_s"], main["p_present"], label=model + NO_REVEAL[1], linestyle=NO_REVEAL[0],
                        **style)
        ax.axhline(0.5, color="grey", linestyle=":", linewidth=1.0, label="chance")
        ax.set(title=f"{title} (cf. paper Figure 3)", xlabel="seconds since last visible", ylim=(-0.02, 1.02))
        ax.legend(fontsize="x-small", loc="best")
    axes[0].set_ylabel("P(present) in the gap")
    fig.suptitle("Decision in the gap before a reveal at the end (Tracking Is Not Permanence, Figure 3)")
    save_figure(fig, out_png, out_pdf)
    return fig


def figure7(curve: pd.DataFrame, out_png, out_pdf) -> Figure:
    """Three worlds (Appendix D): nearest world over the hidden band; writes PNG and PDF.

    For the moving ball's main condition (``moving``) of each model, the fraction of decisions
    whose prediction is nearest the moving, static or gone world (``frac_moving``,
    ``frac_static``, ``frac_gone``; they sum to 1) by seconds since last visible: one panel per
    model, one line per world. Only the main condition is drawn: the never-rendered control and
    the stationary ball are left out. Rows whose fractions are NaN (the readout was not computed)
    are skipped, and so is a model left with no row; a curve with none at all raises
    ValueError. The first two tubelets are shaded: there the moving and static worlds overlap the
    readout region for balls of 16 px and more (Appendix J). Returns the Figure for inspection.
    """
    columns = [f"frac_{world}" for world in WORLDS]
    missing = [c for c in columns if c not in curve.columns]
    if missing:
        raise ValueError(f"the curve has no column {', '.join(missing)}: Figure 7 needs the three-world fractions")
    rows = curve[curve["condition"] == "moving"].dropna(subset=columns)
    models = list(dict.fromkeys(rows["model"]))
    if not models:
        raise ValueError("no 'moving' condition with three-world fractions (frac_moving, frac_static, "
                         "frac_gone) in the curve: Figure 7 draws the moving ball's main condition")
    colours = dict(zip(WORLDS, sns.color_palette("colorblind", len(WORLDS))))
    fig = Figure(figsize=(max(6.0, 4.2 * len(models)), 4.4), layout="constrained")
    axes = fig.subplots(1, len(models), sharey=True, squeeze=False)[0]
    for ax, model in zip(axes, models):
        own = rows[rows["model"] == model].sort_values("t_s")
        first_two = own.loc[own["slot"].isin([0, 1]), "t_s"] if "slot" in own else own["t_s"].iloc[:0]
        if len(first_two) == 2:
            ax.axvspan(first_two.min(), first_two.max(), color="0.9", zorder=0,
                       label="moving ≈ static for balls ≥ 16 px")
        for world in WORLDS:
            ax.plot(own["t_s"], own[f"frac_{world}"], label=world, color=colours[world],
                    marker=WORLD_MARKERS[world], markersize=4, linewidth=1.5)
        ax.set(title=model, xlabel="seconds since last visible", ylim=(-0.02, 1.02))
    return _panels_done(fig, axes, "fraction of decisions nearest the world",
                        "Where the hidden moving object goes: nearest of three worlds\n"
                        "(Tracking Is Not Permanence, Figure 7)", out_png, out_pdf)


def figure6a(curve: pd.DataFrame, out_png, out_pdf) -> Figure:
    """The visible container (Section 4.6, Figure 6a): P(present) at the box's opening by seconds
    hidden, a moving and a stationary box, one colour per model (a curriculum checkpoint and the model
    it continues); the ball in the box solid, the never-shown-box and exit controls dashed and dotted."""
    box = [main + suffix for main, _ in BOX_PANELS for suffix in BOX_LINES]
    models = list(dict.fromkeys(curve.loc[curve["condition"].isin(box), "model"]))
    if not models:
        raise ValueError(f"no container condition in the curve: Figure 6a needs {', '.join(box)}, from the "
                         "container query (results/permanence/curricula/container_long.csv)")
    colours = dict(zip(models, sns.color_palette("colorblind", len(models))))
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (main, title) in zip(axes, BOX_PANELS):
        for model in models:
            for suffix, (linestyle, label) in BOX_LINES.items():
                rows = _rows(curve, model, main + suffix)
                if not rows.empty:  # controls above the main line: a model without memory reads its controls
                    ax.plot(rows["t_s"], rows["p_present"], linestyle=linestyle, marker="x" if suffix else "o",
                            color=colours[model], zorder=3 if suffix else 2, label=model + label)
        ax.axhline(0.5, color="grey", linestyle=":", label="chance")
        ax.set(title=f"{title} (cf. paper Figure 6a)", xlabel="seconds the box was closed", ylim=(-0.02, 1.02))
        ax.legend(fontsize="x-small", loc="center right")
    axes[0].set_ylabel("P(present) at the opening")
    fig.suptitle("Belief that a ball is inside a visible box (Tracking Is Not Permanence, Figure 6a)")
    save_figure(fig, out_png, out_pdf)
    return fig


def _panels_done(fig: Figure, axes, ylabel: str, title: str, out_png, out_pdf) -> Figure:
    """A row of per-model panels finished: the y label, one legend for all panels below them (so that
    no line is covered), the title; saved."""
    axes[0].set_ylabel(ylabel)
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=len(handles), fontsize="small")
    fig.suptitle(title)
    save_figure(fig, out_png, out_pdf)
    return fig


def _band(ax, rows: pd.DataFrame, colour, **line) -> None:
    """A belief curve with its binomial 95% interval shaded (Figures 4 and 5a)."""
    ax.plot(rows["t_s"], rows["p_present"], color=colour, **line)
    ax.fill_between(rows["t_s"], rows["ci_lo"], rows["ci_hi"], color=colour, alpha=0.15, linewidth=0)


def figure4(curve: pd.DataFrame, out_png, out_pdf) -> Figure:
    """Training conditions (Section 4.4, Figure 4): one panel per checkpoint, P(present) of the hidden
    moving object solid and of the stationary one dashed, shaded binomial 95% intervals; each
    motion's never-rendered control thin with crosses (a checkpoint without memory reads it)."""
    models = list(dict.fromkeys(curve.loc[curve["condition"] == "moving", "model"]))
    if not models:
        raise ValueError("no 'moving' condition in the curve: Figure 4 draws the main query's moving and "
                         "stationary object (results/permanence/curricula/main_long.csv)")
    colours = dict(zip((m for m, _ in PANELS), sns.color_palette("colorblind", len(PANELS))))
    fig = Figure(figsize=(max(6.0, 3.6 * len(models)), 4.4), layout="constrained")
    axes = fig.subplots(1, len(models), sharey=True, squeeze=False)[0]
    for ax, model in zip(axes, models):
        for (motion, title), linestyle in zip(PANELS, ("-", "--")):
            rows = _rows(curve, model, motion)
            if not rows.empty:
                _band(ax, rows, colours[motion], linestyle=linestyle, marker="o", markersize=3, label=title.lower())
            control = _rows(curve, model, motion + "_never_rendered")
            if not control.empty:
                ax.plot(control["t_s"], control["p_present"], color=colours[motion], linestyle=linestyle,
                        linewidth=0.8, marker="x", markersize=4, zorder=3, label=f"{title.lower()}, never rendered")
        ax.axhline(0.5, color="grey", linestyle=":", linewidth=0.8, label="chance")
        ax.set(title=model, xlabel="seconds since last visible", ylim=(-0.02, 1.02))
    return _panels_done(fig, axes, "P(present)", "Belief in a hidden moving and stationary object per training "
                        "condition\n(Tracking Is Not Permanence, Figure 4)", out_png, out_pdf)


def figure5a(curve: pd.DataFrame, out_png, out_pdf, pixel=()) -> Figure:
    """The pixel readout beside the latent one (Section 4.5, Figure 5a): the textured moving ball's
    P(present) solid with its shaded interval and its never-visible control dashed (Appendix E), the
    ``pixel`` models (VideoMAE) in the left panel, every other model (V-JEPA 2) in the right."""
    models = list(dict.fromkeys(curve.loc[curve["condition"] == "moving", "model"]))
    groups = (("Pixel readout (VideoMAE)", [m for m in models if m in set(pixel)]),
              ("Latent readout (V-JEPA 2)", [m for m in models if m not in set(pixel)]))
    if not groups[0][1]:
        raise ValueError(f"none of the pixel-readout models {sorted(pixel)} has a 'moving' condition in the curve "
                         f"(it has {models}): Figure 5a needs their main-query probes")
    colours = dict(zip(models, sns.color_palette("colorblind", len(models))))
    fig = Figure(figsize=(12, 4.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (title, members) in zip(axes, groups):
        for model in members:
            _band(ax, _rows(curve, model, "moving"), colours[model], marker="o", markersize=3, label=model)
            control = _rows(curve, model, "moving_never_visible")
            ax.plot(control["t_s"], control["p_present"], color=colours[model], linestyle="--", marker="x",
                    markersize=4, zorder=3, label=f"{model}, never visible (control)")
        ax.axhline(0.5, color="grey", linestyle=":", label="chance")
        ax.set(title=title, xlabel="seconds since last visible", ylim=(-0.02, 1.02))
        ax.legend(fontsize="x-small", loc="upper right")
    axes[0].set_ylabel("P(present), textured moving ball")
    fig.suptitle("Pixel reconstruction against latent prediction (Tracking Is Not Permanence, Figure 5a)")
    save_figure(fig, out_png, out_pdf)
    return fig


COSMOS_CONTROLS = (("exit", "against the exit control"), ("never_shown", "against the never-shown box"))


def figure5b(table: pd.DataFrame, out_png, out_pdf) -> Figure:
    """Cosmos-Predict1 (Section 4.5, Figure 5b): per condition of Table 8 (``table``, one model), the
    fraction of scenes whose memory is positive against each control, as grouped bars; 0.5 dotted."""
    if "positive_fraction" not in table.columns:
        raise ValueError("Figure 5b draws Table 8 (results/permanence/table8.csv, with positive_fraction), "
                         f"got columns {list(table.columns)}")
    conditions = list(dict.fromkeys(table["condition"]))
    labels = [f"{c.split('_')[0]} box, {h:.2f} s" if pd.notna(h) else f"{c.split('_')[0]}, visible"
              for c, h in table.drop_duplicates("condition")[["condition", "hidden_s"]].itertuples(index=False)]
    colours = sns.color_palette("colorblind", len(COSMOS_CONTROLS))
    fig = Figure(figsize=(max(6.0, 1.3 * len(conditions)), 4.4), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(COSMOS_CONTROLS)
    for i, ((control, label), colour) in enumerate(zip(COSMOS_CONTROLS, colours)):
        rows = table[table["control"] == control].set_index("condition").reindex(conditions)
        ax.bar([x + (i - 0.5) * width for x in range(len(conditions))], rows["positive_fraction"], width,
               color=colour, label=label)
    ax.axhline(0.5, color="grey", linestyle=":", label="chance")
    ax.set_xticks(range(len(conditions)), labels, rotation=20, ha="right")
    ax.set(ylabel="fraction of scenes with memory > 0", ylim=(0, 1.02),
           title=f"{', '.join(dict.fromkeys(table['model']))}: {int(table['scenes'].max())} scenes per bar")
    ax.legend(fontsize="small", loc="upper right")
    fig.suptitle("Expecting the ball at the reveal (Tracking Is Not Permanence, Figure 5b)")
    save_figure(fig, out_png, out_pdf)
    return fig


def read_long(paths) -> pd.DataFrame:
    """The long tables concatenated. A (model, condition) found in several files is kept whole from
    the first file that has it, so a reveal table that repeats the main conditions draws no line
    twice and no line mixes two files."""
    tables, seen = [], set()
    for path in paths:
        table = pd.read_csv(path)
        keys = list(zip(table["model"], table["condition"]))
        tables.append(table[[key not in seen for key in keys]])
        seen.update(keys)
    return pd.concat(tables, ignore_index=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", required=True, action="append",
                        help="results/permanence/table3_long.csv; repeat to add tables with the same columns "
                             "(Figure 3: also the reveal query's long CSV; Figure 5b: table8.csv)")
    parser.add_argument("--figure", choices=["2", "3", "4", "5a", "5b", "6a", "7"], default="2",
                        help="the paper's figure (default 2)")
    parser.add_argument("--png", required=True)
    parser.add_argument("--pdf", required=True)
    parser.add_argument("--released", nargs="*", default=[],
                        help="models drawn grey (the paper's checkpoints; Figures 2 and 3)")
    parser.add_argument("--highlight", default=None,
                        help="model drawn thick black (ViT-H; Figures 2 and 3, with a red control in 2)")
    parser.add_argument("--pixel", nargs="*", default=[], help="the pixel-readout models (VideoMAE; Figure 5a)")
    args = parser.parse_args(argv)
    curve = read_long(args.long)
    if args.figure == "5a":
        figure5a(curve, args.png, args.pdf, args.pixel)
    elif args.figure in ("4", "5b", "6a", "7"):
        {"4": figure4, "5b": figure5b, "6a": figure6a, "7": figure7}[args.figure](curve, args.png, args.pdf)
    else:
        draw = figure2 if args.figure == "2" else figure3
        draw(curve, args.png, args.pdf, args.released, args.highlight)


if __name__ == "__main__":
    main()
