"""The probe over real rendered scenes with a tiny random V-JEPA 2 (the real transformers class)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from worldmemory.common.video import read_video
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model
from worldmemory.permanence import probe
from worldmemory.permanence.containers import HIDDEN_FRAMES, write_container_scenes
from worldmemory.permanence.masks import ProbeGeometry, slot_ball_x
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
    # Per scene: moving 3 references + 4 contexts (main, never visible, never rendered, exit),
    # stationary 2 + 3; the never-visible and the never-rendered contexts are the same model input
    # for both motions.
    assert prober.encodings.requests == 2 * 12
    assert prober.encodings.computed == 2 * 10
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
    preds = {"moving": (refs[world][:, torch.as_tensor(target)], target, geom.readout_slots())}
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
                "--out", str(tmp_path / "p.csv"), "--out-info", str(tmp_path / "p.json"),
                "--out-features", str(tmp_path / "p.npz")])
    info = json.loads((tmp_path / "p.json").read_text())
    assert info["identity"]["class"] == "VJEPA2Model" and info["encoder_passes_saved"] == 4
    assert info["query"] == "main"
    rows = pd.read_csv(tmp_path / "p.csv")
    assert len(rows) == len(CONDITIONS) * 2 * 14
    features = np.load(tmp_path / "p.npz", allow_pickle=False)
    assert len(features["pred"]) == len(rows) and features["pred"].shape[1] == TINY["hidden_size"]
    # one reference pair per motion, scene and slot: moving and stationary, 2 scenes, 14 slots
    assert len(features["z_present"]) == 2 * 2 * 14
    ordered = rows[["condition", "scene_id", "slot"]]
    assert (ordered["condition"].to_numpy() == features["condition"]).all()
    assert (ordered["slot"].to_numpy() == features["slot"]).all()


VIDEOMAE = dict(image_size=64, patch_size=16, num_frames=16, tubelet_size=2, hidden_size=32, num_hidden_layers=1,
                num_attention_heads=4, intermediate_size=64, decoder_hidden_size=32, decoder_num_hidden_layers=1,
                decoder_num_attention_heads=4, decoder_intermediate_size=64)


def test_videomae_reads_the_first_six_tubelets_through_the_cli(scenes, tmp_path):
    """A ``family: videomae`` spec reaches VideoMAE's pixel readout (Appendix E): its 16-frame clip is the
    window's first 16 frames, so every condition is read at the six tubelets after the event, 0 to 1.33 s."""
    spec = json.dumps({"source": "random", "family": "videomae", "config": VIDEOMAE, "seed": 1})
    probe.main(["--scenes", str(scenes), "--model-name", "mae", "--spec", spec, "--threads", "1",
                "--out", str(tmp_path / "p.csv"), "--out-info", str(tmp_path / "p.json"),
                "--out-features", str(tmp_path / "p.npz")])
    info = json.loads((tmp_path / "p.json").read_text())
    assert info["identity"]["class"] == "VideoMAEForPreTraining"
    assert info["identity"]["config"]["num_frames"] == 16 and info["identity"]["spec"]["family"] == "videomae"
    rows = pd.read_csv(tmp_path / "p.csv")
    assert sorted(rows["condition"].unique()) == sorted(CONDITIONS)
    assert len(rows) == len(CONDITIONS) * 2 * 6
    assert sorted(rows["slot"].unique()) == list(range(6))
    assert rows["t_s"].max() == pytest.approx(5 * 2 / 7.5)
    assert rows["present"].isin([0, 1]).all()


def test_the_oracle_through_videomae_calibrates_the_pixel_readout(scenes, tmp_path):
    """The persistence oracle read through a VideoMAE (its fills as per-patch normalised pixel targets)
    reads the ball at every tubelet and no ball in the never-rendered and exit controls: the pixel
    readout reads as designed when the reconstruction is right."""
    encoder = {"source": "random", "family": "videomae", "config": VIDEOMAE, "seed": 1}
    spec = json.dumps({"source": "calibration", "predictor": "persistence_oracle", "encoder": "mae",
                       "encoder_spec": encoder})
    probe.main(["--scenes", str(scenes), "--model-name", "oracle", "--spec", spec, "--threads", "1",
                "--out", str(tmp_path / "p.csv"), "--out-info", str(tmp_path / "p.json")])
    info = json.loads((tmp_path / "p.json").read_text())
    assert info["identity"]["class"] == "VideoMAEForPreTraining"
    assert info["identity"]["calibration"]["predictor"] == "persistence_oracle"
    rows = pd.read_csv(tmp_path / "p.csv")
    p = rows.groupby("condition")["present"].mean()
    assert sorted(rows["slot"].unique()) == list(range(6))
    for motion in ("moving", "stationary"):
        assert p[motion] == 1.0 and p[f"{motion}_never_visible"] == 1.0  # the ball is in its pixels
        assert p[f"{motion}_never_rendered"] == 0.0
    assert p["moving_exit"] == 0.0


def test_a_model_longer_than_the_scenes_window_is_refused():
    class Long:
        window_frames = 48

    assert probe.model_window(object(), 32) == 32  # a model without a fixed length reads the whole window
    with pytest.raises(ValueError, match="48-frame clips but the scenes' window holds 32"):
        probe.model_window(Long(), 32)


def test_the_exit_control_reads_a_ball_that_left_on_the_main_axis(prober, readouts, scenes):
    """Appendix I: the exit ball is visible before the mask, so its context differs from the
    never-rendered one; it is read against the main condition's references like every control."""
    exit_rows = readouts[readouts["condition"] == "moving_exit"]
    assert len(exit_rows) == 2 * 14 and not readouts["condition"].eq("stationary_exit").any()
    never = readouts[readouts["condition"] == "moving_never_rendered"]
    assert not np.allclose(exit_rows["d_present"].to_numpy(), never["d_present"].to_numpy())


@pytest.fixture(scope="module")
def reveal(prober):
    reveal_prober = probe.Prober(prober.backend, "tiny", prober.manifest, prober.dir, query="reveal")
    return reveal_prober, reveal_prober.run(batch_size=4, log=lambda *_: None)


def test_the_reveal_query_reads_the_gap_under_both_reveals(reveal):
    reveal_prober, rows = reveal
    expected = {f"{m}_reveal_{w}" for m in probe.MOTIONS for w in ("present", "absent")}
    assert set(rows["condition"]) == expected
    # the last four frames (two tubelets) are visible: the gap is slots 0..11 of 14
    assert rows.groupby("condition")["slot"].apply(lambda s: sorted(set(s)) == list(range(12))).all()
    assert len(rows) == len(expected) * 2 * 12


def test_the_reveal_shows_the_band_in_the_last_four_frames_only(prober, scenes):
    """The revealed worlds' contexts differ (the band is visible at the end) while the main query's
    contexts of the same two worlds are bit-identical."""
    manifest = json.loads((scenes / "manifest.json").read_text())
    batch = [s for s in manifest["scenes"] if s["motion"] == "moving" and s["radius"] == 32]
    geom = ProbeGeometry(prober.grid, 32)
    hidden = geom.hidden(geom.event_slot, prober.grid.slots - probe.REVEAL_FRAMES // prober.grid.tubelet_size)
    last_band = geom.hidden(prober.grid.slots - 2)
    assert np.intersect1d(hidden, last_band).size == 0 and np.isin(last_band, geom.visible(hidden)).all()
    with torch.inference_mode():
        ctx = {w: prober.backend.encode(prober._load(batch, w), geom.visible(hidden)) for w in ("present", "absent")}
    assert not torch.equal(ctx["present"], ctx["absent"])


def test_the_unknown_query_is_refused(prober):
    with pytest.raises(ValueError, match="unknown query 'sideways'"):
        probe.Prober(prober.backend, "tiny", prober.manifest, prober.dir, query="sideways")


def test_features_hold_the_region_means_of_each_readout(prober, scenes):
    manifest = json.loads((scenes / "manifest.json").read_text())
    batch = [s for s in manifest["scenes"] if s["motion"] == "moving" and s["radius"] == 8]
    geom = ProbeGeometry(prober.grid, 8)
    target = geom.hidden(geom.event_slot)
    fresh = probe.Prober(prober.backend, "tiny", prober.manifest, prober.dir)
    with torch.inference_mode():
        refs = {w: fresh.backend.encode(fresh._load(batch, w)) for w in ("present", "absent", "static")}
    preds = {"moving": (refs["absent"][:, torch.as_tensor(target)], target, geom.readout_slots())}
    fresh._readouts("moving", batch, geom, refs, preds)
    arrays = fresh.feature_arrays()
    assert len(arrays["pred"]) == len(arrays["z_absent"]) == 14 and arrays["pred"].shape[1] == 48
    np.testing.assert_allclose(arrays["pred"], arrays["z_absent"], rtol=1e-6)
    assert not np.allclose(arrays["pred"], arrays["z_present"])
    assert list(arrays["slot"]) == list(range(14)) and set(arrays["ref_motion"]) == {"moving"}


@pytest.fixture(scope="module")
def tube_scenes(tmp_path_factory):
    out = tmp_path_factory.mktemp("tube_scenes")
    write_scenes(out, radii=[8, 32], distractors=[2], n_seeds=1, approach_frames=8)
    return out, json.loads((out / "manifest.json").read_text())


@pytest.mark.parametrize("query", ["tube", "tube_sparse"])
def test_the_tube_query_reads_from_the_entry_on(prober, tube_scenes, query):
    scenes, manifest = tube_scenes
    rows = probe.Prober(prober.backend, "tiny", manifest, scenes, query=query).run(4, log=lambda *_: None)
    assert set(rows["condition"]) == {"moving", "moving_never_rendered"}
    # 8 visible frames = 4 slots before the entry; the decision is read from the entry to the end
    assert sorted(rows["slot"].unique()) == list(range(12)) and len(rows) == 2 * 2 * 12
    assert rows["t_s"].min() == 0.0


def test_the_sparse_context_keeps_the_approach_and_a_tenth_of_the_rest(prober, tube_scenes):
    scenes, manifest = tube_scenes
    sparse = probe.Prober(prober.backend, "tiny", manifest, scenes, query="tube_sparse")
    scene = manifest["scenes"][0]
    geom = ProbeGeometry(sparse.grid, scene["radius"], sparse.event_slot)
    entry_x = scene["ball_x"][manifest["event_frame"] - manifest["window_start"]]
    block, approach = geom.block(entry_x), geom.approach(entry_x)
    visible = sparse.sparse_visible(geom, block, scene)
    assert np.isin(approach, visible).all() and not np.isin(block, visible).any()
    rest = np.setdiff1d(geom.visible(block), approach)
    assert np.isin(visible, rest).sum() == round(0.1 * len(rest))
    assert np.array_equal(visible, sparse.sparse_visible(geom, block, scene))  # per scene, fixed
    other = dict(scene, id="r08_k2_s9")
    assert not np.array_equal(visible, sparse.sparse_visible(geom, block, other))


def test_the_tube_query_refuses_the_main_scenes(prober):
    tube = probe.Prober(prober.backend, "tiny", prober.manifest, prober.dir, query="tube")
    with pytest.raises(ValueError, match="tube query's scenes"):
        tube.run(4, log=lambda *_: None)


@pytest.fixture(scope="module")
def container_scenes(tmp_path_factory):
    out = tmp_path_factory.mktemp("container_scenes")
    write_container_scenes(out, radii=[16, 32], distractors=[2], n_seeds=1)
    return out, json.loads((out / "manifest.json").read_text())


def test_the_container_query_reads_the_opening_slot_of_every_hidden_duration(prober, container_scenes):
    scenes, manifest = container_scenes
    rows = probe.Prober(prober.backend, "tiny", manifest, scenes, query="container").run(4, log=lambda *_: None)
    expected = {f"container_{m}{c}" for m in probe.MOTIONS for c in ("", "_never_shown", "_exit", "_copy_last_view")}
    assert set(rows["condition"]) == expected
    # one readout per scene and duration: t is the time hidden, the slot the one holding the opening frame
    assert len(rows) == len(expected) * 2 * len(HIDDEN_FRAMES)
    assert sorted(rows["t_s"].unique()) == pytest.approx([h / 7.5 for h in HIDDEN_FRAMES], abs=1e-6)
    slots = rows.groupby("t_s")["slot"].unique()
    assert [int(v[0]) for v in slots] == [(32 + h - 28) // 2 - 2 for h in HIDDEN_FRAMES]


def test_the_container_query_hides_the_closed_box_from_the_opening_on(prober, container_scenes):
    """What differs between the worlds (the revealed ball) is never in the context; the box is."""
    scenes, manifest = container_scenes
    container = probe.Prober(prober.backend, "tiny", manifest, scenes, query="container")
    entry = next(s for s in manifest["scenes"] if s["motion"] == "moving" and s["hidden_frames"] == 8
                 and s["radius"] == 32)
    geom = ProbeGeometry(container.grid, 32, container.event_slot)
    clips = {w: container._load([entry], w) for w in entry["worlds"]}
    conditions = container._container_conditions("moving", clips, geom, [entry])
    _, hidden, slots = conditions["container_moving"]
    visible = geom.visible(hidden)
    assert slots == [(40 - 28) // 2]
    assert np.isin(geom.region(slots[0], slot_ball_x(entry["ball_x"])[slots[0]]), hidden).all()
    with torch.inference_mode():
        a, b = (container.backend.encode(clips[w], visible) for w in ("present", "absent"))
        full = [container.backend.encode(clips[w]) for w in ("present", "absent")]
    assert torch.equal(a, b) and not torch.equal(*full)


def test_the_container_query_refuses_the_main_scenes(prober):
    with pytest.raises(ValueError, match="container scenes"):
        probe.Prober(prober.backend, "tiny", prober.manifest, prober.dir, query="container").run(4, lambda *_: None)
