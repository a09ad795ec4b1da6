"""The probe over real rendered scenes with a tiny random V-JEPA 2 (the real transformers class)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from worldmemory.common.video import read_video
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model
from worldmemory.permanence import probe
from worldmemory.permanence.masks import ProbeGeometry
from worldmemory.permanence.readouts import CONDITIONS
from worldmemory.permanence.render import write_scenes

TINY = dict(crop_size=64, patch_size=16, frames_per_clip=32, tubelet_size=2, hidden_size=48,
            num_attention_heads=4, num_hidden_layers=2, pred_hidden_size=32,
            pred_num_attention_heads=4, pred_num_hidden_layers=1, num_pooler_layers=1)


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    out = tmp_path_factory.mktemp("scenes")
    write_scenes(out, radii=[8, 32], distractors=[2], n_seeds=1)
    return out


@pytest.fixture(scope="module")
def prober(scenes):
    manifest = json.loads((scenes / "manifest.json").read_text())
    torch.manual_seed(0)
    return probe.Prober(VJEPA2Backend(build_model(TINY, seed=1)), "tiny", manifest, scenes)


@pytest.fixture(scope="module")
def readouts(prober):
    return prober.run(batch_size=4, log=lambda *_: None)


def test_every_condition_scene_and_slot_is_read(readouts):
    assert sorted(readouts["condition"].unique()) == sorted(CONDITIONS)
    assert len(readouts) == len(CONDITIONS) * 2 * 14
    assert readouts.groupby("condition")["slot"].apply(lambda s: sorted(set(s)) == list(range(14))).all()
    moving = readouts["condition"].str.startswith("moving")
    assert readouts.loc[moving, "nearest_band"].isin(["moving", "static", "gone"]).all()
    assert (readouts.loc[~moving, "nearest_band"] == "").all()


def test_shared_contexts_are_encoded_once(prober, readouts):
    # Per scene: moving 3 references + 3 contexts, stationary 2 + 3; the never-visible and the
    # never-rendered contexts are the same model input for both motions.
    assert prober.encodings.requests == 2 * 11
    assert prober.encodings.computed == 2 * 9
    assert prober.predictions.requests - prober.predictions.computed == 2 * 2


def test_present_and_absent_contexts_are_bit_identical(prober, scenes):
    """The hidden band covers every pixel in which the worlds differ; the encoder never sees it."""
    manifest = json.loads((scenes / "manifest.json").read_text())
    scene = next(s for s in manifest["scenes"] if s["motion"] == "moving" and s["radius"] == 32)
    geom = ProbeGeometry(prober.grid, 32)
    visible = geom.visible(geom.hidden(geom.event_slot))
    clips = {w: prober.backend.preprocess(read_video(scenes / scene["worlds"][w])[None]) for w in ("present", "absent")}
    assert not torch.equal(clips["present"], clips["absent"])
    with torch.inference_mode():
        a, b = (prober.backend.encode(clips[w], visible) for w in ("present", "absent"))
    assert torch.equal(a, b)


def _refs_and_preds(prober, scenes, world):
    manifest = json.loads((scenes / "manifest.json").read_text())
    batch = [s for s in manifest["scenes"] if s["motion"] == "moving" and s["radius"] == 8]
    geom = ProbeGeometry(prober.grid, 8)
    target = geom.hidden(geom.event_slot)
    with torch.inference_mode():
        refs = {w: prober.backend.encode(prober._load(batch, w)) for w in ("present", "absent", "static")}
    preds = {"moving": (refs[world][:, torch.as_tensor(target)], target)}
    return pd.DataFrame(prober._readouts("moving", batch, geom, refs, preds))


def test_a_prediction_equal_to_the_present_world_reads_present(prober, scenes):
    rows = _refs_and_preds(prober, scenes, "present")
    assert rows["present"].all()
    np.testing.assert_allclose(rows["e"], 1.0, atol=1e-6)
    np.testing.assert_allclose(rows["alpha"], 1.0, atol=1e-5)
    assert (rows["nearest_band"] == "moving").all()


def test_a_prediction_equal_to_the_absent_world_reads_absent(prober, scenes):
    rows = _refs_and_preds(prober, scenes, "absent")
    assert not rows["present"].any()
    np.testing.assert_allclose(rows["e"], -1.0, atol=1e-6)
    np.testing.assert_allclose(rows["alpha"], 0.0, atol=1e-5)
    assert (rows["nearest_band"] == "gone").all()


def test_probe_is_deterministic(prober, readouts):
    again = prober.run(batch_size=1, log=lambda *_: None)  # batch size must not change a number
    pd.testing.assert_frame_equal(readouts, again, check_exact=False, rtol=1e-5)
    assert (readouts["present"] == again["present"]).all()


def test_cli_writes_readouts_and_identity(scenes, tmp_path):
    spec = json.dumps({"source": "random", "config": TINY, "seed": 1})
    probe.main(["--scenes", str(scenes), "--model-name", "tiny", "--spec", spec, "--threads", "1",
                "--out", str(tmp_path / "p.csv"), "--out-info", str(tmp_path / "p.json")])
    info = json.loads((tmp_path / "p.json").read_text())
    assert info["identity"]["class"] == "VJEPA2Model" and info["encoder_passes_saved"] == 4
    assert len(pd.read_csv(tmp_path / "p.csv")) == len(CONDITIONS) * 2 * 14
