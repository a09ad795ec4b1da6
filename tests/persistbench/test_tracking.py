"""Seamless panorama tracking: one identity and one continuous track through the seam."""

import numpy as np
import pytest
from worldmemory.persistbench import tracking as tk
from worldmemory.worlds import raycaster as wd
from worldmemory.worlds import world360 as w3

W, H = 256, 128
GREY = wd.Texture("tiles", [[0.6, 0.6, 0.6], [0.3, 0.3, 0.3]], 0.5, 0.0)
RED = wd.Texture("stripes", [[0.8, 0.1, 0.1], [0.5, 0.1, 0.1]], 0.1, 0.3)


def orbit(n, lon0, speed, radius=2.5, r=0.3, distractor_lon=None):
    """Video of a ball (instance 1) circling the camera from lon0 at ``speed`` deg/frame; with
    an identical-looking still ball (instance 2) at ``distractor_lon``."""
    def at(lon, rad):
        lon = np.radians(lon)
        return [rad * np.sin(lon), 0.0, rad * np.cos(lon)]

    objects = [wd.Thing(1, "target", wd.Sphere(at(lon0, radius), r, RED))]
    if distractor_lon is not None:
        objects.append(wd.Thing(2, "distractor", wd.Sphere(at(distractor_lon, 3.0), r, RED)))
    world = wd.World("object", wd.Room([-6.0, -3.0, -7.0], [5.0, 1.6, 8.0], [GREY] * 6),
                     objects=objects)
    motion = w3.Motion(radius, lon0, speed) if speed else None
    scene = w3.Scene("orbit", "dynamic" if speed else "static", "sphere-object", 1, "target",
                     world, n, motion)
    video = w3.render_video(scene, n, W, H)
    return scene, video["rgb"], video["instance"]


@pytest.fixture(scope="module")
def crossing():
    """A ball crossing the seam on frame 12 (lon 150 -> 207.5 at 2.5 deg per frame), and a
    look-alike at lon -60 that a tracker must not confuse with it."""
    return orbit(24, 150.0, 2.5, distractor_lon=-60.0)


def test_trackers_implement_the_protocol():
    labels = np.zeros((2, 4, 8), dtype=int)
    assert isinstance(tk.LabelTracker(labels), tk.MaskTracker)
    assert isinstance(tk.SeamlessTracker(tk.LabelTracker(labels)), tk.MaskTracker)


def test_seamless_tracking_keeps_one_id_and_a_continuous_track_through_the_seam(crossing):
    scene, rgb, instance = crossing
    truth = instance == 1
    assert truth[12][:, 0].any() and truth[12][:, -1].any()  # straddles the seam
    track = tk.SeamlessTracker(tk.LabelTracker(instance)).run(rgb, truth[0])
    assert np.array_equal(track.masks, truth)  # every frame: the ground-truth mask
    assert track.track_id.tolist() == [0] * 24  # one identity
    steps = np.diff(track.longitude)
    assert np.all(np.abs(steps - 2.5) < 1.0)  # < a few degrees per frame, through the crossing
    np.testing.assert_allclose(track.longitude, scene.target_longitude(np.arange(24)), atol=1.0)
    assert track.longitude[-1] > 180  # unwrapped: past the seam without a jump
    assert track.recentred == []  # the copy crossed the canvas centre, not its edge


def test_the_base_tracker_alone_on_the_raw_panorama_loses_or_jumps_at_the_seam(crossing):
    _, rgb, instance = crossing
    truth = instance == 1
    masks = tk.LabelTracker(instance).track(rgb, truth[0])
    assert np.array_equal(masks[:10], truth[:10])  # fine away from the seam ...
    assert not np.array_equal(masks[12], truth[12])  # ... keeps only one piece on the seam ...
    lon = tk.mask_longitudes(masks, circular=False)  # where the tracker thinks it is
    lost = np.isnan(lon).any()
    jumped = np.nanmax(np.abs(np.diff(lon))) > 90
    assert lost or jumped  # ... and then jumps to the far border (here) or loses it
    assert len(set(tk.track_identities(lon).tolist()) - {-1}) > 1
    # with a bound on the jump it loses the target for good instead
    bounded = tk.LabelTracker(instance, max_jump=20.0).track(rgb, truth[0])
    assert not bounded[-1].any()
    assert (tk.track_identities(tk.mask_longitudes(bounded, circular=False)) == -1).any()
    # and the look-alike is never taken for the target by either tracker
    assert not (masks & (instance == 2)).any() and not (bounded & (instance == 2)).any()


def test_a_static_target_far_from_the_seam_gives_identical_masks_with_and_without_tiling():
    _, rgb, instance = orbit(5, 10.0, 0.0, distractor_lon=-100.0)
    truth = instance == 1
    plain = tk.LabelTracker(instance).track(rgb, truth[0])
    track = tk.SeamlessTracker(tk.LabelTracker(instance)).run(rgb, truth[0])
    assert np.array_equal(track.masks, plain) and np.array_equal(plain, truth)
    assert track.track_id.tolist() == [0] * 5 and np.ptp(track.longitude) == 0


def test_a_long_sweep_recentres_on_the_other_copy_and_stays_one_track():
    # from lon -90 (canvas column 1.25 W) rightwards over 287.5 deg, to canvas column 2.05 W:
    # off the canvas unless the track moves to the other copy on the way
    scene, rgb, instance = orbit(24, -90.0, 12.5)
    truth = instance == 1
    track = tk.SeamlessTracker(tk.LabelTracker(instance)).run(rgb, truth[0])
    assert len(track.recentred) == 1
    assert np.array_equal(track.masks, truth)
    assert track.track_id.tolist() == [0] * 24
    np.testing.assert_allclose(track.longitude, scene.target_longitude(np.arange(24)), atol=1.0)
    never = tk.SeamlessTracker(tk.LabelTracker(instance), margin=10.0).run(rgb, truth[0])
    assert never.recentred == [] and not never.masks[-1].any()  # runs off the canvas edge


def test_a_target_already_on_the_seam_in_the_first_frame_is_one_copy_on_the_canvas(crossing):
    _, rgb, instance = crossing
    truth = instance == 1
    track = tk.SeamlessTracker(tk.LabelTracker(instance[12:])).run(rgb[12:], truth[12])
    assert np.array_equal(track.masks, truth[12:])
    assert track.track_id.tolist() == [0] * 12
    assert abs(track.longitude[0]) == pytest.approx(180.0, abs=1.0)  # in [-180, 180) at first
    assert np.all(np.abs(np.diff(track.longitude) - 2.5) < 1.0)


class BothCopies:
    """A base tracker that returns every segment of the tracked label: on the canvas, both
    copies of the target (as a tracker may that matches appearance)."""

    def __init__(self, labels):
        self.inner = tk.LabelTracker(labels)

    def track(self, frames, first_mask, start=0):
        masks = self.inner.track(frames, first_mask, start)
        labels = self.inner._segment(np.asarray(frames).shape)
        for t in range(start, len(masks)):
            if masks[t].any():
                masks[t] = labels[t] == np.bincount(labels[t][masks[t]]).argmax()
        return masks


def test_seamless_tracking_deduplicates_the_two_copies(crossing):
    scene, rgb, instance = crossing
    truth = instance == 1
    track = tk.SeamlessTracker(BothCopies(instance)).run(rgb, truth[0])
    assert np.array_equal(track.masks, truth)
    np.testing.assert_allclose(track.longitude, scene.target_longitude(np.arange(24)), atol=1.0)
    assert track.track_id.tolist() == [0] * 24


def test_start_and_input_checks(crossing):
    _, rgb, instance = crossing
    truth = instance == 1
    masks = tk.LabelTracker(instance).track(rgb, truth[5], start=5)
    assert not masks[:5].any() and np.array_equal(masks[5:10], truth[5:10])
    track = tk.SeamlessTracker(tk.LabelTracker(instance)).run(rgb, truth[5], start=5)
    assert not track.masks[:5].any() and np.array_equal(track.masks[5:], truth[5:])
    assert track.track_id.tolist() == [-1] * 5 + [0] * 19
    with pytest.raises(ValueError, match="empty"):
        tk.SeamlessTracker(tk.LabelTracker(instance)).run(rgb, np.zeros((H, W), bool))
    with pytest.raises(ValueError, match="not"):
        tk.LabelTracker(instance[:, :, :100]).track(rgb, truth[0][:, :100])


def test_track_identities_and_circular_centroids():
    assert tk.track_identities([0.0, 5.0, np.nan, 7.0, 100.0, 104.0], 30).tolist() == \
        [0, 0, -1, 1, 2, 2]
    mask = np.zeros((4, 8), bool)
    mask[:, [0, 7]] = True  # straddles the seam: circular centroid on it
    assert tk.circular_centroid_column(mask) in (pytest.approx(0.0, abs=1e-9),
                                                 pytest.approx(8.0, abs=1e-9))
    assert tk.mask_longitudes(mask[None], circular=False)[0] == pytest.approx(0.0)  # image mean
