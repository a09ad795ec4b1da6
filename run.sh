#!/usr/bin/env bash
# One entry point for a fresh machine with Python 3.11:
#   ./run.sh                  build every default target (rule all) on the embedded default
#   ./run.sh test             run the test suite
#   ./run.sh lint             the style checks (ruff, snakefmt; configured in pyproject.toml)
#   ./run.sh snakemake ARGS   any Snakemake command inside the project's environment
# The first call creates .venv/ and installs the pinned dependencies (requirements.lock) and the
# worldmemory package (editable: scripts/ as it is checked out).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
# What is installed is recorded as the lock and pyproject.toml together: a change of either reinstalls.
if [ ! -x .venv/bin/python ] || ! cat requirements.lock pyproject.toml | cmp -s - .venv/.installed.lock; then
    echo "[run.sh] installing pinned dependencies and the worldmemory package into .venv/ (once)" >&2
    "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet --no-compile -r requirements.lock
    .venv/bin/python -m pip install --quiet --no-compile --no-deps --editable .
    # Byte-compiled on every core (pip compiles one file at a time: 90 of its 128 s here). Without
    # .pyc files every job would compile torch, pandas and scipy again where PYTHONDONTWRITEBYTECODE
    # is set. -qq and "|| true": torch ships a test file in Python 3.12 syntax, which pip skips too.
    .venv/bin/python -m compileall -qq -j 0 .venv/lib || true
    cat requirements.lock pyproject.toml > .venv/.installed.lock
fi
export PATH="$PWD/.venv/bin:$PATH"

# Snakemake runs through worldmemory.workflow.launch (scripts/worldmemory/workflow/launch.py): it
# checks the --configfile files (a YAML error says FILE:LINE:COLUMN), holds a flock on the working
# directory while Snakemake runs, stops if a Snakemake started without run.sh runs there, ends the
# jobs a killed Snakemake left running and removes its stale lock, so that rerunning the same
# command resumes (rerun-incomplete redoes the unfinished jobs).
snakemake_resuming() {
    exec python -m worldmemory.workflow.launch --profile profiles/default "$@"
}

case "${1:-main}" in
    main) shift || true; snakemake_resuming "$@" ;;
    test) shift; exec python -m pytest "$@" ;;
    lint) ruff check scripts tests && exec snakefmt --check Snakefile rules ;;
    snakemake) shift; snakemake_resuming "$@" ;;
    *) echo "usage: ./run.sh [main | test [pytest args] | lint | snakemake [args]]" >&2; exit 2 ;;
esac
