"""Table writing every study shares: byte-stable CSVs and the options that print a paper's
numbers beside ours. No study logic lives here.

    python -m worldmemory.report.tables --concat part.csv ... --out joined.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

DECIMALS = 6


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    """Write a table with a fixed line terminator, creating its folder."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False, lineterminator="\n")


def concat_csv(parts: list[Path], path: str | Path) -> int:
    """Join CSV files that share a header, text for text (so the joined file holds exactly the
    bytes each part was written with), into ``path``; returns the number of data rows."""
    header, rows = None, []
    for part in parts:
        lines = Path(part).read_text().splitlines(keepends=True)
        if not lines:
            raise ValueError(f"{part}: empty, expected at least a header")
        if header is None:
            header = lines[0]
        elif lines[0] != header:
            raise ValueError(f"{part}: its header differs from {parts[0]}'s; rebuild it")
        rows += lines[1:]
    if header is None:
        raise ValueError(f"nothing to join into {path}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(header + "".join(rows))
    return len(rows)


def add_paper_options(parser: argparse.ArgumentParser, values_file: str, example: str) -> None:
    """The options every table CLI shares for printing the paper's numbers beside ours."""
    parser.add_argument("--paper", help=values_file)
    parser.add_argument("--out-paper", help="side-by-side CSV; needs --paper")
    parser.add_argument("--paper-models", nargs="*", default=[], metavar="RUN=PAPER_MODEL",
                        help=f"our runs of the paper's models, e.g. {example}")


def paper_runs(parser: argparse.ArgumentParser, args) -> dict[str, str]:
    """Paper model -> our run, from --paper-models RUN=PAPER_MODEL (checks --paper/--out-paper)."""
    if bool(args.paper) != bool(args.out_paper):
        parser.error("--paper and --out-paper go together")
    return {paper_model: run for run, paper_model in (m.split("=", 1) for m in args.paper_models)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Join CSV files that share a header (concat_csv).")
    parser.add_argument("--concat", nargs="+", required=True, help="the parts, in order")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    print(f"[tables] {concat_csv(args.concat, args.out)} rows of {len(args.concat)} file(s) -> {args.out}")


if __name__ == "__main__":
    main()
