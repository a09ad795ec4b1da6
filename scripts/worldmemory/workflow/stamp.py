"""The resolved config as a file that every table depends on, so that no table outlives its config.

Snakemake reruns a job whose params changed only when it holds metadata for every output of the
job; results copied from elsewhere, a deleted ``.snakemake/`` or ``--rerun-triggers mtime`` leave
it with file dates alone, and a table built under another config would be kept. The stamp closes
that gap with file dates: the Snakefile rewrites it whenever the resolved config differs from the
one it holds, so it is newer than every table built before the change and each is rebuilt.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def config_text(config: dict) -> str:
    """The stamp's bytes: the config as sorted, indented JSON (what provenance sidecars hash)."""
    return json.dumps(config, sort_keys=True, indent=1) + "\n"


def stamp_differs(path: Path, config: dict) -> bool:
    """Whether the stamp at ``path`` is missing or holds another config."""
    try:
        return Path(path).read_text() != config_text(config)
    except FileNotFoundError:
        return True


def update_stamp(path: Path, config: dict) -> bool:
    """Write the stamp when it differs (atomically: a reader never sees half a file); True if
    written. An unchanged config leaves the file and its date alone, so nothing reruns."""
    path = Path(path)
    if not stamp_differs(path, config):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as f:
        f.write(config_text(config))
    os.replace(f.name, path)
    return True
