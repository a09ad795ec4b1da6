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

# Snakemake leaves its directory lock behind when it is killed (SIGKILL, power loss), and the
# next run refuses to start. run.sh holds a flock on the working directory while Snakemake runs;
# the kernel drops it when the holder dies, so a lock found while we hold the flock is stale and
# is removed: rerunning the same command resumes (rerun-incomplete redoes the unfinished jobs).
snakemake_resuming() {
    local workdir=. previous=
    for arg in "$@"; do
        case "$previous" in --directory|-d) workdir=$arg ;; esac
        case "$arg" in --directory=*) workdir=${arg#--directory=} ;; esac
        previous=$arg
    done
    mkdir -p "$workdir/.snakemake"
    exec 9>"$workdir/.snakemake/run.sh.flock"
    if ! flock -n 9; then
        echo "[run.sh] another ./run.sh is running in $workdir; wait for it to finish" >&2
        exit 1
    fi
    if [ -n "$(ls -A "$workdir/.snakemake/locks" 2>/dev/null)" ]; then
        echo "[run.sh] removing the lock of a run that was killed; resuming" >&2
        rm -f "$workdir"/.snakemake/locks/*
    fi
    exec snakemake --profile profiles/default "$@"
}

case "${1:-main}" in
    main) shift || true; snakemake_resuming "$@" ;;
    test) shift; exec python -m pytest "$@" ;;
    snakemake) shift; snakemake_resuming "$@" ;;
    *) echo "usage: ./run.sh [main | test [pytest args] | snakemake [args]]" >&2; exit 2 ;;
esac
