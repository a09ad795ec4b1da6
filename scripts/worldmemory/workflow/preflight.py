"""Before a cluster run: are its weights here, and what does one unit of each GPU job kind cost?

    ./run.sh preflight [TARGETS] --configfile config/paper.yaml my_model.yaml [--device cuda]

Run it on a GPU node of the cluster (e.g. inside ``srun --gres=gpu:1``) in the run's working
directory. Snakemake plans TARGETS (default: rule all) as ``./run.sh plan`` does
(worldmemory.workflow.dag); then, for the jobs still to run:

1. **Weights.** Every weights directory and checkpoint file those jobs read: present; to be
   fetched by a prefetch rule (network: those rules run where Snakemake runs, e.g. the login
   node); or to be trained by a job of the run. A configured local file that is missing stops the
   plan itself, with Snakemake's message naming it.
2. **One unit of each GPU job kind**, each in a process of its own (worldmemory.workflow.preflight_units):
   * ``probe``: one batch of probe clips of every permanence model the jobs probe, with its
     weights where they are here, else the same architecture at its real size with random
     weights (models.released; a model the workflow trains: its configured architecture);
   * ``cosmos``: one batch of the Cosmos-Predict1 readout's clips (tokenised, then scored),
     with its model and tokenizer where here, else the 4B transformer at its real size with
     random weights;
   * ``estimator``: every learned estimator the perception jobs run whose call it knows (features,
     tracking, depth, imaging and aesthetic quality; not ArcFace or a VLM judge), over ``--frames``
     frames of the study's video size (its weights where here, else perception.throughput's real-size
     random stand-in);
   * ``rollout``: the first case (or sequence) of every external model of the config, as its real
     rollout job (``./run.sh snakemake`` of that job's output: the run later reuses it). Its
     time and peak memory come from the job's benchmark file, its GPU memory from nvidia-smi,
     sampled every half second (the whole device's use, less what was in use before).
3. The table is printed and written to ``results/preflight/units.csv``, which ``./run.sh plan``
   reads: a rollout is then priced from its cost.json (``recorded``) and a perception job from
   the estimators' seconds per frame (``preflight``).

``--device`` overrides the config's devices (e.g. ``--device cpu`` for a rehearsal on a machine
without a GPU; ``--clips`` and ``--threads`` then keep a probe unit small); ``--sizes tiny``
builds the random estimator stand-ins at throughput's tiny sizes (the tests). The exit status
is 1 when a unit failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from worldmemory.perception.estimators import FILE_OPTIONS
from worldmemory.perception.throughput import ESTIMATORS
from worldmemory.workflow.dag import REPO, Job, snakemake_dag
from worldmemory.workflow.performance import read_benchmark
from worldmemory.workflow.preflight_units import TIMED_CAPABILITIES

PROBE_RULES = ("permanence_probe", "permanence_query", "permanence_intphys")
COSMOS_RULES = ("permanence_cosmos_evidence", "permanence_cosmos_loglik")
PERCEIVE_RULES = {"worldmembench_perceive": "worldmembench", "persistbench_perceive": "persistbench"}
ROLLOUT_RULES = {"worldmembench_rollout": "worldmembench", "persistbench_rollout": "persistbench"}
PRODUCERS = ("prefetch_", "permanence_train", "permanence_videomae_train", "permanence_curriculum")
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".ckpt", ".bin", ".onnx", ".jit")
UNITS_CSV = Path("results/preflight/units.csv")
COLUMNS = ["kind", "name", "device", "weights", "input", "wall_s", "cpu_s", "per", "s_per_frame", "peak_rss_mb",
           "peak_gpu_mb", "note"]


def weights_report(jobs: list[Job], directory: Path) -> pd.DataFrame:
    """Every weights path the jobs to run read: path, status, the rules that read it."""
    producer = {out: job for job in jobs for out in job.outputs if job.rule.startswith(PRODUCERS)}
    readers: dict[str, set[str]] = {}
    for job in jobs:
        if job.needrun:
            for path in job.inputs:
                if path in producer or is_weights(directory / path):
                    readers.setdefault(path, set()).add(job.rule)
    rows = []
    for path, rules in sorted(readers.items()):
        made = producer.get(path)
        if made is None:
            status = "present" if (directory / path).exists() else "missing"
        elif not made.needrun:
            status = "present"
        elif made.rule.startswith("prefetch_"):
            status = f"to fetch (rule {made.rule}; needs network, runs where Snakemake runs)"
        else:
            status = f"to train (rule {made.rule}, a job of this run)"
        rows.append({"weights": path, "status": status, "read_by": ", ".join(sorted(rules))})
    return pd.DataFrame(rows, columns=["weights", "status", "read_by"])


def is_weights(path: Path) -> bool:
    """Whether a path no job makes is a checkpoint: a weights file (by its suffix), or a directory
    holding a config.json or weights files (not, e.g., resources/paper_values/*.csv)."""
    if path.name.endswith(WEIGHT_SUFFIXES):
        return True
    return path.is_dir() and ((path / "config.json").exists() or any(
        p.name.endswith(WEIGHT_SUFFIXES) for p in path.iterdir()))


def run_settings(job: Job, batch: int, device: str | None, clips: int | None, threads: int | None) -> dict:
    """A clip unit's batch, device and threads: the job's (``batch``, its device param and cores),
    or the preflight's ``clips``, ``device`` and ``threads`` where given."""
    return {"batch": clips or batch, "device": device or job.params["device"],
            "threads": threads or int(job.resources.get("_cores", 1))}


def probe_units(jobs: list[Job], directory: Path, device: str | None, clips: int | None = None,
                threads: int | None = None) -> list[dict]:
    """One probe unit per permanence model the jobs to run probe (its first job's spec, weights and
    run_settings)."""
    units = {}
    for job in jobs:
        model = job.wildcards.get("model")
        if job.needrun and job.rule in PROBE_RULES and model not in units:
            weights = job.named_inputs.get("weights") or None
            present = weights is not None and (directory / weights).is_dir()
            units[model] = {"kind": "probe", "name": model, "spec": json.loads(job.params["spec"]),
                            "weights": str(directory / weights) if present else None,
                            **run_settings(job, int(job.params["batch"]), device, clips, threads)}
    return list(units.values())


def cosmos_units(jobs: list[Job], directory: Path, device: str | None, clips: int | None = None,
                 threads: int | None = None) -> list[dict]:
    """The Cosmos readout's unit, when a job to run reads it (its spec, model, tokenizer and
    run_settings)."""
    for job in jobs:
        if job.needrun and job.rule in COSMOS_RULES:
            spec = json.loads(job.params["spec"])
            files = {k: job.named_inputs.get(k) for k in ("model", "tokenizer")}
            present = all(f and (directory / f).exists() for f in files.values())
            return [{"kind": "cosmos", "name": spec["name"], "spec": spec,
                     "weights": str(directory / files["model"]) if present else None,
                     "tokenizer": str(directory / files["tokenizer"]) if present else None,
                     **run_settings(job, int(spec.get("batch_size", 8)), device, clips, threads)}]
    return []


def timed_estimator(capability: str, spec: dict) -> bool:
    """Whether the preflight times a perception job's estimator (``{backend, options | skip}``): a
    learned one (weights in its options, or a random stand-in in perception.throughput) of a
    capability preflight_units calls; not the CPU estimators, ArcFace's ONNX files or a VLM judge."""
    if spec.get("skip") or capability not in TIMED_CAPABILITIES:
        return False
    options = spec.get("options", {})
    return f"{capability}/{spec['backend']}" in ESTIMATORS or any(k in options for k in ("model", *FILE_OPTIONS))


def estimator_units(jobs: list[Job], config: dict, directory: Path, device: str | None, frames: int,
                    sizes: str) -> list[dict]:
    """One unit per estimator the perception jobs to run use that the preflight times
    (timed_estimator), at the study's video size."""
    units = {}
    for job in jobs:
        study = PERCEIVE_RULES.get(job.rule)
        if not (job.needrun and study):
            continue
        height, width = video_size(config, study)
        for capability, spec in perceive_estimators(job).items():
            name = f"{capability}/{spec['backend']}"
            if not timed_estimator(capability, spec) or (study, name) in units:
                continue
            options = dict(spec.get("options", {}))
            files = [options[k] for k in ("model", *FILE_OPTIONS) if k in options]
            if device:
                options["device"] = device
            present = bool(files) and all((directory / f).exists() for f in files)
            units[(study, name)] = {"kind": "estimator", "name": f"{study}: {name}", "capability": capability,
                                    "backend": spec["backend"], "options": options, "weights": present,
                                    "frames": frames, "height": height, "width": width, "sizes": sizes,
                                    "device": options.get("device", "cpu")}
    return list(units.values())


def perceive_estimators(job: Job) -> dict:
    """capability -> {backend, options | skip} of a perception job (its --estimators argument)."""
    args = shlex.split(job.params["estimators_args"])
    return json.loads(args[args.index("--estimators") + 1])


def video_size(config: dict, study: str) -> tuple[int, int]:
    """(height, width) of the videos a study's estimators read."""
    block = config[study]["cases"] if study == "worldmembench" else config[study]["camera"]
    return int(block["height"]), int(block["width"])


def rollout_targets(jobs: list[Job], config: dict) -> dict[str, Job]:
    """'<study>: <model>' -> the first rollout job to run of each external model of the config."""
    first = {}
    for job in sorted(jobs, key=lambda j: sorted(j.wildcards.items())):
        study = ROLLOUT_RULES.get(job.rule)
        model = job.wildcards.get("model")
        spec = config.get(study, {}).get("models", {}).get(model, {}) if study else {}
        if job.needrun and spec.get("kind") == "external":
            first.setdefault(f"{study}: {model}", job)
    return first


def run_unit(unit: dict, directory: Path) -> dict:
    """A probe or estimator unit's row, run by preflight_units in its own process."""
    argument = {**unit, "repeats": 2 if unit["device"].startswith("cuda") else 1}  # a GPU's second run: kernels chosen
    proc = subprocess.run([sys.executable, "-m", "worldmemory.workflow.preflight_units", json.dumps(argument)],
                          cwd=directory, capture_output=True, text=True)
    row = {"kind": unit["kind"], "name": unit["name"], "device": unit["device"]}
    if proc.returncode != 0:
        return {**row, "note": "failed: " + " ".join(proc.stderr.strip().splitlines()[-3:])}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skipped" in result:
        return {**row, "note": "not run: " + result["skipped"]}
    per = f"{result['clips']} clips" if "clips" in result else f"{result['frames']} frames"
    frames = result["frames"] * (result.get("clips") or 1)
    return {**row, "weights": result["weights"], "input": result["input"], "wall_s": result["wall_s"],
            "cpu_s": result["cpu_s"], "per": per,
            "s_per_frame": result["wall_s"] / frames, "peak_rss_mb": result["peak_rss_mb"],
            "peak_gpu_mb": result["peak_gpu_mb"]}


def run_rollouts(targets: dict[str, Job], configfiles: list[Path], directory: Path) -> list[dict]:
    """Each external model's first rollout job, run by Snakemake in ``directory``: its rows."""
    if not targets:
        return []
    outputs = [out for job in targets.values() for out in job.outputs]
    command = [sys.executable, "-m", "worldmemory.workflow.launch", "--profile", str(REPO / "profiles" / "default"),
               "--directory", str(directory), "--snakefile", str(REPO / "Snakefile"), *outputs,
               *(["--configfile", *map(str, configfiles)] if configfiles else [])]
    print(f"[preflight] rolling out {', '.join(targets)}: {shlex.join(command)}", file=sys.stderr, flush=True)
    with gpu_memory_sampler() as sampled:
        # the jobs' `python` is this environment's, as under ./run.sh
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        status = subprocess.run(command, cwd=REPO, env={**os.environ, "PATH": path}).returncode
    rows = []
    for name, job in targets.items():
        row = {"kind": "rollout", "name": name, "device": f"gpu={job.resources.get('gpu', 0)}", "weights": "real",
               "peak_gpu_mb": sampled.get("peak_mb")}
        bench = directory / job.benchmark
        if status != 0 or not bench.exists():
            rows.append({**row, "note": f"failed: the Snakemake run exited {status}; see its log above"})
            continue
        record = read_benchmark(bench)
        costs = [json.loads(p.read_text()) for p in sorted((directory / job.outputs[0]).glob("**/cost.json"))]
        frames = sum(c.get("n_frames") or 0 for c in costs)
        rows.append({**row, "input": f"{len(costs)} videos, {frames} frames", "wall_s": record["wall_s"],
                     "cpu_s": record["cpu_s"],
                     "per": "1 rollout job", "s_per_frame": record["wall_s"] / frames if frames else None,
                     "peak_rss_mb": record["max_rss_mb"]})
    return rows


@contextmanager
def gpu_memory_sampler(every_s: float = 0.5):
    """Sample the GPUs' used memory (nvidia-smi) while the body runs: yields a dict that holds
    ``peak_mb`` (the largest total less the total before) afterwards; empty without nvidia-smi."""
    result: dict = {}
    smi = shutil.which("nvidia-smi")
    if smi is None:
        yield result
        return

    def used() -> int:
        out = subprocess.run([smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout
        return sum(int(v) for v in out.split() if v.isdigit())

    base, peak, stop = used(), [0], threading.Event()

    def sample():
        while not stop.wait(every_s):
            peak[0] = max(peak[0], used() - base)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield result
    finally:
        stop.set()
        thread.join()
        result["peak_mb"] = peak[0]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", help="the targets of the run (default: rule all)")
    ap.add_argument("--configfile", "--configfiles", nargs="+", type=Path, default=[],
                    help="the run's config files (default: the embedded config/config.yaml)")
    ap.add_argument("--directory", "-d", type=Path, default=Path("."), help="the run's working directory")
    ap.add_argument("--device", help="run every unit on this device instead of the config's (e.g. cpu)")
    ap.add_argument("--frames", type=int, default=16, help="frames of an estimator unit (default 16)")
    ap.add_argument("--clips", type=int, help="clips of a probe or Cosmos unit (default: the job's batch)")
    ap.add_argument("--threads", type=int, help="CPU threads of a probe or Cosmos unit (default: the job's)")
    ap.add_argument("--sizes", choices=["real", "tiny"], default="real",
                    help="the random estimator stand-ins' sizes (tiny: the tests)")
    ap.add_argument("--only", nargs="+", choices=["weights", "probe", "estimator", "rollout"],
                    default=["weights", "probe", "estimator", "rollout"], help="what to check (default: all)")
    args = ap.parse_args(argv)
    directory = args.directory.absolute()
    configfiles = [f.absolute() for f in args.configfile]
    try:
        config, jobs = snakemake_dag(configfiles, args.targets, directory)
    except ValueError as e:
        raise SystemExit(f"[preflight] {e}") from None
    if "weights" in args.only:
        print(weights_report(jobs, directory).to_string(index=False) or "no weights to read")
    units = []
    if "probe" in args.only:
        units += probe_units(jobs, directory, args.device, args.clips, args.threads)
        units += cosmos_units(jobs, directory, args.device, args.clips, args.threads)
    if "estimator" in args.only:
        units += estimator_units(jobs, config, directory, args.device, args.frames, args.sizes)
    rows = []
    for unit in units:
        print(f"[preflight] {unit['kind']} {unit['name']} on {unit['device']}", file=sys.stderr, flush=True)
        rows.append(run_unit(unit, directory))
    if "rollout" in args.only:
        rows += run_rollouts(rollout_targets(jobs, config), configfiles, directory)
    if not units and "rollout" not in args.only:
        return
    table = pd.DataFrame(rows, columns=COLUMNS).fillna({"peak_gpu_mb": float("nan")})
    out = directory / UNITS_CSV
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False, lineterminator="\n")
    print(table.to_string(index=False, na_rep="-") if len(table) else "no GPU job kinds to run")
    print(f"[preflight] written {UNITS_CSV} in {directory}; ./run.sh plan prices from it", file=sys.stderr)
    if any(str(note).startswith("failed") for note in table["note"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
