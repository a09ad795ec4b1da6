#!/usr/bin/env bash
# One entry point for a fresh machine with Python 3.11:
#   ./run.sh                  build every default target (rule all) on the embedded default
#   ./run.sh test             run the test suite
#   ./run.sh snakemake ARGS   any Snakemake command inside the project's environment
# The first call creates .venv/ and installs the pinned dependencies (requirements.lock).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ] || ! cmp -s requirements.lock .venv/.installed.lock; then
    echo "[run.sh] installing pinned dependencies into .venv/ (once)" >&2
    "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -r requirements.lock
    cp requirements.lock .venv/.installed.lock
fi
export PATH="$PWD/.venv/bin:$PATH"

case "${1:-main}" in
    main) shift || true; exec snakemake --profile profiles/default "$@" ;;
    test) shift; exec python -m pytest "$@" ;;
    snakemake) shift; exec snakemake --profile profiles/default "$@" ;;
    *) echo "usage: ./run.sh [main | test [pytest args] | snakemake [args]]" >&2; exit 2 ;;
esac
