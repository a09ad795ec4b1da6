"""A learned estimator through the real rules: its weights prefetched once by id and revision,
read offline by its own perception job with the resources its config entry names, feeding the
metric family that needs it (here the LAION aesthetic predictor and the quality family)."""

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
FACE_MODELS = ("resources/faces/face_detection_yunet_2023mar.onnx", "resources/faces/w600k_r50.onnx")
pytestmark = pytest.mark.workflow


def jobs(dry_run: str, rule: str) -> dict[str, str]:
    """The blocks of a dry run's jobs of ``rule``, by their wildcards line."""
    blocks = dry_run.split(f"rule {rule}:")[1:]
    return {b.split("wildcards: ")[1].splitlines()[0]: b for b in blocks}


def test_the_papers_config_lists_each_learned_estimator_job_with_its_resources(tmp_path, snakemake):
    """config/paper.yaml with an external model: a dry run of every default target here (no
    weights, no GPU) lists the GPU jobs with their resources, plans the fetch on the node that runs
    Snakemake and a GPU perception job that reads the fetched copy offline, the judges as CPU
    clients of a served VLM, and a feature ablation's weights fetched like an estimator's; a missing
    head file stops the run before any job, naming the file; ArcFace reads its two ONNX files."""
    config = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    config["worldmembench"]["models"]["example"] = STILL
    config["worldmembench"]["perception"]["faces"] = {  # paper.yaml's commented entry, files placed
        "backend": "arcface", "detector": FACE_MODELS[0], "recognizer": FACE_MODELS[1], "runtime": 120}
    config["persistbench"]["features"] = {"backend": "clip", "model": CLIP_ID, "revision": REVISION}  # the ablation
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(config))
    missing = snakemake(tmp_path, path, "-n", "results/table2.csv", check=False)
    assert missing.returncode != 0 and HEAD in missing.stdout + missing.stderr
    for stand_in in (HEAD, *FACE_MODELS):
        (tmp_path / stand_in).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / stand_in).write_bytes(b"stand-in")
    dry = snakemake(tmp_path, path, "-n", "-p").stdout  # every default target of the three studies
    for rule, wildcards in (("permanence_probe", "model=vjepa2-vitg-fpc64-256"),
                            ("worldmembench_score", "model=omniscient, family=static"),
                            ("persistbench_score", "model=omniscient")):
        assert "gpu=1" in jobs(dry, rule)[wildcards].split("Shell command")[0], (rule, wildcards)
    fetch = jobs(dry, "prefetch_perception")
    assert list(fetch) == [f"slug=openai__clip-vit-large-patch14@{REVISION}"]
    assert f"--id {CLIP_ID} --revision {REVISION}" in next(iter(fetch.values()))
    perceive = jobs(dry, "worldmembench_perceive")
    aesthetic = perceive["model=example, capability=aesthetic_quality"]
    assert "gpu=1" in aesthetic and "mem_mb=16000" in aesthetic and "runtime=60" in aesthetic
    assert "export HF_HUB_OFFLINE=1" in aesthetic and "--backend laion-aesthetic" in aesthetic
    assert f'"model": "{PREFETCHED}"' in aesthetic and f'"head": "{HEAD}"' in aesthetic
    assert "gpu=0" in perceive["model=example, capability=tracking"]  # the no-weights estimators stay on the CPU
    faces = perceive["model=example, capability=faces"]  # ArcFace on the CPU, from the two files
    assert "gpu=0" in faces and "--backend arcface" in faces
    assert f'"detector": "{FACE_MODELS[0]}"' in faces and f'"recognizer": "{FACE_MODELS[1]}"' in faces
    judge = perceive["model=example, capability=judge"]  # a client of the server that holds the VLM
    assert "gpu=0" in judge and "runtime=240" in judge and "--backend openai-compatible" in judge
    assert '"url": "http://localhost:8000/v1"' in judge
    pb_judge = jobs(dry, "persistbench_perceive")["model=omniscient.replay, capability=judge"]
    assert "--estimates results/persistbench/perception/omniscient.replay" in pb_judge  # the tracker's masks
    pb_score = jobs(dry, "persistbench_score")["model=omniscient"]
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
