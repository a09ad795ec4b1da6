"""PersistBench preparation under the configured schedules: the shapes (visible-invisible-visible,
visible-invisible, invisible-visible-invisible), windows relative to each video's length, users'
videos resized to the working resolution, and videos too short for their schedule dropped with
the reason instead of aborting. Small embedded panoramas and videos written from them."""

import json

import numpy as np
import pytest
from worldmemory.common.npz import save_npz
from worldmemory.common.video import read_video, write_video
from worldmemory.persistbench import prepare as pp
from worldmemory.persistbench.camera_paths import (
    SHAPES,
    PathParams,
    Schedule,
    ScheduleError,
    ScheduleSpec,
)

CAMERA = PathParams(fov_deg=90, width=48, height=48)
CAMERA_JSON = json.dumps({"fov_deg": 90, "width": 48, "height": 48})


def _pattern(visible) -> str:
    return "".join("1" if v else "0" for v in visible)


def _user_video(root, name, n_frames, width, kind="static", scene="static_000"):
    """A user's 360-degree video directory made from an embedded scene's frames and labels."""
    pano = pp.embedded_panorama(scene, kind, n_frames, width)
    video = root / name
    write_video(video / "panorama.mkv", pano.rgb, pano.fps)
    save_npz(video / "labels.npz", {"labels": pano.labels})
    (video / "video.json").write_text(json.dumps(
        {"kind": kind, "category": pano.category, "target": pano.target}))
    return pano


@pytest.mark.parametrize("shape, expected", [
    ("visible-invisible-visible", "1" * 8 + "0" * 8 + "1" * 8),
    ("visible-invisible", "1" * 12 + "0" * 12),
    ("invisible-visible-invisible", "0" * 8 + "1" * 8 + "0" * 8),
])
def test_each_shape_gives_its_visible_in_input_pattern(shape, expected, tmp_path):
    """Through the CLI the rule runs: the input camera sees the target exactly on the shape's
    visible segments (for invisible-visible-invisible it starts turned away), the reference on
    every frame; sequence.json and manifest.json record the shape and its bounds."""
    schedule = {"shape": shape}  # default bounds: the clip split evenly
    common = ["--out", str(tmp_path), "--n-frames", "24", "--pano-width", "128", "--schedule", json.dumps(schedule),
              "--camera", CAMERA_JSON]
    for sequence in ("static_000", "dynamic_000"):  # one job per sequence, then the one that lists them
        pp.main([*common, "--sequence", sequence])
    pp.main([*common, "--collect", "static_000", "dynamic_000"])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["dropped"] == [] and len(manifest["sequences"]) == 2
    assert manifest["schedule"]["shape"] == shape and "invisible" not in manifest
    for entry in manifest["sequences"]:
        with np.load(tmp_path / entry["id"] / "views.npz") as views:
            assert _pattern(views["visible_in_input"]) == expected, entry["id"]
            assert (views["reference_instance"] == 1).any(axis=(1, 2)).all()
        recorded = json.loads((tmp_path / entry["id"] / "sequence.json").read_text())["schedule"]
        assert recorded["shape"] == shape and recorded["n_frames"] == 24


def test_schedule_windows_per_shape_and_the_old_absolute_form():
    assert ScheduleSpec("visible-invisible-visible", (0.25, 0.75)).resolve(40).windows == ((10, 30),)
    assert ScheduleSpec("visible-invisible", (0.5,)).resolve(40).windows == ((20, 40),)
    ivi = ScheduleSpec("invisible-visible-invisible", (0.25, 0.75)).resolve(40)
    assert ivi.windows == ((0, 10), (30, 40)) and ivi.shape == "invisible-visible-invisible"
    assert _pattern(ivi.visible) == "0" * 10 + "1" * 20 + "0" * 10
    # transition frames: the visible frames next to each window, never an invisible one
    assert list(np.flatnonzero(ivi.transition(2))) == [10, 11, 28, 29]
    # the old form, [start, end) in frames, is the same Schedule as before
    old = ScheduleSpec.from_config(None, [16, 32]).resolve(48)
    assert old == Schedule(48, 16, 32) and old.to_json() == {
        "n_frames": 48, "invisible_start": 16, "invisible_end": 32, "inside_margin_deg": 1.0}
    # `schedule`, when set, replaces `invisible`
    assert ScheduleSpec.from_config({"shape": "visible-invisible"}, [16, 32]).frames is None
    with pytest.raises(ValueError, match=r"persistbench\.sequences\.schedule\.bounds.*needs 1"):
        ScheduleSpec("visible-invisible", (0.3, 0.6))
    with pytest.raises(ValueError, match=r"schedule\.shape = 'hidden'"):
        ScheduleSpec("hidden")
    with pytest.raises(ValueError, match="do not span"):
        Schedule(40, 0, 30, windows=((0, 10), (20, 40)))
    assert set(SHAPES) == {"visible-invisible-visible", "visible-invisible",
                           "invisible-visible-invisible"}


def test_relative_windows_scale_with_each_videos_length(tmp_path):
    spec = ScheduleSpec("visible-invisible-visible", (0.25, 0.75))
    assert spec.resolve(24).windows == ((6, 18),) and spec.resolve(48).windows == ((12, 36),)
    videos = tmp_path / "videos"
    _user_video(videos, "short", 16, 128)
    _user_video(videos, "long", 32, 128, "dynamic", "dynamic_000")
    manifest = pp.prepare(tmp_path / "out", 1, 0, 128, None, CAMERA, source=str(videos),
                          schedule={"shape": "visible-invisible-visible", "bounds": [0.25, 0.75]})
    assert [s["id"] for s in manifest["sequences"]] == ["long", "short"]
    for name, n in (("short", 16), ("long", 32)):
        with np.load(tmp_path / "out" / name / "views.npz") as views:
            assert _pattern(views["visible_in_input"]) == "1" * (n // 4) + "0" * (n // 2) + "1" * (n // 4)


def test_resize_keeps_labels_exact_and_blends_across_the_seam():
    labels = np.arange(2 * 8 * 16).reshape(2, 8, 16) * 7  # every pixel its own label
    rgb = np.zeros((2, 8, 16, 3), np.uint8)
    rgb[:, :, -1] = 255  # the last column white: on the sphere, next to the first
    small_rgb, small = pp.resize_panorama(rgb, labels, 8)
    assert small.shape == (2, 4, 8) and small_rgb.shape == (2, 4, 8, 3)
    np.testing.assert_array_equal(small, labels[:, 1::2, 1::2])  # nearest: pixel centres
    big_rgb, big = pp.resize_panorama(rgb, labels, 32)
    np.testing.assert_array_equal(big, labels.repeat(2, axis=1).repeat(2, axis=2))
    assert set(np.unique(big)) <= set(np.unique(labels))
    # the white column reaches the first output column through the seam, as on the sphere
    assert small_rgb[:, :, 0].min() > 0 and big_rgb[:, :, 0].min() > 0
    assert small_rgb[:, :, 3].max() == 0  # ... and nothing in the middle
    assert pp.resize_panorama(rgb, labels, 16)[1] is labels  # the working size: unchanged


def test_a_user_video_at_another_resolution_is_prepared_at_the_working_one(tmp_path):
    videos = tmp_path / "videos"
    source = _user_video(videos, "static_000", 24, 256)
    manifest = pp.prepare(tmp_path / "out", 1, 0, 128, (8, 16), CAMERA, source=str(videos))
    assert [s["id"] for s in manifest["sequences"]] == ["static_000"]
    out = tmp_path / "out" / "static_000"
    assert read_video(out / "panorama.mkv").shape == (24, 64, 128, 3)
    assert json.loads((out / "sequence.json").read_text())["source_size"] == [256, 128]
    pano = pp.user_panorama(videos / "static_000", 128)
    assert pano.rgb.shape == (24, 64, 128, 3)
    np.testing.assert_array_equal(pano.labels, source.labels[:, 1::2, 1::2])
    with np.load(out / "views.npz") as views:
        assert _pattern(views["visible_in_input"]) == "1" * 8 + "0" * 8 + "1" * 8


def test_a_video_too_short_for_its_schedule_is_dropped_with_its_reason(tmp_path, capsys):
    with pytest.raises(ScheduleError, match="segment 2 \\[2, 2\\) round"):
        ScheduleSpec("visible-invisible-visible", (0.3, 0.48)).resolve(5)
    with pytest.raises(ScheduleError, match="needs at least 4"):
        ScheduleSpec().resolve(3)
    with pytest.raises(ScheduleError, match="fewer than the 22 the window \\[10, 22\\)"):
        ScheduleSpec(frames=(10, 22)).resolve(16)
    videos = tmp_path / "videos"
    _user_video(videos, "long", 24, 128)
    _user_video(videos, "short", 12, 128)
    manifest = pp.prepare(tmp_path / "out", 1, 0, 128, (8, 16), CAMERA, source=str(videos))
    assert [s["id"] for s in manifest["sequences"]] == ["long"]
    [dropped] = manifest["dropped"]
    assert dropped["id"] == "short" and dropped["kind"] == "static"
    assert "12 frames, fewer than the 16" in dropped["dropped"][0]
    assert "persistbench.sequences" in dropped["dropped"][0]
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["dropped"] == [dropped]
    # its directory holds only the reasons, which its rollout, perception and score jobs read
    assert [p.name for p in (tmp_path / "out" / "short").iterdir()] == ["sequence.json"]
    assert json.loads((tmp_path / "out" / "short" / "sequence.json").read_text())["dropped"] == dropped["dropped"]
    assert "short: DROPPED, too short for its schedule" in capsys.readouterr().out


def test_a_dropped_sequence_passes_every_per_sequence_job_with_nothing(tmp_path):
    """The workflow plans a model's jobs for every sequence before any is prepared: a dropped
    one's rollout, perception and score jobs (the CLIs the rules run) write their files empty, and
    the model's lists hold the kept sequence's alone."""
    from worldmemory.common import rollout_index
    from worldmemory.persistbench import gather, perceive, rollout, score

    videos, out = tmp_path / "videos", tmp_path / "sequences"
    _user_video(videos, "long", 24, 128)
    _user_video(videos, "short", 12, 128)
    common = ["--out", str(out), "--source", str(videos), "--invisible", "8", "16", "--camera", CAMERA_JSON]
    for sequence in ("long", "short"):
        pp.main([*common, "--sequence", sequence])
    model, scores = tmp_path / "rollouts" / "still", tmp_path / "scores" / "still"
    for sequence in ("long", "short"):
        rollout.main(["--sequence", str(out / sequence), "--model", "still", "--kind", "external", "--command",
                      "cp {input_video} {video}.mkv && mv {video}.mkv {video}", "--out", str(model / sequence)])
        perceive.main(["--sequence", str(out / sequence), "--rollouts", str(model / sequence), "--estimators",
                       json.dumps({"tracking": {"backend": "optical-flow"}}),
                       "--out", str(tmp_path / "perception" / "still" / sequence)])
        score.main(["--sequence", str(out / sequence), "--rollouts", str(model / sequence), "--perception",
                    json.dumps({"tracking": "optical-flow"}), "--estimates",
                    str(tmp_path / "perception" / "still" / sequence), "--out", str(scores / "sequences" / sequence)])
    assert json.loads((model / "short" / "rollouts.json").read_text())["rollouts"] == []
    assert [p.name for p in (model / "short").iterdir()] == ["rollouts.json"]  # the model never ran
    assert (scores / "sequences" / "short" / "persistence.csv").read_text().count("\n") == 1  # the header
    manifest = rollout_index.collect(model, ["long", "short"])
    assert [r["sequence"] for r in manifest["rollouts"]] == ["long"]
    assert gather.gather(scores, ["long", "short"]) == gather.gather(scores, ["long"]) > 0


def test_no_sequence_left_is_an_error_naming_the_key(tmp_path):
    # 5 frames: the invisible window [0.3, 0.48) of the clip rounds to no frame
    with pytest.raises(RuntimeError, match=r"every sequence missed.*static_000: .*round.*"
                                           r"Fix: change persistbench\.sequences\.schedule"):
        pp.prepare(tmp_path, 1, 5, 128, None, CAMERA,
                   schedule={"shape": "visible-invisible-visible", "bounds": [0.3, 0.48]})
    assert not (tmp_path / "manifest.json").exists()


def test_a_target_that_vanishes_at_the_working_resolution_is_dropped(tmp_path):
    video = tmp_path / "videos" / "tiny"
    labels = np.zeros((8, 64, 128), np.int32)
    labels[:, 20, 40] = 5  # one pixel, between the pixel centres the downscale keeps
    write_video(video / "panorama.mkv", np.full((8, 64, 128, 3), 90, np.uint8), 8.0)
    save_npz(video / "labels.npz", {"labels": labels})
    (video / "video.json").write_text(json.dumps({"kind": "static", "target": 5}))
    with pytest.raises(RuntimeError, match=r"tiny: target label 5 is not in the first frame at "
                                           r"the working resolution 64x32 \(source \[128, 64\]\)"
                                           r".*Fix: change persistbench\.sequences\.pano_width"):
        pp.prepare(tmp_path / "out", 1, 0, 64, (2, 4), CAMERA, source=str(tmp_path / "videos"))
