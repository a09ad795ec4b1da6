"""The workflow's package inside the conda environments Snakemake creates (``--sdm conda``).

Snakemake copies an environment file into ``.snakemake/conda/`` before creating it, so a pip
line with a relative path cannot name this checkout; after creating an environment it runs the
file's ``<name>.post-deploy.sh`` inside it (envs/), which reads the checkout from the
environment variable exported here and makes ``python -m worldmemory...`` importable there
without PYTHONPATH, as an editable install would.
"""

import os

CHECKOUT_VARIABLE = "WORLDMEMORY_CHECKOUT"


def export_checkout(repo: str) -> None:
    """Tell the post-deploy scripts, which Snakemake runs as child processes, where the package is."""
    os.environ[CHECKOUT_VARIABLE] = os.path.abspath(repo)
