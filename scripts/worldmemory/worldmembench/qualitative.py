"""WorldMemBench qualitative figures: Figures 4, 6 and 7 (and Figure 10 for a comparison's models).

    python -m worldmemory.worldmembench.qualitative --case results/worldmembench/cases/human_000 \\
        --results results/worldmembench --models omniscient amnesic --trajectory LRLRLR \\
        --out-png human_000.png --out-pdf human_000.pdf

Section 5.2 and Appendix E show, per case, a row per model of frames along one trajectory, with
"target regions in the Human and Object cases ... highlighted with red boxes, and the
corresponding metric scores ... shown for each revisit"; Figure 10 (Appendix H) is the same
layout over one model's variants on LR-Hold, "spanning the initial observation, departure, and
revisit. Camera phases and frame indices are indicated above." ``case_figure`` takes the list of
models, so either figure is one call. The paper names no frame per phase; our choices:
  * initial: frame 0, the conditioning frame every Static Memory score compares with; for a
    dynamic case the last frame of the initial hold V, the event state the camera leaves behind
    (what Persistence/Reset checks the return against);
  * departure: the last frame of D_1, the turn point, farthest from the initial view;
  * R_k: the last frame of R_k, the camera back at its initial pose;
  * dynamic cases add the final hold's last frame (Figure 10's final state, what Final State reads).
Each model's own trajectory file gives its frame indices (a model may roll out more frames), so a
column title repeats on a row whose frame differs from the top row's.
Boxes: the tight box of each target of a Human or Object case (its persons or objects) in every
shown frame where its mask is non-empty: a reference model's truth channels (the oracle the
scores read), otherwise the cached tracks of its perception job; a run with neither gets no box,
which the figure's footnote says. Scores: the family's Static Memory metrics at revisit k of this
rollout (revisits.revisit_scores on the case's rows: the mean over targets, an invalid revisit 0,
as Eq. 1 with K = 1), or for a dynamic case its gated checklist scores (one LR-Hold revisit).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from worldmemory.common.ids import check_id
from worldmemory.common.rollout_index import read_unit_manifest
from worldmemory.common.video import read_video
from worldmemory.perception.store import load_estimates
from worldmemory.report.figures import save_figure
from worldmemory.worldmembench.cases import load_case
from worldmemory.worldmembench.perception import EstimatedPerception, OraclePerception
from worldmemory.worldmembench.revisits import revisit_scores
from worldmemory.worldmembench.tables import DYNAMIC, SHORT, read_scores
from worldmemory.worldmembench.trajectories import Trajectory, load_trajectory

SCORED = {  # case family -> the metrics shown under its revisit frames (Table 2's columns)
    "human": ("human_identity", "human_appearance"),
    "object": ("object_appearance", "object_geometry"),
    "environment": ("env_visible", "env_depth", "env_recon"),
    "dynamic": DYNAMIC,
}
BOXED = {"human": "person", "object": "object"}  # families whose targets get a red box
FIGURE_TRAJECTORY = "LRLRLR"  # Figures 4, 6 and 7 show three revisits ("through R_3")
PER_LINE = 3  # score labels per line under a frame
CELL_INCHES = 1.9  # a frame's width in the figure


@dataclass(frozen=True)
class Column:
    """One shown frame: its phase label ('initial', 'departure', 'R1', ...), index and revisit k (0: none)."""

    phase: str
    frame: int
    revisit: int = 0


class Row(NamedTuple):
    """One model's row: its columns, their frames [n, H, W, 3], target masks at them
    ({target: [n, H, W]}) and the score label of each revisit k."""

    model: str
    columns: list[Column]
    frames: np.ndarray
    masks: dict
    labels: dict[int, str]


def columns(traj: Trajectory, family: str) -> list[Column]:
    """The frames a figure shows of ``traj`` (module doc): initial, departure, each revisit, and for
    a dynamic case the final hold."""
    initial, (departure, _), final = traj.phases[0], traj.revisits()[0], traj.phases[-1]
    dynamic = family == "dynamic"
    shown = [Column("initial hold" if dynamic else "initial", initial.end - 1 if dynamic else 0),
             Column("departure", departure.end - 1)]
    shown += [Column(f"R{k}", window.end - 1, k) for k, window in enumerate(traj.return_windows(), 1)]
    return shown + ([Column("final hold", final.end - 1)] if dynamic else [])


def default_trajectory(trajectories: list[str]) -> str:
    """The trajectory a case's figure shows unless configured: LRLRLR, the paper's (three
    revisits), where the case has it, else the case's first (a dynamic case's LR-Hold)."""
    return FIGURE_TRAJECTORY if FIGURE_TRAJECTORY in trajectories else trajectories[0]


def figure_selection(figures: dict, cases: dict, models: list[str], runs) -> dict:
    """The configured figures: {case: (trajectory, [models])} from ``worldmembench.figures``.

    ``cases``: case id -> {family, trajectories} (the workflow's plan); ``runs``: the runs a row
    may show (models and replays). Defaults: the first case of each family (dynamic_000,
    environment_000, human_000, object_000 on the embedded default), ``models`` (Table 2's, in
    config order), ``default_trajectory``. ValueError naming the key, the value, what was
    expected and the fix.
    """
    key = "worldmembench.figures"
    chosen = figures.get("cases")
    if chosen is None:
        firsts = {}
        for case, spec in cases.items():
            firsts.setdefault(spec["family"], case)
        chosen = list(firsts.values())
    models = figures.get("models", models)
    for kind, ids, valid in (("cases", chosen, cases), ("models", models, runs)):
        for value in ids:
            check_id(f"{key}.{kind}:", value, f"fix {key}.{kind}")
            if value not in valid:
                raise ValueError(f"{key}.{kind}: {value!r} is not one of this config's {kind} "
                                 f"({', '.join(valid)}); fix: name one of them or remove it")
    trajectories = figures.get("trajectories", {})
    for case, name in trajectories.items():
        if case not in chosen or name not in cases[case]["trajectories"]:
            raise ValueError(f"{key}.trajectories.{case} = {name!r}: expected a case of {key}.cases "
                             f"and one of its trajectories ({', '.join(cases.get(case, {}).get('trajectories', []))}); "
                             "fix: correct or remove it")
    return {case: (trajectories.get(case) or default_trajectory(cases[case]["trajectories"]), list(models))
            for case in chosen}


def _entry(rollouts: Path, trajectory: str) -> dict:
    """The rollout of ``trajectory`` in one model's case directory (its rollouts.json)."""
    manifest = read_unit_manifest(rollouts)
    found = [e for e in manifest["rollouts"] if e["trajectory"] == trajectory]
    if not found:
        raise ValueError(f"{rollouts}: no {trajectory} rollout; it has "
                         f"{', '.join(e['trajectory'] for e in manifest['rollouts'])}")
    return {**found[0], "ground_truth": manifest["ground_truth"]}


def target_masks(rollouts: Path, entry: dict, estimates: Path, targets: list[str], frames: list[int]):
    """{target: (len(frames), H, W) bool} at ``frames`` as the scores saw them (module doc), or
    the reason there are none."""
    if entry["ground_truth"]:
        with np.load(rollouts.parent / entry["truth"], allow_pickle=False) as npz:
            return {t: OraclePerception({"instance": npz["instance"][frames]}, entry["instances"]).target_masks(t)
                    for t in targets}
    if not (estimates / "tracking.npz").is_file():
        return "no tracks (worldmembench.perception.tracking is none)"
    tracks = EstimatedPerception({"tracking": load_estimates(estimates / "tracking.npz")},
                                 f"{entry['case']}/{entry['trajectory']}")
    return {t: tracks.target_masks(t)[frames] for t in targets}


def score_labels(scores: pd.DataFrame, family: str, trajectory: str) -> dict[int, str]:
    """Revisit k -> its label of short scores ('Id 0.93 · App 0.88'); n/a where a score is NaN."""
    metrics = SCORED[family]
    if family == "dynamic":
        rows = scores[(scores["trajectory"] == trajectory) & scores["metric"].isin(metrics)]
        values = {1: dict(zip(rows["metric"], rows["value"]))}
    else:
        table = revisit_scores(scores, trajectory)
        values = {int(k): dict(zip(rows["metric"], rows["score"])) for k, rows in table.groupby("revisit")}
    return {k: _label(metrics, found) for k, found in values.items()}


def _label(metrics, values: dict) -> str:
    parts = [f"{SHORT[m].split('.')[-1] or SHORT[m]} "
             + ("n/a" if np.isnan(values.get(m, np.nan)) else f"{values[m]:.2f}") for m in metrics]
    return "\n".join(" · ".join(parts[i:i + PER_LINE]) for i in range(0, len(parts), PER_LINE))


def case_figure(case_dir, results, models: list[str], trajectory: str) -> Figure:
    """One case's figure: a row per model of ``models`` (Figure 10: a comparison's variants), the
    columns of ``columns`` along ``trajectory``; ``results`` is the study's results folder
    (rollouts/, scores/, perception/)."""
    case, results = load_case(case_dir), Path(results)
    family = case["family"]
    targets = [t["id"] for t in case["targets"] if t["kind"] == BOXED.get(family)]
    rows, notes = [], []
    for model in models:
        rollouts = results / "rollouts" / model / case["id"]
        entry = _entry(rollouts, trajectory)
        shown = columns(load_trajectory(rollouts.parent / entry["trajectory_file"]), family)
        indices = [c.frame for c in shown]
        frames = read_video(rollouts.parent / entry["video"], indices)
        estimates = results / "perception" / model / case["id"]
        masks = target_masks(rollouts, entry, estimates, targets, indices) if targets else {}
        if isinstance(masks, str):
            notes.append(f"{model}: no box, {masks}")
            masks = {}
        score_dir = results / "scores" / model / "cases" / case["id"]
        scores = read_scores([score_dir / f"{'dynamic' if family == 'dynamic' else 'static'}.csv"])
        rows.append(Row(model, shown, frames, masks, score_labels(scores, family, trajectory)))
    return _draw(f"{case['id']} ({family}), {trajectory}", rows, notes)


def _draw(title: str, rows: list[Row], notes: list[str]) -> Figure:
    """The grid: frames, red boxes, column titles (phase · frame), model names, score labels."""
    n_cols = len(rows[0].columns)
    height, width = rows[0].frames.shape[1:3]
    lines = max((label.count("\n") + 1 for row in rows for label in row.labels.values()), default=0)
    cell_h = CELL_INCHES * height / width + 0.25 + 0.13 * lines  # room for a title and the scores
    fig = Figure(figsize=(CELL_INCHES * n_cols + 0.6, cell_h * len(rows) + 0.6), layout="constrained")
    axes = fig.subplots(len(rows), n_cols, squeeze=False)
    top = rows[0].columns
    for r, (model, shown, frames, masks, labels) in enumerate(rows):
        for c, (ax, column, frame) in enumerate(zip(axes[r], shown, frames)):
            ax.imshow(frame, interpolation="nearest")
            ax.set(xticks=[], yticks=[])
            if r == 0 or column.frame != top[c].frame:
                ax.set_title(f"{column.phase} · f{column.frame}", fontsize="small")
            for mask in (m[c] for m in masks.values()):
                if mask.any():
                    ys, xs = np.nonzero(mask)
                    ax.add_patch(Rectangle((xs.min() - 0.5, ys.min() - 0.5), xs.max() - xs.min() + 1,
                                           ys.max() - ys.min() + 1, fill=False, edgecolor="red", linewidth=1.2))
            if column.revisit:
                ax.set_xlabel(labels.get(column.revisit, "no scores"), fontsize="x-small")
        axes[r, 0].set_ylabel(model, fontsize="small")
    fig.suptitle(f"{title} (cf. WorldMemBench Figures 4, 6, 7, 10)", fontsize="medium")
    if notes:
        fig.supxlabel("; ".join(notes), fontsize="x-small")
    return fig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", required=True, help="the case's directory (its case.json)")
    parser.add_argument("--results", required=True, help="the study's results folder")
    parser.add_argument("--models", nargs="+", required=True, help="the rows, top to bottom")
    parser.add_argument("--trajectory", required=True)
    parser.add_argument("--out-png", required=True)
    parser.add_argument("--out-pdf", required=True)
    args = parser.parse_args(argv)
    for model in args.models:
        check_id("model", model, "name a model of worldmembench.models")
    fig = case_figure(args.case, args.results, args.models, args.trajectory)
    save_figure(fig, args.out_png, args.out_pdf)
    print(json.dumps({"figure": args.out_png, "models": args.models, "trajectory": args.trajectory}))


if __name__ == "__main__":
    main()
