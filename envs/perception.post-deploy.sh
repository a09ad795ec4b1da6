#!/usr/bin/env bash
# Post-deploy script of envs/perception.yaml: pyiqa without its dependencies (the env pins all of
# them but facexlib, whose opencv-python would overwrite opencv-python-headless's cv2; pyiqa
# imports it only for its face metric), at requirements-perception.lock's version
# (tests/test_envs.py checks it), then the workflow's package as in every env.
set -euo pipefail
checkout=${WORLDMEMORY_CHECKOUT:?"set by the workflow's Snakefile; run this through snakemake --sdm conda"}
python -m pip install --no-deps pyiqa==0.1.16
exec bash "$checkout/envs/install-worldmemory.sh"
