"""Per-job wall time and memory of a run, from the `benchmark:` files of its rules.

Every rule that does real work writes Snakemake's benchmark record to
``results/benchmarks/<study>/<job>.tsv`` (wall seconds, CPU seconds, peak resident memory of the
job's processes); a job per case writes ``<study>/<stage>[/<model>]/<case>.tsv``, and the table
shows such jobs as one row per directory (their times added, the largest memory). This turns them
into docs/performance.md's per-job table, so that the performance section is data from a run, not
hand-copied numbers:

    python -m worldmemory.workflow.performance                      # print the table
    python -m worldmemory.workflow.performance --readme docs/performance.md   # rewrite it there

The page holds the table between the two MARKERS; nothing else of it is touched.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

MARKERS = ("<!-- performance:begin -->", "<!-- performance:end -->")


def read_benchmarks(root) -> list[dict]:
    """One row per benchmark file under ``root``: job (its path without .tsv), wall_s, cpu_s,
    max_rss_mb (the last record of a file that holds several repeats)."""
    return [{"job": path.relative_to(root).with_suffix("").as_posix(), **read_benchmark(path)}
            for path in sorted(Path(root).rglob("*.tsv"))]


def read_benchmark(path) -> dict:
    """One benchmark file's wall_s, cpu_s and max_rss_mb (its last record)."""
    with open(path, newline="") as f:
        records = list(csv.DictReader(f, delimiter="\t"))
    if not records:
        raise ValueError(f"{path}: no benchmark record (expected Snakemake's s / cpu_time / max_rss)")
    last = records[-1]
    return {"wall_s": float(last["s"]), "cpu_s": float(last["cpu_time"]), "max_rss_mb": _number(last["max_rss"])}


def _number(value: str) -> float:
    return float(value) if value not in ("", "NA", "-") else float("nan")


def per_directory(rows: list[dict]) -> list[dict]:
    """The rows with each directory of per-case jobs (a job name of three or more parts) joined
    into one: job ``<directory> (N jobs)``, wall and CPU seconds added, the largest memory."""
    groups = {}
    for row in rows:
        parts = row["job"].split("/")
        groups.setdefault("/".join(parts[:-1]) if len(parts) >= 3 else row["job"], []).append(row)
    joined = []
    for key, members in sorted(groups.items()):
        n = len(members)
        name = key if n == 1 and members[0]["job"] == key else f"{key} ({n} job{'s' if n > 1 else ''})"
        joined.append({"job": name, "wall_s": sum(r["wall_s"] for r in members),
                       "cpu_s": sum(r["cpu_s"] for r in members), "max_rss_mb": max(r["max_rss_mb"] for r in members)})
    return joined


def markdown(rows: list[dict]) -> str:
    """The per-job table (per_directory) with a total row (wall seconds add up as if the jobs ran
    one after another; with several cores the run takes less)."""
    if not rows:
        raise ValueError("no benchmark files: run the workflow first (results/benchmarks/)")
    lines = ["| job | wall s | CPU s | peak memory MB |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| `{r['job']}` | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['max_rss_mb']:.0f} |"
              for r in per_directory(rows)]
    wall, cpu = sum(r["wall_s"] for r in rows), sum(r["cpu_s"] for r in rows)
    peak = max(r["max_rss_mb"] for r in rows)
    lines.append(f"| all {len(rows)} jobs (one after another) | {wall:.1f} | {cpu:.1f} | {peak:.0f} (largest) |")
    return "\n".join(lines) + "\n"


def replace_section(text: str, table: str) -> str:
    """``text`` with everything between the MARKERS replaced by ``table``."""
    begin, end = MARKERS
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"the page needs one {begin} line followed by one {end} line")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{table}{end}{tail}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmarks", default="results/benchmarks", type=Path)
    ap.add_argument("--readme", type=Path, help="rewrite the table between the markers of this file")
    args = ap.parse_args(argv)
    try:
        table = markdown(read_benchmarks(args.benchmarks))
    except ValueError as e:  # no run yet
        raise SystemExit(f"[performance] {e}") from None
    if args.readme:
        args.readme.write_text(replace_section(args.readme.read_text(), table))
    print(table, end="")


if __name__ == "__main__":
    main()
