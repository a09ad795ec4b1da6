"""Provenance sidecars: what produced a table, so that every number can be traced and rebuilt.

A sidecar holds the config and its hash, the git commit of the workflow, the versions of the
packages of the environment the table job ran in, the device, the seeds, the models (weights
digests, and the packages of the environment each model job ran in: under ``--sdm conda`` the
model jobs and the table jobs use different environments) and the sha256 of each output it
describes. It holds no timestamps, so the same run gives the same sidecar.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[3]  # the workflow checkout this package runs from


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def git_state(repo) -> dict:
    """Commit of the workflow checkout and whether tracked files differ from it."""
    def git(*args):
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"commit": "unknown", "dirty": None}


def package_versions() -> dict:
    """Python and every distribution installed where this process runs, name -> version.

    Read from the environment itself, not from a list of expected packages: a job in a conda
    environment without torch records no torch (rather than a null), and one with it records
    the version installed there.
    """
    versions = dict(filter(None, map(name_version, metadata.distributions())))
    return {"python": platform.python_version(), **versions}


def name_version(dist: metadata.Distribution) -> tuple[str, str | None] | None:
    """A distribution's Name and Version, read from its metadata's header lines only.

    ``dist.metadata`` parses the whole file, long description included, as an e-mail message:
    0.16 s for the 129 distributions of this project's environment (0.01 s this way), in every
    per-case score job.
    """
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    fields = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in fields:
            fields[key] = value.strip()
    return (fields["Name"], fields.get("Version")) if fields.get("Name") else None


def write_job_info(path, **fields) -> None:
    """A model job's own sidecar: ``fields`` (model, device, ...) and the packages of the
    environment it ran in, which the table sidecars list under "models"."""
    write_info(path, {**fields, "packages": package_versions()})


def write_info(path, record: dict) -> None:
    Path(path).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def joined_job_info(paths) -> dict:
    """One sidecar for a model's per-case score jobs (run with one config in one environment): the
    first case's, with the first feature backend any of them loaded (a case that reads no features
    records none)."""
    infos = [json.loads(Path(p).read_text()) for p in paths]
    return {**infos[0], "features": next((i["features"] for i in infos if i["features"]), None)}


def provenance(config: dict, repo, models: list[dict], outputs: list, seeds: dict) -> dict:
    return {
        "config_sha256": config_hash(config),
        "config": config,
        "git": git_state(repo),
        "packages": package_versions(),
        "device": config.get("device", "cpu"),
        "seeds": seeds,
        "models": models,
        "outputs": {Path(p).name: file_sha256(p) for p in outputs},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, type=Path,
                    help="the resolved workflow config, a JSON file (results/config/resolved.json)")
    ap.add_argument("--seeds", default="{}", help="seeds of this study (JSON)")
    ap.add_argument("--repo", default=str(CHECKOUT), help="the workflow checkout (for the git commit)")
    ap.add_argument("--model-info", nargs="*", default=[], help="JSON files describing each model")
    ap.add_argument("--outputs", nargs="+", required=True, help="files this sidecar describes")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    models = [json.loads(Path(p).read_text()) for p in args.model_info]
    record = provenance(json.loads(args.config.read_text()), args.repo, models, args.outputs, json.loads(args.seeds))
    Path(args.out).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
