"""The tracker in PersistBench's invisible window on a model that copies its input video
(persistbench.input_copy, run on sequences the test prepares as the workflow does).

Known answer: the input view's instance map says where the target is; inside the invisible
window it is nowhere, so every valid tracker mask there (>= MIN_PIXELS) is a false positive. The
goal is a false-positive rate <= 2%; on these 48 absent frames that is none. The dynamic
sequences are the hard ones: the target moves out of view on its own while the wall it was in
front of stays in view, and a tracker that only follows its place keeps a mask there (the
tracker before this check: masks on 26 of 96 such frames of the main job's sequences).
"""

import json

import numpy as np
import pytest
from worldmemory.common.video import read_video
from worldmemory.perception.tracking import FlowTracker
from worldmemory.persistbench import prepare as pp
from worldmemory.persistbench.camera_paths import PathParams, Schedule
from worldmemory.persistbench.input_copy import sequence_row
from worldmemory.persistbench.perceive import track_sequence
from worldmemory.persistbench.perception import MIN_PIXELS
from worldmemory.report.agreement import mask_ious

N_FRAMES, START, END = 48, 16, 32  # the embedded default's schedule and view size
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
    dynamic one until it leaves (it comes back elsewhere, where this tracker does not re-detect
    it: docs/perception.md's limits)."""
    assert rows["static_000"]["iou_median"] >= 0.8
    for seq_id in ("dynamic_000", "dynamic_001"):
        shown, masks = prepared[seq_id]
        ious = mask_ious(shown[:START], masks[:START], MIN_PIXELS)
        assert np.median(ious) >= 0.5, (seq_id, np.round(ious, 2))
