"""A learned estimator through the real rules: its weights prefetched once by id and revision,
read offline by its own perception job with the resources its config entry names, feeding the
metric family that needs it (here the LAION aesthetic predictor and the quality family)."""

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from torch import nn
from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "config" / "tiny_worldmembench.yaml"
STILL = {"kind": "external", "runtime": 5,
         "command": "python -m worldmemory.worldmembench.still_model --request {request}"}
CLIP_ID, REVISION = "openai/clip-vit-large-patch14", "32bd64288804d66eefd0ccbe215aa642df71cc41"
PREFETCHED = f"resources/models/perception/openai__clip-vit-large-patch14@{REVISION}"
HEAD = "resources/laion/sa_0_4_vit_l_14_linear.pth"
MUSIQ = "resources/musiq/musiq_spaq_ckpt-358bb6af.pth"  # config/paper.yaml's imaging_quality.weights
FACE_MODELS = ("resources/faces/face_detection_yunet_2023mar.onnx", "resources/faces/w600k_r50.onnx")
pytestmark = pytest.mark.workflow


def jobs(dry_run: str, rule: str) -> dict[str, str]:
    """The blocks of a dry run's jobs of ``rule``, by their wildcards line."""
    blocks = dry_run.split(f"rule {rule}:")[1:]
    return {b.split("wildcards: ")[1].splitlines()[0]: b for b in blocks}


def estimators_of(block: str) -> dict:
    """The --estimators JSON of a perception job's shell command."""
    words = shlex.split(block.split("Shell command: ")[1].splitlines()[0])
    return json.loads(words[words.index("--estimators") + 1])


def test_the_papers_config_lists_each_learned_estimator_job_with_its_resources(tmp_path, snakemake):
    """config/paper.yaml with an external model: a dry run of every default target here (no
    weights, no GPU) lists the GPU jobs with their resources, plans the fetch on the node that runs
    Snakemake and, per case, a perception job that runs the estimators reading that case's family
    (a GPU job where one of them is learned) from the fetched copy offline, the judges as CPU
    clients of a served VLM, and a feature ablation's weights fetched like an estimator's; a missing
    head file stops the run before any job, naming the file; ArcFace reads its two ONNX files, MUSIQ
    its weights file."""
    config = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    config["worldmembench"]["models"]["example"] = STILL
    config["worldmembench"]["perception"]["faces"] = {  # paper.yaml's commented entry, files placed
        "backend": "arcface", "detector": FACE_MODELS[0], "recognizer": FACE_MODELS[1], "runtime": 20}
    config["persistbench"]["features"] = {"backend": "clip", "model": CLIP_ID, "revision": REVISION}  # the ablation
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(config))
    missing = snakemake(tmp_path, path, "-n", "results/table2.csv", check=False)
    named = f"worldmembench.perception.aesthetic_quality.head = {HEAD!r}: no such file"  # the key, the file
    assert missing.returncode != 0 and named in missing.stdout + missing.stderr
    for stand_in in (HEAD, MUSIQ, *FACE_MODELS):
        (tmp_path / stand_in).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / stand_in).write_bytes(b"stand-in")
    dry = snakemake(tmp_path, path, "-n", "-p").stdout  # every default target of the three studies
    for rule, wildcards in (("permanence_probe", "model=vjepa2-vitg-fpc64-256"),
                            ("worldmembench_score", "model=omniscient, case=human_single_person_000"),
                            ("persistbench_score", "model=omniscient, sequence=static_000")):
        assert "gpu=1" in jobs(dry, rule)[wildcards].split("Shell command")[0], (rule, wildcards)
    fetch = jobs(dry, "prefetch_perception")
    assert list(fetch) == [f"slug=openai__clip-vit-large-patch14@{REVISION}"]
    assert f"--id {CLIP_ID} --revision {REVISION}" in next(iter(fetch.values()))
    perceive = jobs(dry, "worldmembench_perceive")
    assert len(perceive) == 260 * 5  # the example and the four replays, each case once
    human = perceive["model=example, case=human_single_person_000"]
    # tracking, camera, faces, imaging and aesthetic quality read a human case, one after another
    assert "gpu=1" in human and "mem_mb=16000" in human and f"runtime={15 + 15 + 20 + 10 + 10}" in human
    assert "export HF_HUB_OFFLINE=1" in human and "gpu_slot 1 python -m " in human
    estimators = estimators_of(human)
    assert {c for c, e in estimators.items() if not e.get("skip")} == {
        "tracking", "camera", "faces", "imaging_quality", "aesthetic_quality"}
    aesthetic = estimators["aesthetic_quality"]
    assert aesthetic["backend"] == "laion-aesthetic"
    assert aesthetic["options"]["model"] == PREFETCHED and aesthetic["options"]["head"] == HEAD
    assert estimators["imaging_quality"] == {"backend": "musiq-spaq", "options": {"weights": MUSIQ, "device": "cuda"}}
    assert estimators["tracking"]["backend"] == "optical-flow"  # the no-weights estimators ride along
    faces = estimators["faces"]  # ArcFace on the CPU, from the two files
    assert faces["options"]["detector"] == FACE_MODELS[0] and faces["options"]["recognizer"] == FACE_MODELS[1]
    assert estimators["judge"] == {"backend": "openai-compatible", "skip": True}  # nothing to judge in a human case
    dynamic = perceive["model=example, case=dynamic_000"]  # a client of the server that holds the VLM
    assert "gpu=0" in dynamic and "runtime=10" in dynamic
    judge = estimators_of(dynamic)["judge"]
    assert judge["backend"] == "openai-compatible" and judge["options"]["url"] == "http://localhost:8000/v1"
    replay = estimators_of(perceive["model=omniscient.replay, case=human_single_person_000"])
    assert replay["aesthetic_quality"].get("skip")  # General Video Quality has no oracle to agree with
    pb_perceive = jobs(dry, "persistbench_perceive")["model=omniscient.replay, sequence=static_000"]
    assert set(estimators_of(pb_perceive)) == {"tracking", "judge"}  # the judge reads the same job's masks
    pb_score = jobs(dry, "persistbench_score")["model=omniscient, sequence=static_000"]
    assert f"--features clip --features-model {PREFETCHED} --device cuda" in pb_score  # fetched once, shared


def test_a_prefetched_aesthetic_predictor_scores_an_external_model(tmp_path, snakemake):
    """A tiny random CLIPModel in the prefetch directory stands in for the released one (the
    network boundary) and a linear head for LAION's: the still-frame model gets an aesthetic
    score in [0, 1], with the backend named in the scores' sidecar."""
    torch.manual_seed(0)
    clip = CLIPModel(CLIPConfig(projection_dim=8,
                                text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                 num_attention_heads=2, vocab_size=64, max_position_embeddings=8),
                                vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                   num_attention_heads=2, image_size=32, patch_size=8)))
    clip.save_pretrained(tmp_path / PREFETCHED)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(
        tmp_path / PREFETCHED)
    head = nn.Linear(8, 1)
    (tmp_path / HEAD).parent.mkdir(parents=True)
    torch.save({"weight": head.weight.detach(), "bias": torch.tensor([5.0])}, tmp_path / HEAD)
    config = yaml.safe_load(TINY.read_text())
    config["worldmembench"]["models"] = {"still": STILL}
    config["worldmembench"]["perception"] = {"aesthetic_quality": {
        "backend": "laion-aesthetic", "model": CLIP_ID, "revision": REVISION, "head": HEAD, "device": "cpu"}}
    path = tmp_path / "aesthetic.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, path, "results/worldmembench/scores/still/quality.csv")
    assert "prefetch_perception" not in result.stdout + result.stderr  # the weights were there
    out = tmp_path / "results" / "worldmembench" / "scores" / "still"
    scores = pd.read_csv(out / "quality.csv")
    aesthetic = scores.loc[scores["metric"] == "aesthetic_quality", "value"]
    assert len(aesthetic) == 5  # one per static-memory rollout of the tiny config (not LR-Hold)
    assert aesthetic.between(0.3, 0.7).all()  # a bias of 5 on the 1-10 scale, /10, plus a small random term
    assert "laion-aesthetic" in (out / "quality.json").read_text()
