#!/usr/bin/env bash
# Post-deploy script of envs/*.yaml (each <env>.post-deploy.sh links here): Snakemake runs it in
# a conda environment it has just created, and it makes this workflow's package importable there
# without PYTHONPATH (python -m worldmemory...), as an editable install would: a .pth file naming
# the checkout's scripts/, which the Snakefile exports (worldmemory/workflow/conda_envs.py).
set -euo pipefail
checkout=${WORLDMEMORY_CHECKOUT:?"set by the workflow's Snakefile; run this through snakemake --sdm conda"}
site=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$checkout/scripts" > "$site/worldmemory.pth"
echo "worldmemory: $checkout/scripts on the path of $(python -c 'import sys; print(sys.prefix)')"
