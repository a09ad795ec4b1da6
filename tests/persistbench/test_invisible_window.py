"""The tracker in PersistBench's invisible window on a model that copies its input video
(persistbench.input_copy, run on sequences the test prepares as the workflow does), and its
re-detection (perceive.track_sequence) on models built from the omniscient reference.

Known answer: the input view's instance map says where the target is; inside the invisible
window it is nowhere, so every valid tracker mask there (>= MIN_PIXELS) is a false positive. The
goal is a false-positive rate <= 2%; on these 48 absent frames that is none. The dynamic
sequences are the hard ones: the target moves out of view on its own while the wall it was in
front of stays in view, and a tracker that only follows its place keeps a mask there (the
tracker before this check: masks on 26 of 96 such frames of the main job's sequences).

Re-detection, known answers on the omniscient's frames (reference_models): black while the input
camera cannot see the target, the frames after the window are the omniscient's, with the moving
target at its true, moved place (the tracker before re-detection lost it for good: Perm 0 on 16
of 16 frames after the window in all three dynamic sequences of the main job); painted out (the
background drawn over it) on the first frames, nothing may be tracked there (a start on
background had masks on 8 of 8 painted-out frames in 5 of 6 sequences), and it is found when it
appears; and the omniscient keeps the masks of one track from frame 0 until that track loses it.
"""

import json

import numpy as np
import pytest
from PIL import Image
from worldmemory.common.equirect import perspective
from worldmemory.common.video import read_video, write_video
from worldmemory.perception.tracking import FlowTracker, locate
from worldmemory.persistbench import prepare as pp
from worldmemory.persistbench.camera_paths import PathParams, Schedule
from worldmemory.persistbench.input_copy import sequence_row
from worldmemory.persistbench.perceive import track_sequence
from worldmemory.persistbench.perception import MIN_PIXELS
from worldmemory.persistbench.reference_models import run_reference
from worldmemory.persistbench.sequences import read_generated
from worldmemory.report.agreement import mask_ious

N_FRAMES, START, END = 48, 16, 32  # the embedded default's schedule and view size
PAINTED = 8  # frames the painted-out model draws the background over the target
CAMERA = PathParams(fov_deg=90, width=96, height=96)


@pytest.fixture(scope="module")
def sequences(tmp_path_factory):
    """Two dynamic sequences and a static one, prepared: directory -> its sequence.json."""
    out = tmp_path_factory.mktemp("sequences")
    prepared = {}
    for seq_id, kind in (("dynamic_000", "dynamic"), ("dynamic_001", "dynamic"), ("static_000", "static")):
        pano = pp.embedded_panorama(seq_id, kind, N_FRAMES, 256)
        entry = pp.prepare_sequence(pano, Schedule(N_FRAMES, START, END), CAMERA, out)
        assert not entry.get("dropped"), entry
        seq = json.loads((out / seq_id / "sequence.json").read_text())
        with np.load(out / seq_id / "views.npz") as views:  # the schedule holds
            gone = (views["input_instance"] == seq["target_instance"]).sum((1, 2)) < MIN_PIXELS
        assert gone[START:END].all() and not gone[:START].any()
        prepared[out / seq_id] = seq
    return prepared


@pytest.fixture(scope="module")
def rows(sequences):
    return {seq["id"]: sequence_row(FlowTracker(min_pixels=MIN_PIXELS), d, seq) for d, seq in sequences.items()}


@pytest.fixture(scope="module")
def prepared(sequences):
    """sequence id -> (the target in the input view, the tracker's masks), as perceive tracks."""
    out = {}
    for seq_dir, seq in sequences.items():
        with np.load(seq_dir / "views.npz") as views:
            shown = views["input_instance"] == seq["target_instance"]
            reference_masks = views["reference_instance"] == seq["target_instance"]
        masks = track_sequence(FlowTracker(min_pixels=MIN_PIXELS), read_video(seq_dir / "input.mkv"),
                               read_video(seq_dir / "reference.mkv"), reference_masks)
        out[seq["id"]] = shown, masks
    return out


def test_no_mask_while_the_target_is_out_of_view(rows):
    masked = sum(r["masked_without_target"] for r in rows.values())
    absent = sum(r["frames_without_target"] for r in rows.values())
    assert absent >= 3 * (END - START)
    assert masked / absent <= 0.02, {k: r["masked_without_target"] for k, r in rows.items()}


def test_the_target_is_followed_while_it_is_shown(rows, prepared):
    """An empty tracker would pass the test above: the static target is followed, and each
    dynamic one until it leaves, and it is found again within two frames of its return
    (elsewhere: re-detected by its look in the reference; before re-detection, no mask on it
    after the window)."""
    assert rows["static_000"]["iou_median"] >= 0.8
    for seq_id in ("dynamic_000", "dynamic_001"):
        shown, masks = prepared[seq_id]
        ious = mask_ious(shown[:START], masks[:START], MIN_PIXELS)
        assert np.median(ious) >= 0.5, (seq_id, np.round(ious, 2))
        back = mask_ious(shown[END:END + 2], masks[END:END + 2], MIN_PIXELS)
        assert back.max() >= 0.8, (seq_id, np.round(back, 2))


def omniscient(seq_dir, seq):
    """The omniscient reference's frames of a prepared sequence and the target it drew."""
    with np.load(seq_dir / "panorama.npz") as pano, np.load(seq_dir / "views.npz") as views:
        instance, visible = pano["instance"], views["visible_in_input"]
    frames, truth = run_reference("omniscient", {}, read_video(seq_dir / "panorama.mkv"), instance, None,
                                  seq["cameras"], seq["target_instance"], visible)
    return frames, truth["instance"] == seq["target_instance"], visible


def painted_out(seq_dir, seq, frames, drawn, n):
    """``frames`` with the background drawn over the target on the first ``n`` frames."""
    frames, drawn, cameras = frames.copy(), drawn.copy(), seq["cameras"]
    background = np.asarray(Image.open(seq_dir / "background.png").convert("RGB"))
    for t in range(n):
        behind = perspective(background, cameras["reference_yaw"][t], cameras["reference_pitch"][t],
                             cameras["fov_deg"], cameras["width"], cameras["height"])
        frames[t][drawn[t]] = behind[drawn[t]]
        drawn[t] = False
    return frames, drawn


def tracked(seq_dir, seq, frames):
    with np.load(seq_dir / "views.npz") as views:
        reference_masks = views["reference_instance"] == seq["target_instance"]
    return track_sequence(FlowTracker(min_pixels=MIN_PIXELS), frames, read_video(seq_dir / "reference.mkv"),
                          reference_masks)


@pytest.fixture(scope="module")
def models(sequences):
    """sequence id -> model -> (frames, the target it drew, the tracker's masks)."""
    out = {}
    for seq_dir, seq in sequences.items():
        frames, drawn, visible = omniscient(seq_dir, seq)
        black = frames.copy()
        black[~visible] = 0
        out[seq["id"]] = {"omniscient": (frames, drawn), "black-window": (black, drawn & visible[:, None, None]),
                          "painted-out": painted_out(seq_dir, seq, frames, drawn, PAINTED)}
        for name, (video, target) in out[seq["id"]].items():
            out[seq["id"]][name] = video, target, tracked(seq_dir, seq, video)
    return out


def test_a_target_back_after_a_black_window_is_found_again(models):
    """Black while the input camera cannot see the target: no mask there, and after the window,
    where the frames are the omniscient's, the target (moved meanwhile) is tracked on every frame
    with a median IoU >= 0.5 with what the model drew."""
    for seq_id, by_model in models.items():
        frames, drawn, masks = by_model["black-window"]
        assert not masks[START:END].any(), seq_id
        after = masks[END:].sum((1, 2)) >= MIN_PIXELS
        assert after.all(), (seq_id, after)
        ious = mask_ious(drawn[END:], masks[END:], MIN_PIXELS)
        assert np.median(ious) >= 0.5, (seq_id, np.round(ious, 2))


def test_a_target_painted_out_at_the_start_is_found_when_it_appears(models):
    """Nothing is tracked while the background is drawn over the target (no start on
    background); it is found on the first frame it is drawn (IoU >= 0.8 with it)."""
    for seq_id, by_model in models.items():
        frames, drawn, masks = by_model["painted-out"]
        assert not masks[:PAINTED].any(), seq_id
        found = mask_ious(drawn[PAINTED:PAINTED + 1], masks[PAINTED:PAINTED + 1], MIN_PIXELS)
        assert found.size and found[0] >= 0.8, (seq_id, found)


def test_the_omniscient_keeps_the_masks_of_one_track_from_its_first_frame(sequences, models):
    """Re-detection starts only where the track has no mask: the omniscient has the masks of the
    tracker started once, on frame 0, by locate, up to the first frame that track loses the
    target (all of them where it never does: two of these three sequences)."""
    whole = 0
    for seq_dir, seq in sequences.items():
        frames, _, masks = models[seq["id"]]["omniscient"]
        with np.load(seq_dir / "views.npz") as views:
            reference_masks = views["reference_instance"] == seq["target_instance"]
        reference = read_video(seq_dir / "reference.mkv")
        first = locate(frames[0], reference[0], reference_masks[0], min_pixels=MIN_PIXELS)
        once = FlowTracker(min_pixels=MIN_PIXELS).track(frames, first)
        lost = (once.sum((1, 2)) < MIN_PIXELS) & (reference_masks.sum((1, 2)) >= MIN_PIXELS)
        until = int(np.argmax(lost)) if lost.any() else len(lost)
        assert until > START and np.array_equal(masks[:until], once[:until]), seq["id"]
        whole += until == len(lost)
    assert whole >= 2


def test_a_video_at_another_size_is_read_at_the_reference_size(sequences, models, tmp_path):
    """The omniscient at twice the reference's size (each pixel repeated) is read back as the
    omniscient (sequences.read_generated: area resampling), so it is perceived the same."""
    seq = next(iter(sequences.values()))
    frames = models[seq["id"]]["omniscient"][0]
    write_video(tmp_path / "big.mkv", frames.repeat(2, axis=1).repeat(2, axis=2), fps=8.0)
    read = read_generated(tmp_path / "big.mkv", seq)
    assert np.array_equal(read, frames)
