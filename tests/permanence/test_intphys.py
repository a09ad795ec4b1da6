"""IntPhys-2019 evaluator (permanence.intphys): reader, windows, surprise, rules, pairs, bootstrap, CLI,
the L1 readout beside a scale head's negative log-likelihood and Table 1 (permanence.intphys_tables).

Known answers throughout: hand-made dev-set directories, a fake predictor whose tokens are the
frame index (so a window's surprise has a closed form), hand-made surprise tables for the rules of
Table 10 in the paper-text protocol (the reference's: test_intphys_scoring.py), and, end to end on
the workflow's own fixture (permanence.intphys_fixture), the real tiny V-JEPA 2 under the
persistence oracle (every pair ties: 50% in the text's protocol, 0% in the reference's) and a
random predictor (about 50%).
"""

import functools
import hashlib
import json

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from worldmemory.common.seeds import stable_rng
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model
from worldmemory.permanence import intphys, intphys_tables
from worldmemory.permanence import intphys_scoring as scoring
from worldmemory.permanence.calibration import CalibrationPredictor
from worldmemory.permanence.intphys_fixture import write_fixture
from worldmemory.permanence.intphys_scoring import PAPER_TEXT, REFERENCE
from worldmemory.permanence.objectives import LaplaceScaleHead

TINY = dict(crop_size=64, patch_size=16, frames_per_clip=32, tubelet_size=2, hidden_size=48,
            num_attention_heads=4, num_hidden_layers=2, pred_hidden_size=32,
            pred_num_attention_heads=4, pred_num_hidden_layers=1, num_pooler_layers=1)


# -- reader ------------------------------------------------------------------------------------------
def make_video(video_dir, is_possible, n_frames=3, size=8, status=True, value=None):
    """A video directory whose frame f is filled with the value 10 * f (its index in the file names),
    or with ``value`` in every frame when given."""
    (video_dir / "scene").mkdir(parents=True)
    for f in range(n_frames):
        fill = 10 * f if value is None else value
        Image.fromarray(np.full((size, size, 3), fill, np.uint8)).save(video_dir / "scene" / f"scene_{f + 1:03d}.png")
    if status:
        (video_dir / "status.json").write_text(json.dumps({"header": {"is_possible": is_possible}}))


def make_scene(scene_dir, labels, **kwargs):
    for number, label in enumerate(labels, start=1):
        make_video(scene_dir / str(number), label, **kwargs)


def test_reader_reads_is_possible_from_status_json_in_block_scene_video_order(tmp_path):
    make_scene(tmp_path / "O2" / "01", [False, True, True, False])
    make_scene(tmp_path / "O1" / "02", [True, False, False, True])
    make_scene(tmp_path / "O1" / "01", [True, True, False, False])
    videos = intphys.read_dataset(tmp_path)
    assert [(v.block, v.scene, v.video) for v in videos][:5] == [
        ("O1", "01", "1"), ("O1", "01", "2"), ("O1", "01", "3"), ("O1", "01", "4"), ("O1", "02", "1")]
    assert [v.is_possible for v in videos] == [True, True, False, False, True, False, False, True,
                                              False, True, True, False]
    assert videos[-1].path == tmp_path / "O2" / "01" / "4"


@pytest.mark.parametrize("labels, message", [
    ([True, True, False], "found 1: possible, 2: possible, 3: impossible"),
    ([True, True, True, False], "found 1: possible, 2: possible, 3: possible, 4: impossible"),
    ([True, False, False, True, False], "2 possible and 2 impossible"),
])
def test_reader_refuses_a_scene_without_two_possible_and_two_impossible_videos(tmp_path, labels, message):
    make_scene(tmp_path / "O1" / "07", labels)
    with pytest.raises(ValueError, match=f"O1/07: .*{message}"):
        intphys.read_dataset(tmp_path)


def test_reader_refuses_a_missing_or_malformed_status(tmp_path):
    make_scene(tmp_path / "O1" / "01", [True, True, False])
    make_video(tmp_path / "O1" / "01" / "4", False, status=False)
    with pytest.raises(ValueError, match="O1/01/4/status.json is missing"):
        intphys.read_dataset(tmp_path)
    (tmp_path / "O1" / "01" / "4" / "status.json").write_text(json.dumps({"header": {"possible": False}}))
    with pytest.raises(ValueError, match="O1/01/4/status.json: expected JSON with header.is_possible"):
        intphys.read_dataset(tmp_path)
    (tmp_path / "O1" / "01" / "4" / "status.json").write_text(json.dumps({"header": {"is_possible": "false"}}))
    with pytest.raises(ValueError, match="must be true or false, found 'false'"):
        intphys.read_dataset(tmp_path)
    with pytest.raises(ValueError, match="holds no <block>/<scene>/<video>/"):
        intphys.read_dataset(tmp_path / "O1" / "01" / "1" / "scene")


def test_frames_are_subsampled_to_7_5_fps_and_squash_resized(tmp_path):
    make_video(tmp_path / "v", True, n_frames=10, size=8)
    frames = intphys.read_frames(tmp_path / "v", size=4, source_fps=30.0)  # every fourth frame
    assert frames.shape == (3, 4, 4, 3) and frames.dtype == np.uint8
    assert frames[:, 0, 0, 0].tolist() == [0, 40, 80]
    assert intphys.read_frames(tmp_path / "v", size=8)[:, 0, 0, 0].tolist() == list(range(0, 100, 10))
    assert intphys.frame_indices(7, 15.0).tolist() == [0, 2, 4, 6]
    assert intphys.frame_indices(10, 11.25).tolist() == [0, 2, 3, 5, 6, 8, 9]  # 1.5 source frames per frame
    # the reference reads 99 // 2 = 49 frames of a 100-frame, 15 fps video: 0, 2, ..., 96, not 98
    assert intphys.frame_indices(100, 15.0, drop_last=True).tolist() == list(range(0, 97, 2))
    assert intphys.read_frames(tmp_path / "v", size=8, drop_last=True)[:, 0, 0, 0].tolist() == list(range(0, 90, 10))
    with pytest.raises(ValueError, match="below the protocol's 7.5 fps"):
        intphys.read_frames(tmp_path / "v", size=8, source_fps=5.0)


# -- windows and surprise -------------------------------------------------------------------------------
def test_window_tokens_and_starts_for_two_and_four_context_frames():
    visible, target = intphys.window_tokens(2, 14, 2, side=2)  # 4 tokens per slot, 8 slots
    assert visible.tolist() == [0, 1, 2, 3]
    assert target.tolist() == list(range(4, 32))
    visible, target = intphys.window_tokens(4, 14, 2, side=2)  # 9 slots
    assert visible.tolist() == list(range(8))
    assert target.tolist() == list(range(8, 36))
    assert intphys.window_starts(20, 2, 14, 2).tolist() == [0, 2, 4]
    assert intphys.window_starts(20, 4, 14, 2).tolist() == [0, 2]
    assert intphys.window_starts(17, 4, 14, 2).tolist() == []
    for context, horizon in ((3, 14), (2, 13), (0, 14)):
        with pytest.raises(ValueError, match="positive multiple of the tubelet size 2"):
            intphys.window_tokens(context, horizon, 2, side=2)


class FrameIndexPredictor:
    """A MaskedLatentPredictor on a 2 x 2 patch grid whose tokens are (m, 1, 0), m their tubelet's mean
    pixel value, and whose prediction is 0: a window's surprise is the mean |layer_norm(m, 1, 0)| of
    its horizon's tokens."""

    crop_size, patch_size, tubelet_size = 2, 1, 2
    model = torch.nn.Identity()

    def __init__(self):
        self.calls = []

    def preprocess(self, clips):
        return torch.as_tensor(np.asarray(clips), dtype=torch.float64).permute(0, 1, 4, 2, 3)

    def encode(self, x, visible=None):
        b, t = x.shape[:2]
        m = x.mean(dim=2).reshape(b, t // 2, 2, 4).mean(dim=2).reshape(b, -1, 1)
        tokens = torch.cat([m, torch.ones_like(m), torch.zeros_like(m)], dim=-1)
        self.calls.append(("encode", None if visible is None else np.asarray(visible).tolist(), x.shape[1]))
        return tokens if visible is None else tokens[:, torch.as_tensor(visible)]

    def predict(self, context, visible, target):
        self.calls.append(("predict", np.asarray(visible).tolist(), np.asarray(target).tolist()))
        return torch.zeros(context.shape[0], len(target), 3, dtype=context.dtype)


def frame_clip(n_frames):
    """(1, T, 3, 2, 2): every pixel of frame t is t."""
    return torch.arange(n_frames, dtype=torch.float64).reshape(1, n_frames, 1, 1, 1).expand(1, n_frames, 3, 2, 2)


def horizon_error(start, context, k=None):
    """The frame-index predictor's surprise of the window at ``start``: its horizon's slots hold frames
    start+C+2k and start+C+2k+1 (m = start+C+2k+0.5), layer-normed over (m, 1, 0), against 0; the
    mean over the 7 slots of a 14-frame horizon, or slot ``k``'s alone."""
    def normed(m):
        v = np.array([m, 1.0, 0.0])
        return np.abs((v - v.mean()) / np.sqrt(v.var() + 1e-5)).mean()

    if k is not None:
        return normed(start + context + 2 * k + 0.5)
    return np.mean([normed(start + context + 2 * k + 0.5) for k in range(7)])


@pytest.mark.parametrize("context", [2, 4])
def test_window_surprise_is_the_horizons_error_against_the_whole_windows_normed_encoding(context):
    backend = FrameIndexPredictor()
    starts, values = intphys.window_surprises(backend, frame_clip(22), context, batch_size=2)
    assert starts.tolist() == list(range(0, 22 - context - 14 + 1, 2))
    assert list(values) == ["surprise"]  # no scale: the surprise is the L1 readout, no surprise_l1 beside it
    np.testing.assert_allclose(values["surprise"], [horizon_error(s, context) for s in starts])
    n_visible = context // 2 * 4
    assert ("encode", list(range(n_visible)), context + 14) in backend.calls
    assert ("predict", list(range(n_visible)), list(range(n_visible, (context + 14) // 2 * 4))) in backend.calls
    assert ("encode", None, context + 14) in backend.calls


def test_reference_windows_are_16_frames_at_every_context_length():
    """The reference cuts 16-frame windows and predicts the 16 - C frames after C visible ones, so
    every context length has the same start frames (the min rule uses them all)."""
    backend = FrameIndexPredictor()
    windows = intphys.score_video(backend, frame_clip(22), (2, 4), REFERENCE, batch_size=8)
    assert windows.groupby("context")["start"].apply(list).to_dict() == {2: [0, 2, 4, 6], 4: [0, 2, 4, 6]}
    assert {call[2] for call in backend.calls if call[0] == "encode"} == {16}
    assert ("predict", list(range(8)), list(range(8, 32))) in backend.calls  # C = 4: 2 slots seen, 6 predicted
    np.testing.assert_allclose(windows.loc[windows["context"] == 4, "surprise"],
                               [np.mean([horizon_error(s, 4, k) for k in range(6)]) for s in (0, 2, 4, 6)])
    with pytest.raises(ValueError, match="context 16 leaves nothing to predict"):
        intphys.score_video(backend, frame_clip(22), (16,), REFERENCE)


def test_laplace_nll_matches_the_closed_form():
    rng = stable_rng("laplace", "tests.intphys")
    pred, target = (torch.as_tensor(rng.normal(size=(3, 5, 4))) for _ in range(2))
    l1 = (pred - target).abs().mean(dim=(1, 2))
    torch.testing.assert_close(intphys.surprise(pred, target), l1)
    for b in (0.25, 1.0, 3.0):
        nll = intphys.surprise(pred, target, scale=lambda p, b=b: torch.tensor(b))
        torch.testing.assert_close(nll, l1 / b + np.log(2 * b))
    per_token = torch.full((3, 5, 1), 0.5)
    torch.testing.assert_close(intphys.surprise(pred, target, scale=lambda p: per_token), 2 * l1)
    with pytest.raises(ValueError, match="must be positive"):
        intphys.surprise(pred, target, scale=lambda p: torch.tensor(0.0))
    # through the windows: the scale head's surprise of the frame-index predictor, its L1 readout beside it
    backend = FrameIndexPredictor()
    _, values = intphys.window_surprises(backend, frame_clip(18), 2, scale=lambda p: torch.tensor(2.0))
    np.testing.assert_allclose(values["surprise"], [horizon_error(s, 2) / 2 + np.log(4) for s in (0, 2)])
    np.testing.assert_allclose(values["surprise_l1"], [horizon_error(s, 2) for s in (0, 2)])
    assert sum(call[0] == "predict" for call in backend.calls) == 1  # one forward pass gives both


# -- rules of Table 10 ---------------------------------------------------------------------------------------
def windows_table(per_video: dict) -> pd.DataFrame:
    """Window table from {(scene, video, is_possible): {context: [surprise per start 0, 2, ...]}} in block O1."""
    rows = []
    for (scene, video, possible), by_context in per_video.items():
        for context, values in by_context.items():
            rows += [{"block": "O1", "scene": scene, "video": video, "is_possible": possible, "match": 1,
                      "context": context, "start": 2 * i, "surprise": v} for i, v in enumerate(values)]
    return pd.DataFrame(rows)


def test_min_rule_takes_the_minimum_per_start_frame_over_the_start_frames_every_context_fits():
    windows = windows_table({("01", "1", True): {2: [1.0, 5.0, 9.0], 4: [3.0, 2.0]}})
    table = scoring.video_surprises(windows).set_index("context")["surprise"]
    assert table.index.tolist() == ["2", "4", "min"]
    assert table["2"] == pytest.approx(5.0)
    assert table["4"] == pytest.approx(2.5)
    assert table["min"] == pytest.approx(1.5)  # min(1, 3), min(5, 2); start 4 has no 4-frame window


def test_the_l1_readout_is_aggregated_like_the_surprise():
    surprises = {("01", "1", True): {2: [1.0, 5.0, 9.0], 4: [3.0, 2.0]}}
    l1 = windows_table({("01", "1", True): {2: [2.0, 4.0, 0.0], 4: [1.0, 6.0]}})["surprise"]
    table = scoring.video_surprises(windows_table(surprises).assign(surprise_l1=l1))
    assert list(table.columns) == [*scoring.VIDEO_COLUMNS, "context", "surprise", "surprise_l1"]
    table = table.set_index("context")
    assert table["surprise"].to_dict() == pytest.approx({"2": 5.0, "4": 2.5, "min": 1.5})
    assert table["surprise_l1"].to_dict() == pytest.approx({"2": 2.0, "4": 3.5, "min": 2.5})  # min(2, 1), min(4, 6)
    assert scoring.l1_readout(table.reset_index())["surprise"].tolist() == pytest.approx([2.0, 3.5, 2.5])
    assert scoring.l1_readout(scoring.video_surprises(windows_table(surprises))) is None


def scene_surprises(scene, possible, impossible, context="2"):
    """Per-video rows of one scene and readout: videos 1, 2 possible, 3, 4 impossible (the reference
    pairs 1 with 3 and 2 with 4)."""
    return pd.DataFrame([{"block": "O1", "scene": scene, "video": str(i + 1), "is_possible": i < 2,
                          "match": 1 + i % 2, "context": context, "surprise": s}
                         for i, s in enumerate([*possible, *impossible])])


def test_pairwise_accuracy_counts_four_pairs_per_scene_and_a_tie_as_half():
    table = scoring.pairs(scene_surprises("01", [1.0, 2.0], [3.0, 2.0]), PAPER_TEXT)
    assert len(table) == 4
    assert table.set_index(["possible", "impossible"])["correct"].to_dict() == {
        ("1", "3"): 1.0, ("1", "4"): 1.0, ("2", "3"): 1.0, ("2", "4"): 0.5}
    assert scoring.accuracy(table, PAPER_TEXT) == 87.5
    both = pd.concat([scene_surprises("01", [1.0, 2.0], [3.0, 2.0]), scene_surprises("02", [5.0, 5.0], [1.0, 6.0])])
    assert scoring.accuracy(scoring.pairs(both, PAPER_TEXT), PAPER_TEXT) == pytest.approx(100 * (3.5 + 2) / 8)
    with pytest.raises(ValueError, match="scene O1/01: expected 2 possible and 2 impossible"):
        scoring.pairs(scene_surprises("01", [1.0, 2.0], [3.0]), PAPER_TEXT)


def test_best_rule_picks_the_most_accurate_context_and_the_smallest_on_a_tie():
    videos = pd.concat([
        scene_surprises("01", [1.0, 1.0], [0.0, 0.0], "2"),  # 0%
        scene_surprises("01", [0.0, 0.0], [1.0, 1.0], "4"),  # 100%
        scene_surprises("01", [0.0, 0.0], [1.0, 1.0], "10"),  # 100%, longer
        scene_surprises("01", [0.0, 1.0], [0.5, 0.5], "6"),  # 50%
        scene_surprises("01", [1.0, 1.0], [1.0, 1.0], "min"),  # ties: 50%
    ])
    assert scoring.context_accuracies(videos, PAPER_TEXT) == {"2": 0.0, "4": 100.0, "6": 50.0, "10": 100.0,
                                                              "min": 50.0}
    assert scoring.rule_readouts(videos, "fixed", PAPER_TEXT) == {"O1": "2"}
    assert scoring.rule_readouts(videos, "best", PAPER_TEXT) == {"O1": "4"}
    assert scoring.rule_readouts(videos, "min", PAPER_TEXT) == {"O1": "min"}
    table = scoring.rule_table(videos, "m", PAPER_TEXT, resamples=100).set_index("rule")
    assert table.loc["best", "context"] == "4" and table.loc["best", "accuracy"] == 100.0
    assert table.loc["fixed", "accuracy"] == 0.0 and table.loc["min", "accuracy"] == 50.0
    assert table.loc["fixed", "accuracy_O1"] == 0.0


# -- scene bootstrap ----------------------------------------------------------------------------------------
def per_scene(values):
    index = pd.MultiIndex.from_tuples([("O1", f"{i + 1:02d}") for i in range(len(values))], names=["block", "scene"])
    return pd.Series(values, index=index, dtype=float)


def test_bootstrap_of_identical_checkpoints_is_exactly_zero_and_a_constant_advantage_is_that_constant():
    rng = stable_rng("scenes", "tests.intphys")
    a = per_scene(rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=30))
    same = scoring.bootstrap([a], [a.copy()], key="same")
    assert (same["estimate"], same["low"], same["high"]) == (0.0, 0.0, 0.0)
    better = per_scene(np.minimum(a.to_numpy(), 0.75) + 0.25)
    worse = per_scene(np.minimum(a.to_numpy(), 0.75))
    diff = scoring.bootstrap([better], [worse], key="constant")
    assert diff["estimate"] == pytest.approx(25.0) and diff["low"] == pytest.approx(25.0)
    assert diff["high"] == pytest.approx(25.0)
    assert diff["scenes"] == 30 and diff["resamples"] == 10_000


def test_bootstrap_is_seeded_by_its_key_and_averages_seeds_per_scene():
    rng = stable_rng("seeds", "tests.intphys")
    a = per_scene(rng.uniform(size=20))  # not quantised, so two draws give two intervals
    first, again = scoring.bootstrap([a], key="k"), scoring.bootstrap([a], key="k")
    assert first == again
    assert scoring.bootstrap([a], key="other") != first
    assert first["estimate"] == pytest.approx(100 * a.mean())
    assert first["low"] < first["estimate"] < first["high"]
    # two seeds that disagree on every scene average to 0.5 per scene: no spread left
    one, two = per_scene([1.0, 0.0] * 5), per_scene([0.0, 1.0] * 5)
    mean = scoring.bootstrap([one, two], key="k")
    assert (mean["estimate"], mean["low"], mean["high"]) == (50.0, 50.0, 50.0)
    with pytest.raises(ValueError, match="seed 1 of checkpoint a covers other scenes"):
        scoring.bootstrap([one, per_scene([1.0] * 9)])
    with pytest.raises(ValueError, match="checkpoints a and b cover different scenes"):
        scoring.bootstrap([one], [per_scene([1.0] * 9)])


# -- end to end on the fixture with a tiny V-JEPA 2 ---------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread: the tiny model's calls are too small to share, and on a busy machine the
    threads only wait for each other (ten times slower here with two)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("intphys")
    write_fixture(root, n_scenes=4, size=64)
    return root


@pytest.fixture(scope="module")
def inner():
    return VJEPA2Backend(build_model(TINY, seed=1))


def test_persistence_oracle_sees_the_true_future_so_every_pair_ties(dataset, inner):
    """The persistence oracle fills the horizon with the true pixels: its prediction is the target,
    surprise 0 on every video, and every pair a tie (50%, not above chance: it is no IntPhys oracle;
    intphys_oracle.ConsistentWorldOracle is)."""
    oracle = CalibrationPredictor(inner, "persistence_oracle")
    windows = intphys.score_dataset(oracle, intphys.read_dataset(dataset), (2, 10), 7.5, PAPER_TEXT,
                                    log=lambda *_: None)
    assert len(windows) == 16 * (9 + 5)  # 32 frames: windows of 16 and 24 frames every 2 frames
    assert windows["surprise"].abs().max() < 1e-6
    videos = scoring.video_surprises(windows)
    assert all(value == 50.0 for value in scoring.context_accuracies(videos, PAPER_TEXT).values())


def test_the_vjepa2_predictor_scores_every_window_of_a_video(dataset, inner):
    """The real predictor path (VJEPA2Backend.predict) on windows of 16 and 24 frames."""
    video = intphys.read_dataset(dataset)[0]
    clip = inner.preprocess(intphys.read_frames(video.path, inner.crop_size)[None])
    windows = intphys.score_video(inner, clip, (2, 10), PAPER_TEXT, batch_size=4)
    assert windows.groupby("context")["start"].apply(list).to_dict() == {2: list(range(0, 17, 2)),
                                                                         10: list(range(0, 9, 2))}
    assert np.isfinite(windows["surprise"]).all() and (windows["surprise"] > 0).all()


ENCODINGS: dict = {}  # the random predictors' encodings, shared across their seeds


class RandomPredictor:
    """Random tokens: the inner encoder's context and targets, a prediction drawn from a seeded
    generator, ten times the features' scale so that the draw, not the video, decides. The
    encodings are memoised by content (every seed reads the same windows)."""

    def __init__(self, inner, seed):
        self.inner = inner
        self.crop_size, self.patch_size, self.tubelet_size = inner.crop_size, inner.patch_size, inner.tubelet_size
        self.model = inner.model
        seed = int(stable_rng(str(seed), "tests.intphys.random").integers(2**31))
        self.generator = torch.Generator().manual_seed(seed)

    def preprocess(self, clips):
        return self.inner.preprocess(clips)

    def encode(self, x, visible=None):
        sample = x[..., ::8, ::8].contiguous().numpy().tobytes()  # the moving distractors tell windows apart
        key = (hashlib.sha256(sample).hexdigest(), x.shape, None if visible is None else tuple(visible))
        if key not in ENCODINGS:
            ENCODINGS[key] = self.inner.encode(x, visible)
        return ENCODINGS[key]

    def predict(self, context, visible, target):
        return 10 * torch.randn(context.shape[0], len(target), context.shape[2], generator=self.generator)


def test_a_random_predictor_scores_near_chance(dataset, inner, monkeypatch):
    monkeypatch.setattr(intphys, "read_frames", functools.cache(intphys.read_frames))  # decode once, not per seed
    videos = intphys.read_dataset(dataset)
    scores = []
    for seed in range(8):
        windows = intphys.score_dataset(RandomPredictor(inner, seed), videos, (2,), 7.5, PAPER_TEXT,
                                        log=lambda *_: None)
        table = scoring.pairs(scoring.readout(scoring.video_surprises(windows), "2"), PAPER_TEXT)
        scores.append(scoring.accuracy(table, PAPER_TEXT))
    assert len(set(scores)) > 1  # the draws decide
    assert abs(np.mean(scores) - 50.0) < 12.5, scores  # 8 x 16 pairs


def test_cli_scores_a_calibration_spec_and_writes_the_per_video_table_and_the_rules(dataset, tmp_path):
    """By default the reference protocol: the fixture's recorded 7.5 fps, each video's reference pair
    (the fixture's present/vanish and absent/appear videos share their openings), and the persistence
    oracle's ties, which the reference counts as errors: 0%, where the seed's text reads 50%."""
    encoder = {"source": "random", "config": TINY, "seed": 1}
    spec = {"source": "calibration", "predictor": "persistence_oracle", "encoder": "tiny", "encoder_spec": encoder}
    out, summary = tmp_path / "videos.csv", tmp_path / "summary.json"
    intphys.main(["--dataset", str(dataset), "--model-name", "oracle", "--spec", json.dumps(spec), "--threads", "1",
                  "--contexts", "2", "4", "--out", str(out), "--out-summary", str(summary)])
    table = pd.read_csv(out, dtype={"context": str, "scene": str, "video": str})
    assert list(table.columns) == ["block", "scene", "video", "is_possible", "match", "context", "surprise"]
    assert len(table) == 16 * 3 and sorted(table["context"].unique()) == ["2", "4", "min"]
    assert (table.groupby(["scene", "match", "context"])["is_possible"].sum() == 1).all()
    info = json.loads(summary.read_text())
    assert (info["protocol"], info["source_fps"], info["window"]) == ("reference", 7.5, 16)
    assert [r["rule"] for r in info["rules"]] == ["fixed", "best", "min"]
    assert all(r["accuracy"] == 0.0 and r["pairs"] == 8 for r in info["rules"])
    assert info["identity"]["calibration"]["predictor"] == "persistence_oracle"
    assert info["by_context"] == {"2": 0.0, "4": 0.0, "min": 0.0}
    assert info["readout"] == "l1" and "rules_l1" not in info  # no scale head: the rules are the L1 readout's
    with pytest.raises(ValueError, match="lacks 2"):
        intphys.main(["--dataset", str(dataset), "--model-name", "x", "--spec", json.dumps(spec),
                      "--contexts", "4", "--out", str(out), "--out-summary", str(summary)])


def test_a_checkpoint_with_a_scale_head_is_scored_by_its_negative_log_likelihood(tmp_path, dataset, inner):
    """A curriculum's directory holds its Laplace scale head: surprise is then |e| / b + log(2b)
    (here b = 2 everywhere); a directory without one, or a calibration fill, reads the L1 error."""
    inner.model.save_pretrained(tmp_path / "plain")
    assert intphys.scale_head(tmp_path / "plain", inner) is None
    inner.model.save_pretrained(tmp_path / "curriculum")
    LaplaceScaleHead(TINY["hidden_size"], init_scale=2.0).save(tmp_path / "curriculum")
    head = intphys.scale_head(tmp_path / "curriculum", inner)
    assert intphys.scale_head(tmp_path / "curriculum", CalibrationPredictor(inner, "persistence_oracle")) is None
    video = intphys.read_dataset(dataset)[0]
    clip = inner.preprocess(intphys.read_frames(video.path, inner.crop_size)[None])
    _, l1 = intphys.window_surprises(inner, clip, 2)
    _, nll = intphys.window_surprises(inner, clip, 2, scale=head)
    np.testing.assert_allclose(nll["surprise"], l1["surprise"] / 2 + np.log(4), rtol=1e-5)
    np.testing.assert_array_equal(nll["surprise_l1"], l1["surprise"])


def test_the_cli_records_the_l1_readout_of_a_checkpoint_with_a_scale_head(tmp_path, dataset, inner):
    """A curriculum's checkpoint (b = 2 everywhere): the per-video CSV carries surprise_l1 beside the
    negative log-likelihood, and the summary the rules over it (rules_l1); with a constant scale the
    NLL is monotone in the L1 error, so both readouts score alike."""
    inner.model.save_pretrained(tmp_path / "curriculum")
    LaplaceScaleHead(TINY["hidden_size"], init_scale=2.0).save(tmp_path / "curriculum")
    out, summary = tmp_path / "videos.csv", tmp_path / "summary.json"
    intphys.main(["--dataset", str(dataset), "--model-name", "curriculum", "--spec", json.dumps({"source": "train"}),
                  "--weights", str(tmp_path / "curriculum"), "--contexts", "2", "--out", str(out),
                  "--out-summary", str(summary)])
    table = pd.read_csv(out, dtype={"context": str, "scene": str, "video": str})
    assert list(table.columns) == [*scoring.VIDEO_COLUMNS, "context", "surprise", "surprise_l1"]
    np.testing.assert_allclose(table["surprise"], table["surprise_l1"] / 2 + np.log(4), rtol=1e-5)
    info = json.loads(summary.read_text())
    assert info["readout"] == "laplace_nll"
    assert [r["rule"] for r in info["rules_l1"]] == ["fixed", "best", "min"]
    assert [r["accuracy"] for r in info["rules_l1"]] == [r["accuracy"] for r in info["rules"]]
    assert all(r["pairs"] == 8 for r in info["rules_l1"])


# -- the L1 readout beside a scale head's negative log-likelihood (Table 1) --------------------------------------
class ContextMeanPredictor(FrameIndexPredictor):
    """The frame-index tokens, each target token predicted as the mean of the visible ones: on a video
    whose frames all hold v, every window predicts (v, 1, 0) against layer_norm(v, 1, 0)."""

    def predict(self, context, visible, target):
        self.calls.append(("predict", np.asarray(visible).tolist(), np.asarray(target).tolist()))
        return context.mean(dim=1, keepdim=True).expand(-1, len(target), -1)


def constant_l1(v):
    """ContextMeanPredictor's L1 surprise of a video whose frames all hold v: 3.67, 7, 10.33 at v = 10, 20, 30."""
    p = np.array([v, 1.0, 0.0])
    return np.abs(p - (p - p.mean()) / np.sqrt(p.var() + 1e-5)).mean()


def steep_scale(pred):
    """b = (v / 10)^4 for a prediction (v, 1, 0). Its NLL |e| / b + log(2b) is 4.36, 3.90, 5.22 at v = 10,
    20, 30: it ranks a 20-video below a 10-video, which the L1 error (3.67 < 7) ranks above."""
    return (pred[..., :1] / 10) ** 4


# scene: (values of the possible videos 1, 2, values of the impossible videos 3, 4). L1 (increasing in v):
# scene 01 4/4 pairs, scene 02 1.5/4 (20 < 30, 20 > 10, 30 = 30 ties, 30 > 10): 5.5/8 = 68.75%. Steep NLL:
# scene 01 0/4 (4.36 > 3.90), scene 02 2.5/4 (3.90 < 5.22, 3.90 < 4.36, tie, 5.22 > 4.36): 2.5/8 = 31.25%.
CONSTANT_SCENES = {"01": ([10, 10], [20, 20]), "02": ([20, 30], [30, 10])}
L1_ACCURACY, STEEP_NLL_ACCURACY = 68.75, 31.25


@pytest.fixture
def constant_videos(tmp_path):
    """A dev set of two scenes in O1 whose videos hold one value in all 18 frames (CONSTANT_SCENES)."""
    for scene, (possible, impossible) in CONSTANT_SCENES.items():
        labelled = [(True, v) for v in possible] + [(False, v) for v in impossible]
        for number, (label, value) in enumerate(labelled, start=1):
            make_video(tmp_path / "dev" / "O1" / scene / str(number), label, n_frames=18, size=2, value=value)
    return intphys.read_dataset(tmp_path / "dev")


def score_constant(videos, scale=None):
    """Window surprises of the constant dev set at C = 2 (starts 0, 2) and C = 4 (start 0)."""
    return intphys.score_dataset(ContextMeanPredictor(), videos, (2, 4), 7.5, PAPER_TEXT, scale=scale,
                                 log=lambda *_: None)


def video_values(videos: pd.DataFrame) -> pd.Series:
    """The constant value v of each per-video row (CONSTANT_SCENES)."""
    return pd.Series([CONSTANT_SCENES[s][0 if p else 1][(int(v) - 1) % 2]
                      for s, v, p in zip(videos["scene"], videos["video"], videos["is_possible"])], index=videos.index)


def test_without_a_scale_there_is_no_l1_column_the_surprise_is_the_l1_readout(constant_videos):
    windows = score_constant(constant_videos)
    assert list(windows.columns) == [*scoring.VIDEO_COLUMNS, "context", "start", "surprise"]
    videos = scoring.video_surprises(windows)
    assert list(videos.columns) == [*scoring.VIDEO_COLUMNS, "context", "surprise"]
    assert scoring.l1_readout(videos) is None
    np.testing.assert_allclose(videos["surprise"], video_values(videos).map(constant_l1))
    assert scoring.context_accuracies(videos, PAPER_TEXT) == {"2": L1_ACCURACY, "4": L1_ACCURACY, "min": L1_ACCURACY}


def test_the_l1_readout_keeps_the_l1_ranking_that_a_steep_scales_nll_reverses(constant_videos):
    plain, scaled = score_constant(constant_videos), score_constant(constant_videos, steep_scale)
    assert list(scaled.columns) == [*scoring.VIDEO_COLUMNS, "context", "start", "surprise", "surprise_l1"]
    np.testing.assert_array_equal(scaled["surprise_l1"], plain["surprise"])  # every window, exactly
    plain, scaled = scoring.video_surprises(plain), scoring.video_surprises(scaled)
    np.testing.assert_array_equal(scaled["surprise_l1"], plain["surprise"])  # every video and context, exactly
    pd.testing.assert_frame_equal(scoring.l1_readout(scaled), plain)
    b = (video_values(scaled) / 10) ** 4
    np.testing.assert_allclose(scaled["surprise"], video_values(scaled).map(constant_l1) / b + np.log(2 * b))
    assert scoring.context_accuracies(scaled, PAPER_TEXT) == {"2": STEEP_NLL_ACCURACY, "4": STEEP_NLL_ACCURACY,
                                                              "min": STEEP_NLL_ACCURACY}
    assert scoring.context_accuracies(scoring.l1_readout(scaled), PAPER_TEXT) == {
        "2": L1_ACCURACY, "4": L1_ACCURACY, "min": L1_ACCURACY}


def test_under_a_constant_scale_the_nll_and_the_l1_readout_agree(constant_videos):
    """b = 2: NLL = L1 / 2 + log 4 is increasing in the L1 error, so every pair (and tie) is the same."""
    plain, scaled = score_constant(constant_videos), score_constant(constant_videos, lambda p: torch.tensor(2.0))
    plain, scaled = scoring.video_surprises(plain), scoring.video_surprises(scaled)
    np.testing.assert_array_equal(scaled["surprise_l1"], plain["surprise"])
    np.testing.assert_allclose(scaled["surprise"], plain["surprise"] / 2 + np.log(4))
    for label in ("2", "4", "min"):
        nll, l1 = (scoring.pairs(scoring.readout(v, label), PAPER_TEXT)
                   for v in (scaled, scoring.l1_readout(scaled)))
        pd.testing.assert_frame_equal(nll, l1)
        assert scoring.accuracy(nll, PAPER_TEXT) == scoring.accuracy(l1, PAPER_TEXT) == L1_ACCURACY


def test_table1_adds_the_l1_readouts_accuracy_for_a_checkpoint_with_a_scale_head_only(constant_videos, tmp_path):
    """Table 1's accuracy_l1, right after accuracy: the fixed rule over surprise_l1 for the scale head's
    checkpoint, NaN for the plain one (its accuracy is the L1 readout); Table 10 and the differences
    keep the main readout."""
    for name, scale in (("curriculum", steep_scale), ("plain", None)):
        per_video = scoring.video_surprises(score_constant(constant_videos, scale))
        per_video.to_csv(tmp_path / f"{name}.csv", index=False, float_format="%.8g")
    paths = {name: tmp_path / "out" / f"{name}.csv" for name in ("table1", "table10", "differences")}
    intphys_tables.main(["--videos", f"curriculum={tmp_path / 'curriculum.csv'}", f"plain={tmp_path / 'plain.csv'}",
                         "--baseline", "plain", "--protocol", "paper-text", "--resamples", "100",
                         "--table1", str(paths["table1"]),
                         "--table10", str(paths["table10"]), "--differences", str(paths["differences"])])
    table1 = pd.read_csv(paths["table1"])
    assert list(table1.columns) == ["model", "accuracy", "accuracy_l1", "low", "high", "pairs", "accuracy_O1"]
    table1 = table1.set_index("model")
    assert table1.loc["curriculum", "accuracy"] == STEEP_NLL_ACCURACY
    assert table1.loc["curriculum", "accuracy_l1"] == L1_ACCURACY
    assert table1.loc["plain", "accuracy"] == L1_ACCURACY and np.isnan(table1.loc["plain", "accuracy_l1"])
    table10 = pd.read_csv(paths["table10"])
    assert "accuracy_l1" not in table10.columns
    fixed = table10[table10["rule"] == "fixed"].set_index("model")["accuracy"]
    assert fixed.to_dict() == {"curriculum": STEEP_NLL_ACCURACY, "plain": L1_ACCURACY}
    differences = pd.read_csv(paths["differences"]).set_index("rule")
    assert differences.loc["fixed", "difference"] == STEEP_NLL_ACCURACY - L1_ACCURACY
