#!/usr/bin/env bash
# One entry point for a fresh machine with Python 3.11:
#   ./run.sh                  build every default target (rule all) on the embedded default
#   ./run.sh test             run the test suite (and, where .venv-perception/ exists, its tests
#                             marked torchvision there)
#   ./run.sh perception-env   create .venv-perception/ from requirements-perception.lock: torch's
#                             regular build, torchvision and pyiqa, for the learned estimators' tests
#   ./run.sh lint             the style checks (ruff, snakefmt; configured in pyproject.toml)
#   ./run.sh snakemake ARGS   any Snakemake command inside the project's environment
#   ./run.sh plan [ARGS]      the jobs, GPU-hours and wall time of a run before it starts
#   ./run.sh progress [ARGS]  how many cases each model has done, per study and stage
#   ./run.sh preflight [ARGS] on the GPU node before a cluster run: the weights the run reads, and
#                             one unit of each GPU job kind timed (docs/running.md "Preflight")
#   ./run.sh forget MODEL     remove a model's rollouts, stored rollouts and everything built from
#                             them (--dry-run: only list them), so the next run makes them again
# The first call creates .venv/ and installs the pinned dependencies (requirements.lock) and the
# worldmemory package (editable: scripts/ as it is checked out).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
UV_VERSION=0.13.9
# What is installed is recorded as the lock and pyproject.toml together: a change of either reinstalls.
if [ ! -x .venv/bin/python ] || ! cat requirements.lock pyproject.toml | cmp -s - .venv/.installed.lock; then
    echo "[run.sh] installing pinned dependencies and the worldmemory package into .venv/ (once)" >&2
    "$PYTHON" -m venv .venv
    # uv installs the lock about 3x faster than pip (parallel downloads and unpacking; 20 s against
    # 71 s here). Like pip, it takes torch's CPU wheel from pip's find-links (PIP_FIND_LINKS or
    # pip's config file, which uv does not read) where those name one.
    .venv/bin/python -m pip install --quiet "uv==$UV_VERSION"
    find_links=${PIP_FIND_LINKS:-$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true)}
    .venv/bin/python -m uv pip install --quiet --python .venv/bin/python --no-compile \
        ${find_links:+--find-links "$find_links"} -r requirements.lock
    .venv/bin/python -m uv pip install --quiet --python .venv/bin/python --no-compile --no-deps \
        --editable .
    cat requirements.lock pyproject.toml > .venv/.installed.lock
fi
export PATH="$PWD/.venv/bin:$PATH"
# Python writes each module's .pyc on its first import, so later jobs skip compiling torch, pandas
# and scipy again. Where PYTHONDONTWRITEBYTECODE is set (these machines) every job compiled them
# from source (2-3x slower jobs); compiling all of .venv/lib at install took 56 s, the modules the
# jobs import take about 20 s once.
unset PYTHONDONTWRITEBYTECODE

# Snakemake runs through worldmemory.workflow.launch (scripts/worldmemory/workflow/launch.py): it
# checks the --configfile files (a YAML error says FILE:LINE:COLUMN), holds a flock on the working
# directory while Snakemake runs, stops if a Snakemake started without run.sh runs there, ends the
# jobs a killed Snakemake left running and removes its stale lock, so that rerunning the same
# command resumes (rerun-incomplete redoes the unfinished jobs).
# .venv-perception/: requirements-perception.lock (requirements.lock plus torchvision and pyiqa, torch's
# regular PyPI build) installed as locked (--no-deps: the lock leaves facexlib out), without pip's
# find-links, which name the CPU build of torch. Measured here: 12 s with uv's cache warm, 6.0 GB.
perception_env() {
    local venv=.venv-perception
    if [ -x "$venv/bin/python" ] && cat requirements-perception.lock pyproject.toml | cmp -s - "$venv/.installed.lock"; then
        return
    fi
    echo "[run.sh] installing requirements-perception.lock and the worldmemory package into $venv/ (once)" >&2
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "uv==$UV_VERSION"
    "$venv/bin/python" -m uv pip install --quiet --python "$venv/bin/python" --no-compile --no-deps \
        -r requirements-perception.lock
    "$venv/bin/python" -m uv pip install --quiet --python "$venv/bin/python" --no-compile --no-deps --editable .
    cat requirements-perception.lock pyproject.toml > "$venv/.installed.lock"
}

# The suite in .venv/, then the tests marked torchvision in .venv-perception/ where it exists
# (pytest's 5, no test selected there, is not a failure); either's failure fails the run.
run_tests() {
    local status=0
    python -m pytest "$@" || status=$?
    if [ -x .venv-perception/bin/python ]; then
        perception_env
        local perception=0
        .venv-perception/bin/python -m pytest -m torchvision "$@" || perception=$?
        if [ "$perception" != 0 ] && [ "$perception" != 5 ]; then status=$perception; fi
    else
        echo "[run.sh] the tests marked torchvision (MUSIQ through pyiqa; SAM2, SAM3 and the Qwen-VL" \
            "judge through their processors) were skipped: create their environment with" \
            "./run.sh perception-env (6 GB), then rerun" >&2
    fi
    return "$status"
}

# profiles/default (local runs) unless the command names its own profile: Snakemake merges every
# --profile it is given, and profiles/default's cores: 2 would cap each SLURM job at 2 threads.
snakemake_resuming() {
    local profile=(--profile profiles/default) arg
    for arg in "$@"; do
        case "$arg" in --profile|--profile=*) profile=() ;; esac
    done
    exec python -m worldmemory.workflow.launch "${profile[@]}" "$@"
}

case "${1:-main}" in
    main) shift || true; snakemake_resuming "$@" ;;
    test) shift; run_tests "$@" ;;
    perception-env) perception_env ;;
    lint) ruff check scripts tests && exec snakefmt --check Snakefile rules ;;
    snakemake) shift; snakemake_resuming "$@" ;;
    plan) shift; exec python -m worldmemory.workflow.plan "$@" ;;
    progress) shift; exec python -m worldmemory.workflow.progress "$@" ;;
    preflight) shift; exec python -m worldmemory.workflow.preflight "$@" ;;
    forget) shift; exec python -m worldmemory.workflow.forget "$@" ;;
    *) echo "usage: ./run.sh [main | test [pytest args] | perception-env | lint | snakemake [args] | plan [args] | progress [args] | preflight [args] | forget MODEL [--dry-run]]" >&2
       exit 2 ;;
esac
