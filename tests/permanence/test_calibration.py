"""Calibration predictors (permanence.calibration) through the real Prober on real rendered scenes.

Known answers: each rule's fill is read through a tiny random V-JEPA 2 encoder (the real
transformers class), so every expectation below follows from the fill alone (module docstring of
permanence.calibration). The Prober is the real one; only its decoding of the videos is memoised
across the runs of this module (CachedProber), since every predictor here shares one encoder and
so one preprocessing.
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from worldmemory.common.video import read_video
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model
from worldmemory.permanence import probe
from worldmemory.permanence.calibration import RULES, CalibrationPredictor, probe_backend
from worldmemory.permanence.containers import write_container_scenes
from worldmemory.permanence.linear_readouts import table9
from worldmemory.permanence.masks import ProbeGeometry, slot_ball_x
from worldmemory.permanence.readouts import CONDITIONS, belief_curve, carry_over
from worldmemory.permanence.render import write_scenes
from worldmemory.permanence.tables import table3

TINY = dict(crop_size=64, patch_size=16, frames_per_clip=32, tubelet_size=2, hidden_size=48,
            num_attention_heads=4, num_hidden_layers=2, pred_hidden_size=32,
            pred_num_attention_heads=4, pred_num_hidden_layers=1, num_pooler_layers=1)
RADII = [16, 32]
N_SLOTS = 14
LATE = 8  # slots from 2.13 s on: the moving ball has left the place where it was last seen
MAINS = ("moving", "stationary")
LOADED: dict = {}


class CachedProber(probe.Prober):
    """The real Prober with its decoded, preprocessed clips memoised (all runs here share one encoder)."""

    def _load(self, scenes, world):
        key = (tuple(s["worlds"][world] for s in scenes), world)
        if key not in LOADED:
            LOADED[key] = super()._load(scenes, world)
        return LOADED[key]


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    out = tmp_path_factory.mktemp("scenes")
    write_scenes(out, radii=RADII, distractors=[2], n_seeds=2)
    return out


@pytest.fixture(scope="module")
def manifest(scenes):
    return json.loads((scenes / "manifest.json").read_text())


@pytest.fixture(scope="module")
def inner():
    return VJEPA2Backend(build_model(TINY, seed=1))


@pytest.fixture(scope="module")
def run(inner, manifest, scenes):
    """run(rule, q=None, mode=None, batch_size=4) -> the per-scene readouts (memoised per argument set)."""
    done = {}

    def run(rule, q=None, mode=None, batch_size=4):
        key = (rule, q, mode, batch_size)
        if key not in done:
            name = rule if q is None else f"{rule}-q{q}-{mode or 'mean'}"
            prober = CachedProber(CalibrationPredictor(inner, rule, q, mode), name, manifest, scenes)
            done[key] = prober.run(batch_size=batch_size, log=lambda *_: None)
        return done[key]

    return run


def p_present(df: pd.DataFrame, condition: str) -> pd.Series:
    """P(present) per slot over the scenes of one condition."""
    return df[df["condition"] == condition].groupby("slot")["present"].mean()


# -- 1. persistence oracle: the ceiling ------------------------------------------------------------
def test_oracle_keeps_the_ball_at_every_slot_and_the_control_reads_absent(run):
    df = run("persistence_oracle")
    assert sorted(df["condition"].unique()) == sorted(CONDITIONS)
    assert len(df) == len(CONDITIONS) * 2 * len(RADII) * N_SLOTS
    curve = belief_curve(df)
    for motion in MAINS:
        assert (p_present(df, motion) == 1.0).all()
        assert (p_present(df, f"{motion}_never_rendered") == 0.0).all()
        # the ball is in the oracle's pixels from slot 0 on: the never-visible context must not be
        # shared between the motions (it is, by the visible pixels alone)
        assert (p_present(df, f"{motion}_never_visible") == 1.0).all()
        assert carry_over(curve, "persistence_oracle", motion) == pytest.approx(df["t_s"].max())
        # the prediction is the encoder's present world: e = alpha = 1 in every readout region
        main = df[df["condition"] == motion]
        np.testing.assert_allclose(main["e"], 1.0, atol=1e-5)
        np.testing.assert_allclose(main["alpha"], 1.0, atol=1e-4)
        assert (df.loc[df["condition"] == f"{motion}_never_rendered", "e"] < 0).all()
    moving = df[df["condition"] == "moving"]
    assert (moving["nearest_band"] == "moving").all()
    assert (p_present(df, "moving_exit") == 0.0).all()  # the exit ball left the frame: nothing hidden


def test_oracle_under_the_reveal_query_reads_the_world_each_reveal_shows(inner, manifest, scenes):
    """Reveal at the end (Section 3.3): the oracle fills the gap with the revealed world's pixels."""
    prober = CachedProber(CalibrationPredictor(inner, "persistence_oracle"), "oracle", manifest, scenes,
                          query="reveal")
    df = prober.run(batch_size=4, log=lambda *_: None)
    for motion in MAINS:
        assert (p_present(df, f"{motion}_reveal_present") == 1.0).all()
        assert (p_present(df, f"{motion}_reveal_absent") == 0.0).all()
    assert sorted(df["slot"].unique()) == list(range(N_SLOTS - 2))


# -- 2. object freezer: the static world ----------------------------------------------------------
def test_freezer_keeps_a_stationary_ball_and_freezes_a_moving_one_where_last_seen(run):
    df = run("object_freezer")
    assert (p_present(df, "stationary") == 1.0).all()
    assert (p_present(df, "moving").loc[LATE:] == 0.0).all()
    moving = df[df["condition"] == "moving"]
    assert (moving.loc[moving["slot"] >= LATE, "nearest_band"] == "static").all()
    assert (p_present(df, "moving_never_rendered") == 0.0).all()


# -- 3. linear extrapolation: the moving world ----------------------------------------------------
def test_extrapolation_keeps_the_moving_ball_on_its_path(run):
    df = run("linear_extrapolation")
    for motion in MAINS:
        assert (p_present(df, motion) == 1.0).all()
        assert (p_present(df, f"{motion}_never_rendered") == 0.0).all()
    moving = df[df["condition"] == "moving"]
    assert (moving["nearest_band"] == "moving").all()
    assert moving["alpha"].min() > 0.8  # the ball lands within a pixel of its path to the end


# -- 4. known posterior ---------------------------------------------------------------------------
QS = (0.0, 0.25, 0.75, 1.0)


def test_known_posterior_mean_decides_by_the_step_and_projects_onto_q(run):
    alpha, e = {}, {}
    for q in QS:
        df = run("known_posterior", q)
        for motion in MAINS:
            main = df[df["condition"] == motion]
            assert (p_present(df, motion) == float(q > 0.5)).all(), (q, motion)
            assert (p_present(df, f"{motion}_never_rendered") == 0.0).all()
            alpha[q, motion], e[q, motion] = main["alpha"].mean(), main["e"].mean()
    for motion in MAINS:
        a = [alpha[q, motion] for q in QS]
        assert np.all(np.diff(a) > 0), a
        np.testing.assert_allclose(a, QS, atol=0.1)  # the absent fill's error under the ball: 0.08 here
        assert np.all(np.diff([e[q, motion] for q in QS]) > 0)


def test_known_posterior_sample_follows_q_over_scenes_and_is_deterministic(run):
    df = run("known_posterior", 0.5, "sample")
    main = df[df["condition"].isin(MAINS)]
    per_scene = main.groupby(["condition", "scene_id"])["present"].agg(["min", "max"])
    assert (per_scene["min"] == per_scene["max"]).all()  # one draw per scene: oracle or absent fill
    assert 0.0 < per_scene["min"].mean() < 1.0
    again = run("known_posterior", 0.5, "sample", batch_size=1)  # the draw never depends on the batch
    pd.testing.assert_frame_equal(df.drop(columns="model"), again.drop(columns="model"), check_exact=False,
                                  rtol=1e-5)
    assert (df["present"] == again["present"]).all()


# -- 5. wiring --------------------------------------------------------------------------------------
def test_readout_regions_and_bands_lie_inside_the_target_sets(inner, manifest, scenes):
    prober = probe.Prober(inner, "tiny", manifest, scenes)
    for radius in RADII:
        geom = ProbeGeometry(prober.grid, radius, prober.event_slot)
        for target in (geom.hidden(prober.event_slot), geom.hidden(0)):
            for scene in (s for s in manifest["scenes"] if s["radius"] == radius):
                xs = slot_ball_x(scene["ball_x"], prober.grid.tubelet_size)
                for slot in geom.readout_slots():
                    assert np.isin(geom.region(slot, xs[slot]), target).all()
                    assert np.isin(geom.band(slot), target).all()


def test_prober_refuses_a_region_outside_the_target(inner, manifest, scenes):
    prober = probe.Prober(inner, "tiny", manifest, scenes)
    geom = ProbeGeometry(prober.grid, 32, prober.event_slot)
    batch = [s for s in manifest["scenes"] if s["motion"] == "moving" and s["radius"] == 32][:1]
    full = geom.hidden(prober.event_slot)
    short = full[full >= prober.grid.side**2 * (prober.event_slot + 1)]  # the event's slot left out
    with torch.inference_mode():
        refs = {w: inner.encode(prober._load(batch, w)) for w in ("present", "absent", "static")}
    preds = {"moving": (refs["present"][:, torch.as_tensor(short)], short, geom.readout_slots())}
    with pytest.raises(ValueError, match="outside the predicted target set"):
        prober._readouts("moving", batch, geom, refs, preds)


def test_predict_gathers_hidden_tokens_only(inner, manifest, scenes):
    scene = next(s for s in manifest["scenes"] if s["motion"] == "moving" and s["radius"] == 32)
    oracle = CalibrationPredictor(inner, "persistence_oracle")
    grid = probe.Prober(inner, "tiny", manifest, scenes).grid
    geom = ProbeGeometry(grid, 32, 2)
    hidden = geom.hidden(2)
    visible = geom.visible(hidden)
    x = inner.preprocess(read_video(scenes / scene["worlds"]["present"])[None])
    with torch.inference_mode():
        context = oracle.encode(x, visible)
        assert context.shape[1] == grid.n_tokens
        torch.testing.assert_close(context[:, : len(visible)], inner.encode(x, visible), rtol=0, atol=0)
        some = hidden[::7]
        torch.testing.assert_close(oracle.predict(context, visible, some), inner.encode(x)[:, torch.as_tensor(some)],
                                   rtol=1e-5, atol=1e-5)
        with pytest.raises(ValueError, match="not hidden"):
            oracle.predict(context, visible, np.array([visible[0], hidden[0]]))


# -- 6. no leak -------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [r for r in RULES if r not in ("persistence_oracle", "known_posterior")])
def test_a_non_privileged_rule_never_reads_hidden_pixels(rule, inner, manifest, scenes):
    batch = [s for s in manifest["scenes"] if s["motion"] == "moving"]
    x = inner.preprocess(np.stack([read_video(scenes / s["worlds"]["present"]) for s in batch]))
    grid = probe.Prober(inner, "tiny", manifest, scenes).grid
    predictor = CalibrationPredictor(inner, rule)
    privileged = CalibrationPredictor(inner, "persistence_oracle")
    for from_slot in (2, 0):  # the main mask and the never-visible one
        geom = ProbeGeometry(grid, 32, 2)
        hidden = geom.hidden(from_slot)
        visible = geom.visible(hidden)
        _, pixels = predictor.hidden_tokens(x, visible)
        noise = torch.rand(x.shape, generator=torch.Generator().manual_seed(3)) * 4 - 2
        changed = torch.where(torch.as_tensor(pixels)[None, :, None], noise, x)
        assert not torch.equal(changed, x)
        with torch.inference_mode():
            a, b = predictor.encode(x, visible), predictor.encode(changed, visible)
            assert torch.equal(a, b)
            assert torch.equal(predictor.predict(a, visible, hidden), predictor.predict(b, visible, hidden))
            assert not torch.equal(privileged.encode(x, visible), privileged.encode(changed, visible))


# -- construction, CLI and Table 3 ----------------------------------------------------------------
def test_bad_calibration_specs_are_refused(inner):
    with pytest.raises(ValueError, match="unknown calibration predictor"):
        CalibrationPredictor(inner, "oracle")
    for q in (None, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"q in \[0, 1\]"):
            CalibrationPredictor(inner, "known_posterior", q)
    with pytest.raises(ValueError, match="belong to known_posterior"):
        CalibrationPredictor(inner, "object_freezer", 0.5)
    with pytest.raises(ValueError, match="unknown known_posterior mode"):
        CalibrationPredictor(inner, "known_posterior", 0.5, "median")
    spec = {"source": "calibration", "predictor": "object_freezer", "encoder": "tiny"}
    with pytest.raises(ValueError, match="needs 'encoder_spec'"):
        probe_backend(spec)
    with pytest.raises(ValueError, match="not calibration"):
        probe_backend({**spec, "encoder_spec": dict(spec)})


def test_cli_probes_a_calibration_spec_and_table3_lists_it(scenes, tmp_path, run):
    encoder = {"source": "random", "config": TINY, "seed": 1}
    spec = {"source": "calibration", "predictor": "linear_extrapolation", "encoder": "tiny", "encoder_spec": encoder}
    probe.main(["--scenes", str(scenes), "--model-name", "extrapolation", "--spec", json.dumps(spec),
                "--threads", "1", "--out", str(tmp_path / "p.csv"), "--out-info", str(tmp_path / "p.json")])
    info = json.loads((tmp_path / "p.json").read_text())
    assert info["identity"]["spec"]["encoder_spec"]["config"] == TINY
    assert info["identity"]["calibration"]["predictor"] == "linear_extrapolation"
    assert info["identity"]["calibration"]["reads_hidden_pixels"] is False
    cli = pd.read_csv(tmp_path / "p.csv")
    same = run("linear_extrapolation")  # the same encoder (seed 1) and rule in this process
    assert (cli["present"].to_numpy() == same["present"].to_numpy()).all()
    both = pd.concat([cli, run("persistence_oracle")], ignore_index=True)
    wide, _ = table3(belief_curve(both))
    assert set(wide["model"]) == {"extrapolation", "persistence_oracle"}
    assert wide.loc[(wide["model"] == "persistence_oracle") & (wide["condition"] == "moving"),
                    "carry_over_s"].item() == pytest.approx(both["t_s"].max(), abs=1e-6)


@pytest.mark.parametrize("query", ["tube", "tube_sparse"])
def test_oracle_under_the_tube_query_keeps_the_ball_in_the_block(inner, tmp_path, query):
    """Pretraining-consistent query (Appendix I): the oracle fills the block with the present world
    (1.00 at every slot from the entry), the never-rendered control with no ball (0.00)."""
    write_scenes(tmp_path, radii=RADII, distractors=[2], n_seeds=1, approach_frames=16)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    prober = probe.Prober(CalibrationPredictor(inner, "persistence_oracle"), "oracle", manifest, tmp_path,
                          query=query)
    df = prober.run(batch_size=4, log=lambda *_: None)
    assert (p_present(df, "moving") == 1.0).all() and (p_present(df, "moving_never_rendered") == 0.0).all()
    assert sorted(df["slot"].unique()) == list(range(N_SLOTS - 6))  # 16 frames of approach: 8 slots before


def test_oracle_under_the_container_query_finds_the_ball_in_the_box_only(inner, tmp_path):
    """Visible container (Section 3.3, Table 6): the oracle fills the opened box with what it holds:
    the ball in the main condition (1.00 at every time hidden), nothing in both controls (0.00)."""
    write_container_scenes(tmp_path, radii=RADII, distractors=[2], n_seeds=1)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    prober = probe.Prober(CalibrationPredictor(inner, "persistence_oracle"), "oracle", manifest, tmp_path,
                          query="container")
    df = prober.run(batch_size=4, log=lambda *_: None)
    for motion in MAINS:
        assert (df[df["condition"] == f"container_{motion}"]["present"]).all()
        for control in ("never_shown", "exit"):
            assert not df[df["condition"] == f"container_{motion}_{control}"]["present"].any()
    assert df["t_s"].nunique() == 4


def test_the_oracles_features_are_the_present_worlds_region_means(inner, manifest, scenes):
    """The linear readouts' input through the real probe: the oracle's prediction region means equal
    the present world's reference ones (Table 9's encoder probe then reads them as present)."""
    prober = CachedProber(CalibrationPredictor(inner, "persistence_oracle"), "oracle", manifest, scenes)
    prober.run(batch_size=4, log=lambda *_: None)
    arrays = prober.feature_arrays()
    refs = {key: i for i, key in enumerate(zip(arrays["ref_motion"], arrays["ref_scene_id"], arrays["ref_slot"]))}
    at = [refs[key] for key in zip(arrays["motion"], arrays["scene_id"], arrays["slot"])]
    main = np.isin(arrays["condition"], MAINS)
    np.testing.assert_allclose(arrays["pred"][main], arrays["z_present"][at][main], rtol=1e-5, atol=1e-6)
    control = np.char.endswith(arrays["condition"], "_never_rendered")
    assert not np.allclose(arrays["pred"][control], arrays["z_present"][at][control])
    assert len(table9({"oracle": arrays})) > 0
