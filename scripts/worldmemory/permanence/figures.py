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


def figure2(curve: pd.DataFrame, out_png, out_pdf) -> Figure:
    """Two panels (moving | stationary), one colour per model; writes PNG and PDF.

    Main condition solid with its Clopper-Pearson band, never-rendered control dashed,
    copy-last-view dash-dot, chance dotted grey. Returns the Figure for inspection.
    """
    models = list(dict.fromkeys(curve["model"]))
    colours = dict(zip(models, sns.color_palette("colorblind", len(models))))
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, (main, title) in zip(axes, PANELS):
        for model in models:
            for suffix, (style, label) in VARIANTS.items():
                rows = curve[(curve["model"] == model) & (curve["condition"] == main + suffix)].sort_values("t_s")
                if rows.empty:
                    continue
                colour = colours[model]
                ax.plot(rows["t_s"], rows["p_present"], linestyle=style, color=colour, label=model + label)
                if not suffix:
                    ax.fill_between(rows["t_s"], rows["ci_lo"], rows["ci_hi"], color=colour, alpha=0.2, linewidth=0)
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
    args = parser.parse_args(argv)
    figure2(pd.read_csv(args.long), args.png, args.pdf)


if __name__ == "__main__":
    main()
