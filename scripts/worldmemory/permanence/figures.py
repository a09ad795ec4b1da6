"""Figure 2a of *Tracking Is Not Permanence*: P(present) by seconds since last visible.

A matplotlib Figure is built without pyplot, so nothing depends on a display or global state;
file metadata that would carry a date or version is dropped so that reruns give the same bytes.
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


def _style(model: str, suffix: str, colour, released: set, highlight: str | None) -> dict:
    """Line properties as the paper draws Figure 2: released scales thin grey, the highlighted one
    (ViT-H) thick black with its control red, every other model in its own colour.

    Controls carry markers and are drawn above their main line: a model without memory reads
    exactly its control, and the control must still be seen there.
    """
    style = {"linestyle": VARIANTS[suffix][0], "color": colour, "linewidth": 1.5, "zorder": 2}
    if model == highlight:
        style.update(color="black", linewidth=2.8)
    elif model in released:
        style.update(color=RELEASED_GREY, linewidth=1.0)
    if suffix:
        style.update(marker="x" if suffix == "_never_rendered" else ".", markersize=4, zorder=3)
        if model == highlight and suffix == "_never_rendered":
            style["color"] = CONTROL_RED
    return style


def figure2(curve: pd.DataFrame, out_png, out_pdf, released=(), highlight: str | None = None) -> Figure:
    """Two panels (moving | stationary), one line per model and condition; writes PNG and PDF.

    Main condition solid with its Clopper-Pearson band, never-rendered control dashed with x
    markers, copy-last-view dash-dot, chance dotted grey. ``released`` models (the paper's
    checkpoints) are grey and ``highlight`` thick black with a red control, as in the paper; the
    others (trained, calibration) get colours. Returns the Figure for inspection.
    """
    released = set(released)
    models = list(dict.fromkeys(curve["model"]))
    coloured = [m for m in models if m not in released and m != highlight]
    colours = dict(zip(coloured, sns.color_palette("colorblind", len(coloured))))
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (main, title) in zip(axes, PANELS):
        for model in models:
            for suffix, (_, label) in VARIANTS.items():
                rows = curve[(curve["model"] == model) & (curve["condition"] == main + suffix)].sort_values("t_s")
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", required=True, help="results/permanence/table3_long.csv")
    parser.add_argument("--png", required=True)
    parser.add_argument("--pdf", required=True)
    parser.add_argument("--released", nargs="*", default=[], help="models drawn grey (the paper's checkpoints)")
    parser.add_argument("--highlight", default=None, help="model drawn thick black with a red control (ViT-H)")
    args = parser.parse_args(argv)
    figure2(pd.read_csv(args.long), args.png, args.pdf, args.released, args.highlight)


if __name__ == "__main__":
    main()
