"""Real Snakemake runs of the permanence study on tests/config/tiny.yaml."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from worldmemory.models.vjepa2 import build_model

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "config" / "tiny.yaml"
VITH = "vjepa2-vith-fpc64-256"  # the paper config's ViT-H run, the calibration rows' encoder
TABLES = ["table3.csv", "table3_long.csv"]
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, snakemake):
    dirs = [tmp_path_factory.mktemp(f"run{i}") for i in range(2)]
    for d in dirs:
        snakemake(d, TINY, "results/permanence/table3.csv", "results/permanence/figure2.png")
    return dirs


def test_targets_are_built_with_provenance(two_runs):
    out = two_runs[0] / "results" / "permanence"
    for name in ["table3.csv", "table3_long.csv", "table3.json", "figure2.png", "figure2.pdf", "figure2.json"]:
        assert (out / name).stat().st_size > 0, name
    wide = pd.read_csv(out / "table3.csv")
    assert set(wide["model"]) == {"tiny-test-scratch", "tiny-test-random"}
    assert len(wide) == 2 * 9 and "p_3.47" in wide.columns  # 9 conditions (readouts.CONDITIONS)
    prov = yaml.safe_load((out / "table3.json").read_text())
    assert {m["model"] for m in prov["models"]} == {"tiny-test-scratch", "tiny-test-random"}
    assert prov["outputs"]["table3.csv"] and prov["packages"]["transformers"] and prov["device"] == "cpu"
    assert (out / "figure2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_trained_model_is_protected(two_runs):
    """protected(): Snakemake makes the trained model read-only and never deletes it to rebuild."""
    model = two_runs[0] / "results" / "models" / "tiny-test-scratch"
    files = [model, *model.iterdir()]
    assert {p.name for p in files} >= {"config.json", "model.safetensors"}
    assert all(p.stat().st_mode & 0o222 == 0 for p in files), [oct(p.stat().st_mode) for p in files]


def test_two_runs_give_byte_identical_tables(two_runs):
    for name in TABLES + [f"probe/{m}.csv" for m in ("tiny-test-scratch", "tiny-test-random")]:
        a, b = (d / "results" / "permanence" / name for d in two_runs)
        assert a.read_bytes() == b.read_bytes(), name


def test_changing_one_model_reruns_only_its_probe_and_the_tables(two_runs, tmp_path, snakemake, job_counts):
    config = yaml.safe_load(TINY.read_text())
    config["permanence"]["models"]["tiny-test-random"]["seed"] = 1
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(config))
    dry = snakemake(two_runs[1], changed, "-n", "results/permanence/table3.csv",
                    "results/permanence/figure2.png").stdout
    assert job_counts(dry) == {"permanence_probe": 1, "permanence_table3": 1, "permanence_figure2": 1}
    assert "wildcards: model=tiny-test-random" in dry


def test_the_queries_outside_the_main_job_build_and_resolve(two_runs, snakemake, job_counts):
    """Reveal at the end builds Figure 3, and a curriculum its table, from the run's models; the frame
    rates, the tube queries and the container resolve to their own scene sets (one render each; the
    two 2.1 s tube queries share theirs). IntPhys runs in test_intphys_workflow.py."""
    result = snakemake(two_runs[0], TINY, "results/permanence/figure3.png", "results/permanence/curricula/figure4.png",
                       "results/permanence/videomae/figure5a.png")
    out = two_runs[0] / "results" / "permanence"
    # the curriculum continues the pretrained model and is probed like it, in its own table
    assert "tiny-test-container" not in pd.read_csv(out / "table3.csv")["model"].tolist()
    curricula = pd.read_csv(out / "curricula" / "main.csv")
    assert set(curricula["model"]) == {"tiny-test-scratch", "tiny-test-container"}
    log = result.stdout + result.stderr
    assert "rule permanence_train:" not in log  # the init model was already there
    # VideoMAE pretrains with its own recipe and reads the window's first 16 frames: six tubelets
    assert "rule permanence_videomae_train:" in log
    pixel = pd.read_csv(out / "videomae" / "table_long.csv").groupby("model")["slot"].nunique()
    assert pixel.to_dict() == {"tiny-test-mae": 6, "tiny-test-scratch": 14}
    assert (out / "videomae" / "figure5a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "curricula" / "figure4.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    reveal = pd.read_csv(out / "queries" / "reveal_long.csv")
    expected = {f"{m}_reveal_{w}" for m in ("moving", "stationary") for w in ("present", "absent")}
    assert set(reveal["condition"]) == expected and set(reveal["model"]) == {"tiny-test-scratch", "tiny-test-random"}
    assert reveal["t_s"].max() == pytest.approx(2.93, abs=0.01)  # the gap: the last four frames are visible
    assert (out / "figure3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    queries = ("fps15", "fps30", "tube11", "tube21", "tube21_sparse", "container")
    targets = [f"results/permanence/queries/{q}.csv" for q in (*queries, "container_table9")]
    dry = snakemake(two_runs[0], TINY, "-n", *targets, "results/permanence/curricula/figure6a.png").stdout
    assert job_counts(dry) == {"permanence_scenes": 4, "permanence_container_scenes": 1, "permanence_query": 13,
                               "permanence_query_table": 6, "permanence_query_table9": 1,
                               "permanence_curricula_table": 1, "permanence_figure6a": 1}


def test_a_finished_run_has_nothing_left_to_do(two_runs, snakemake):
    result = snakemake(two_runs[0], TINY, "-n", "results/permanence/table3.csv")
    assert "Nothing to be done" in result.stdout + result.stderr


@pytest.mark.parametrize("bad, words", [
    ({"permanence": {"scenes": {"seeds": "five"}}}, ["seeds", "'five' is not of type 'integer'"]),
    ({"permanence": {"bogus": 1}}, ["'bogus' was unexpected"]),
    ({"device": "gpu"}, ["device", "does not match"]),
])
def test_bad_config_stops_with_the_key_and_the_expected_type(tmp_path, bad, words, snakemake):
    config = yaml.safe_load(TINY.read_text())
    for key, value in bad.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, path, "-n", check=False)
    assert result.returncode != 0
    for word in words:
        assert word in result.stdout + result.stderr


def test_gpu_is_requested_only_on_a_gpu_device(tmp_path, snakemake):
    config = yaml.safe_load(TINY.read_text())
    for device, gpu in [("cpu", "gpu=0"), ("cuda", "gpu=1")]:
        path = tmp_path / f"{device}.yaml"
        path.write_text(yaml.safe_dump({**config, "device": device}))
        out = snakemake(tmp_path, path, "-n", "results/permanence/probe/tiny-test-random.csv").stdout
        probe_job = out[out.index("rule permanence_probe"):]
        assert gpu in probe_job.split("Shell command")[0]


def test_the_papers_checkpoints_run_through_the_same_rules(tmp_path, snakemake):
    """config/paper.yaml's models, with their weights already prefetched (the network boundary):
    a tiny random VJEPA2Model stands in for the released ViT-H (the encoder of the calibration row;
    the other two scales take the same rules, see the dry run below), and the paper's numbers print
    beside ours."""
    models = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())["permanence"]["models"]
    released = {name: m for name, m in models.items() if m["source"] == "hf"}
    assert {m["id"] for m in released.values()} == {f"facebook/vjepa2-vit{s}-fpc64-256" for s in "lhg"}
    calibration = {name for name, m in models.items() if m["source"] == "calibration"}
    assert calibration and {models[name]["encoder"] for name in calibration} <= set(released)
    result = snakemake(tmp_path, paper_stand_in(tmp_path, weights_in=tmp_path, released=[VITH]),
                       "results/permanence/table3.csv")
    assert "prefetch_model" not in result.stdout + result.stderr  # weights were already there
    side = pd.read_csv(tmp_path / "results" / "permanence" / "table3_vs_paper.csv")
    assert set(side["run"]) == {VITH}  # the calibration rows have no paper numbers
    wide = pd.read_csv(tmp_path / "results" / "permanence" / "table3.csv").set_index(["model", "condition"])
    p = wide[[c for c in wide.columns if c.startswith("p_")]]
    # the oracle reads as designed through the real rules: the ball at every time point, no control
    for motion in ("moving", "stationary"):
        assert (p.loc[("calib-oracle", motion)] == 1.0).all()
        assert (p.loc[("calib-oracle", f"{motion}_never_rendered")] == 0.0).all()
    assert (p.loc[("calib-oracle", "moving_exit")] == 0.0).all()
    assert wide.loc[("calib-oracle", "moving"), "carry_over_s"] == pytest.approx(3.47, abs=0.01)
    assert side["paper"].notna().all() and side["ours"].notna().any()
    assert "p_present@0.00" in result.stdout + result.stderr


def paper_stand_in(tmp_path, weights_in=None, released=None):
    """config/paper.yaml's models on the tiny scenes; its path. With ``weights_in`` (a workdir),
    tiny random VJEPA2Models stand in for the released weights in its resources/models (the
    network boundary). ``released``: the released checkpoints to keep (default: all three)."""
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    tiny = yaml.safe_load(TINY.read_text())
    micro = tiny["permanence"]["models"]["tiny-test-random"]["config"]
    if released is None:
        released = [name for name, m in paper["permanence"]["models"].items() if m["source"] == "hf"]
    for i, name in enumerate(released if weights_in else []):
        build_model(micro, seed=i).save_pretrained(weights_in / "resources" / "models" / name)
    # one calibration row runs through the real rules (the four differ only in their fill, tested
    # in tests/permanence/test_calibration.py); the others would only add minutes
    models = {name: m for name, m in paper["permanence"]["models"].items()
              if name in released or name == "calib-oracle"}
    config = {**paper, "device": "cpu", "threads": 2,
              "permanence": {**paper["permanence"], "models": models, "scenes": tiny["permanence"]["scenes"],
                             "batch_size": 4}}
    path = tmp_path / "paper_tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_intphys_resolves_under_the_papers_config_on_a_gpu_and_refuses_without_a_dataset(tmp_path, snakemake,
                                                                                           job_counts):
    """Tables 1 and 10 under config/paper.yaml with the dev set's directory given: every model's
    IntPhys job and every curriculum's training asks for a GPU; without the directory the target is
    refused naming the key."""
    paper = yaml.safe_load(paper_stand_in(tmp_path).read_text())
    dev = tmp_path / "intphys_dev"
    (dev / "O1").mkdir(parents=True)  # the dev set's root holds its blocks (validated)
    paper["device"] = "cuda"
    paper["permanence"]["intphys"]["dataset"] = str(dev)
    path = tmp_path / "paper_intphys.yaml"
    path.write_text(yaml.safe_dump(paper))
    figures = ["results/permanence/curricula/figure4.png", "results/permanence/videomae/figure5a.png"]
    dry = snakemake(tmp_path, path, "-n", "-p", "results/permanence/table1.csv", *figures).stdout
    # the released checkpoints, the calibration row and the four curricula continued from ViT-H; Figure 4
    # probes the curricula and ViT-H, Figure 5a the three released VideoMAEs beside ViT-H (Appendix E)
    assert job_counts(dry) == {"prefetch_model": 6, "permanence_curriculum": 4, "permanence_intphys": 8,
                               "permanence_intphys_tables": 1, "permanence_scenes": 1, "permanence_probe": 8,
                               "permanence_curricula_table": 1, "permanence_figure4": 1,
                               "permanence_videomae_table": 1, "permanence_figure5a": 1}
    jobs = dry.split("rule permanence_intphys:")[1:]
    probes = dry.split("rule permanence_probe:")[1:]
    trainings = [job.split("rule ")[0] for job in dry.split("rule permanence_curriculum:")[1:]]
    assert all("gpu=1" in job.split("Shell command")[0] for job in jobs + probes + trainings)
    for name in ("videomae-large", "videomae-base", "videomae-base-ssv2"):
        assert f"--model-name {name} " in dry and f"--weights resources/models/{name} " in dry
    assert "--id MCG-NJU/videomae-base-ssv2 --revision refs/pr/1" in dry
    assert all("--init resources/models/vjepa2-vith-fpc64-256" in job for job in trainings)
    assert all(f"--dataset {dev}" in job for job in jobs)
    assert all("--source-fps 15 --protocol reference " in job for job in jobs)  # the dev set's PNGs are 15 fps
    assert "intphys_tables --videos" in dry and dry.count("--protocol reference") == len(jobs) + 1
    assert "--baseline vjepa2-vith-fpc64-256" in dry
    paper["permanence"]["intphys"]["dataset"] = None
    path.write_text(yaml.safe_dump(paper))
    refused = snakemake(tmp_path, path, "-n", "results/permanence/table1.csv", check=False)
    assert refused.returncode != 0 and "permanence.intphys.dataset is not set" in refused.stdout + refused.stderr


def test_a_curriculum_on_your_own_clips_reads_their_directory(tmp_path, snakemake):
    """(iv) under the paper config: the clip directory is the job's input and its settings reach the
    training command; a missing directory is refused naming the key."""
    paper = yaml.safe_load(paper_stand_in(tmp_path).read_text())
    (tmp_path / "my clips").mkdir()
    train = {"curriculum": "clips", "clips_dir": "my clips", "frames": 32, "container_fraction": 0,
             "mixture": {"short_tube": 1, "long_tube": 1}, "encoder_lr": 3e-5, "ema": 0.999, "seed": 0,
             "steps": 16000, "batch_size": 24, "lr": 1e-4, "warmup_steps": 1000}
    paper["permanence"]["curricula"] = {"vith-continued": {"init": VITH, "train": train}}
    path = tmp_path / "clips.yaml"
    path.write_text(yaml.safe_dump(paper))
    dry = snakemake(tmp_path, path, "-n", "-p", "results/models/vith-continued").stdout
    job = dry.split("rule permanence_curriculum:")[1]
    assert "input: resources/models/vjepa2-vith-fpc64-256, my clips" in job
    assert '"clips_dir": "my clips"' in job and '"encoder_lr": 3e-05' in job
    train["clips_dir"] = "no clips"
    path.write_text(yaml.safe_dump(paper))
    refused = snakemake(tmp_path, path, "-n", "results/models/vith-continued", check=False)
    assert refused.returncode != 0
    assert "permanence.curricula.vith-continued.train.clips_dir = 'no clips': no such directory" in (
        refused.stdout + refused.stderr)


def test_switching_to_the_papers_config_rebuilds_the_table(two_runs, tmp_path, snakemake, job_counts):
    """The embedded table must never be kept under the paper config's name (on the main job's
    outputs Snakemake 9.27 said "Nothing to be done": the table's output set depended on the
    config). The checkpoints are fetched, the paper models probed and the table rebuilt."""
    jobs = job_counts(snakemake(two_runs[0], paper_stand_in(tmp_path), "-n",
                                "results/permanence/table3.csv").stdout)
    assert jobs == {"prefetch_model": 3, "permanence_probe": 4, "permanence_table3": 1}  # 3 released, 1 calibration


def test_a_config_switch_rebuilds_the_tables_even_without_snakemakes_metadata(two_runs, tmp_path, snakemake,
                                                                            job_counts):
    """Results copied without .snakemake/ (so Snakemake has no params or input-set trigger): a
    dry run warns, and the real run rewrites the config stamp every table reads, so the tables
    are rebuilt under the new config, not kept."""
    copy = tmp_path / "copy"
    shutil.copytree(two_runs[0] / "results", copy / "results")
    targets = ["results/permanence/table3.csv", "results/permanence/figure2.png"]
    assert job_counts(snakemake(copy, TINY, "-n", *targets).stdout) == {}
    config = yaml.safe_load(TINY.read_text())
    config["permanence"]["readout_margin_px"] = 4
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(config))
    dry = snakemake(copy, changed, "-n", *targets)
    assert "holds another config: a real run rewrites it" in dry.stdout + dry.stderr
    jobs = job_counts(snakemake(copy, changed, *targets).stderr)
    assert jobs == {"permanence_table3": 1, "permanence_figure2": 1}
    for sidecar in ("table3.json", "figure2.json"):
        recorded = json.loads((copy / "results" / "permanence" / sidecar).read_text())
        assert recorded["config"]["permanence"]["readout_margin_px"] == 4, sidecar


def test_lint_is_clean_with_every_study(tmp_path, snakemake):
    config = {}
    for name in ("tiny.yaml", "tiny_worldmembench.yaml", "tiny_persistbench.yaml"):
        config.update(yaml.safe_load((TINY.parent / name).read_text()))
    assert {"permanence", "worldmembench", "persistbench"} <= set(config)
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, path, "--lint")
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


def test_config_overrides_apply_to_the_embedded_default(tmp_path, snakemake):
    """--config alone keeps config/config.yaml (its model) and overrides one key."""
    out = snakemake(tmp_path, None, "-n", "--config", "threads=1").stdout
    assert "results/models/vjepa2-tiny-scratch" in out and "--threads 1 " in out
