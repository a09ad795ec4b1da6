"""The classical target tracker and locator (perception.tracking): known answers on synthetic videos.

Every scene is built here: a smooth random background (blurred noise) and a disc-shaped target
with a checkered texture of its own, seen by a camera that pans (crops of a wide image: the shift
is exact) or rotates (a wide image on a plane warped by K R^T Kp^-1: frames and poses agree
exactly). The true mask of every frame is built with the scene, so each answer is an IoU. Where a
test says so, the video is degraded by a recipe of common.degrade, as generated video is.
"""

import cv2
import numpy as np
import pytest
from worldmemory.common.degrade import blur_noise, h264_roundtrip, resize_down_up
from worldmemory.perception.tracking import FlowTracker, find_target, locate

H, W = 96, 128
FX = 100.0
K = np.array([[FX, 0.0, (W - 1) / 2], [0.0, FX, (H - 1) / 2], [0.0, 0.0, 1.0]])
MIN_PIXELS = 20  # FlowTracker's default: fewer pixels in view is out of view
RADIUS = 12


# ------------------------------------------------------------------------------------ scenes
def background(h, w, seed):
    """Smooth colour noise (Gaussian blur, sigma 2 px), mean 128, std 40."""
    noise = np.random.default_rng(seed).normal(0.0, 1.0, (h, w, 3)).astype(np.float32)
    smooth = cv2.GaussianBlur(noise, (0, 0), 2.0)
    return np.clip(128 + 40 * (smooth - smooth.mean()) / smooth.std(), 0, 255).astype(np.uint8)


def with_target(image, mask, colour, seed):
    """``image`` with a 4 px checkerboard in ``colour`` (and some grain) under ``mask``."""
    h, w = mask.shape
    checks = ((np.arange(h)[:, None] // 4 + np.arange(w)[None] // 4) % 2).astype(np.float32)
    grain = np.random.default_rng(seed).uniform(-30, 30, (h, w)).astype(np.float32)
    shade = 0.55 + 0.45 * checks + grain / 255
    texture = np.clip(np.asarray(colour, np.float32) * shade[..., None], 0, 255).astype(np.uint8)
    return np.where(mask[..., None], texture, image)


def disc(h, w, cy, cx, r=RADIUS):
    yy, xx = np.mgrid[0:h, 0:w]
    return (yy - cy) ** 2 + (xx - cx) ** 2 <= r**2


def iou(a, b):
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 1.0


def fully_in_view(mask):
    """The target is in the frame and touches none of its borders."""
    return bool(mask.any() and not (mask[0].any() or mask[-1].any() or mask[:, 0].any() or mask[:, -1].any()))


def noisy(frames, seed, amplitude=3):
    """Frames with independent per-pixel noise of +-amplitude (no two frames are identical)."""
    rng = np.random.default_rng(seed)
    return np.clip(frames.astype(int) + rng.integers(-amplitude, amplitude + 1, frames.shape), 0, 255).astype(np.uint8)


def pan(offsets, seed=1, centre=(48, 40), margin=(40, 100)):
    """A camera panning over a wide image: frame t is the (H, W) crop at offsets[t] = (dy, dx),
    so the scene moves by -(dy, dx). Returns frames (T, H, W, 3) and true masks (T, H, W)."""
    ph, pw = H + margin[0], W + margin[1]
    mask = disc(ph, pw, *centre)
    wide = with_target(background(ph, pw, seed), mask, (220, 60, 40), seed + 1)
    frames = np.stack([wide[dy:dy + H, dx:dx + W] for dy, dx in offsets])
    return frames, np.stack([mask[dy:dy + H, dx:dx + W] for dy, dx in offsets])


# a plane at unit depth, imaged by a reference camera Kp at yaw 0; frames are rotated views of it
PH, PW = 320, 520
KP = np.array([[FX, 0.0, PW / 2], [0.0, FX, PH / 2], [0.0, 0.0, 1.0]])


def yawed(degrees):
    """Camera-to-world pose (OpenCV axes) of a camera turned by ``degrees`` about the vertical
    axis; positive turns right, so the scene moves left in the image."""
    a = np.radians(degrees)
    pose = np.eye(4)
    pose[:3, :3] = [[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]]
    return pose


def rendered(plane, pose):
    """The plane seen by a camera K at ``pose``: pixel q = K R^T Kp^-1 p (a pure rotation)."""
    homography = K @ pose[:3, :3].T @ np.linalg.inv(KP)
    if plane.dtype == bool:
        return cv2.warpPerspective(plane.astype(np.float32), homography, (W, H), flags=cv2.INTER_LINEAR) > 0.5
    return cv2.warpPerspective(plane, homography, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def turn_away_and_back(step=2.5, hold=8, seed=1, changed=True):
    """The camera turns left by ``step`` degrees a frame until the target (at pixel (100, 48) at
    yaw 0) has left the view on the right, holds, and turns back to yaw 0. Halfway through the
    hold the whole world is re-sampled (another background, the target re-textured in blue, same
    place and shape; unless not ``changed``): nothing in the images links the return to the
    departure. Returns frames, true masks, poses (T, 4, 4) and the index of the change."""
    angles = [-step * i for i in range(13)] + [-step * 12] * hold + [-step * i for i in range(12, -1, -1)] + [0.0] * 3
    poses = np.stack([yawed(a) for a in angles])
    mask = disc(PH, PW, 48 - K[1, 2] + KP[1, 2], 100 - K[0, 2] + KP[0, 2])
    before = with_target(background(PH, PW, seed), mask, (220, 60, 40), seed + 1)
    after = with_target(background(PH, PW, seed + 6), mask, (40, 90, 230), seed + 4) if changed else before
    change = 13 + hold // 2
    frames = np.stack([rendered(before if t < change else after, pose) for t, pose in enumerate(poses)])
    return frames, np.stack([rendered(mask, pose) for pose in poses]), poses, change


# ------------------------------------------------------------------------------------ track
def test_still_video_keeps_the_first_mask():
    """A camera that does not move (only sensor noise): every mask is the first one."""
    frames, truth = pan([(0, 0)] * 10)
    masks = FlowTracker().track(noisy(frames, seed=3), truth[0])
    assert masks.shape == truth.shape and masks.dtype == bool
    ious = [iou(m, truth[0]) for m in masks]
    assert min(ious) >= 0.95, ious


def test_frames_before_start_are_empty():
    """``start``: the mask is given in frames[start]; earlier frames are empty, later ones tracked."""
    offsets = [(0, 3 * t) for t in range(8)]
    frames, truth = pan(offsets)
    masks = FlowTracker().track(noisy(frames, seed=4), truth[3], start=3)
    assert not masks[:3].any()
    ious = [iou(m, t) for m, t in zip(masks[3:], truth[3:])]
    assert min(ious) >= 0.8, ious


def test_pan_follows_the_shifted_mask():
    """The whole image shifts by (-3, -1) px a frame (a diagonal pan): the mask follows the
    shifted true mask in every frame where the target is fully in view, and the target leaving
    over the left border is cut, then empty."""
    offsets = [(t, 3 * t) for t in range(22)]
    frames, truth = pan(offsets)
    masks = FlowTracker().track(noisy(frames, seed=5), truth[0])
    visible = [t for t in range(len(truth)) if fully_in_view(truth[t])]
    assert len(visible) >= 10  # the known answer covers most of the video
    ious = {t: round(iou(masks[t], truth[t]), 3) for t in visible}
    assert min(ious.values()) >= 0.8, ious
    gone = [t for t in range(len(truth)) if not truth[t].any()]
    assert gone and not masks[gone].any()


def travelling(n, seed=3, step=(0, 3), pan_step=(0, 2)):
    """A target travelling ``step`` px a frame over a background the camera pans over by
    ``pan_step`` (PersistBench's dynamic targets: the camera follows a moving object, so target
    and background move apart). Returns frames and true masks."""
    wide = background(H + 40, W + 2 * pan_step[1] * n, seed)
    # a green target with a texture of its own (blurred noise: not periodic, so no shift aliases)
    look = np.clip(background(H, W, seed + 1).astype(int) // 2 + [0, 100, 30], 0, 255).astype(np.uint8)
    frames, truth = [], []
    for t in range(n):
        y, x = pan_step[0] * t, pan_step[1] * t
        view = wide[y:y + H, x:x + W]
        mask = disc(H, W, 48 + step[0] * t - y + pan_step[0] * t, 30 + step[1] * t, r=9)
        spot = np.roll(look, (step[0] * t, step[1] * t), axis=(0, 1))  # its own texture moves with it
        frames.append(np.where(mask[..., None], spot, view))
        truth.append(mask)
    return np.stack(frames), np.stack(truth)


def test_a_target_travelling_over_its_background_is_followed():
    """The target moves 3 px a frame to the right while the background moves 2 px a frame to the
    left: its neighbourhood mixes both motions, its own pixels and flow follow it."""
    frames, truth = travelling(20)
    masks = FlowTracker().track(noisy(frames, seed=6), truth[0])
    ious = [round(iou(m, t), 3) for m, t in zip(masks, truth)]
    assert min(ious) >= 0.7, ious


def test_target_that_leaves_and_returns_unchanged_is_refound():
    """The camera pans 6 px a frame until the target has left the view, holds, and pans back:
    empty masks while it is out of view (19 frames, longer than ``max_chain``, so the chained
    flow no longer predicts it: the static scene's registration does), the target re-found
    after the return."""
    out = [(0, x) for x in range(0, 97, 6)]
    offsets = out + [(0, 96)] * 4 + out[::-1][1:] + [(0, 0)] * 3
    frames, truth = pan(offsets, centre=(48, 40))
    masks = FlowTracker().track(noisy(frames, seed=6), truth[0])
    gone = [t for t in range(len(truth)) if not truth[t].any()]
    assert len(gone) > FlowTracker().max_chain
    assert not masks[gone].any(), {t: int(masks[t].sum()) for t in gone}
    returned = [t for t in range(gone[-1] + 1, len(truth)) if fully_in_view(truth[t])]
    assert len(returned) >= 8
    ious = {t: round(iou(masks[t], truth[t]), 3) for t in returned}
    assert min(ious.values()) >= 0.8, ious
    before = [t for t in range(gone[0]) if fully_in_view(truth[t])]
    assert min(iou(masks[t], truth[t]) for t in before) >= 0.8


def test_changed_target_is_refound_at_its_place_on_the_camera_path():
    """A target that comes back changed (another texture and colour, in a re-sampled world) is
    re-found at its place by the ``camera`` path, and is empty while out of view. The path is
    exact and the shape unchanged, so the predicted silhouette is the true one up to
    interpolation; GrabCut may only trim it (it is kept within IoU >= accept_changed of the
    seed), measured >= 0.96 here, hence the bound 0.8. Without the path nothing in the images
    links the return to the departure and the target stays lost (as documented)."""
    frames, truth, poses, change = turn_away_and_back()
    gone = [t for t in range(len(truth)) if not truth[t].any()]
    assert gone[0] < change < gone[-1]  # the world changes while the target is out of view
    returned = [t for t in range(gone[-1] + 1, len(truth)) if fully_in_view(truth[t])]
    assert len(returned) >= 5

    masks = FlowTracker().track(frames, truth[0], camera=(poses, K))
    assert not masks[gone].any(), {t: int(masks[t].sum()) for t in gone}
    before = {t: round(iou(masks[t], truth[t]), 3) for t in range(gone[0]) if fully_in_view(truth[t])}
    assert min(before.values()) >= 0.8, before
    after = {t: round(iou(masks[t], truth[t]), 3) for t in returned}
    assert min(after.values()) >= 0.8, after

    blind = FlowTracker().track(frames, truth[0])
    assert not blind[gone[-1] + 1:].any()


def test_unchanged_target_is_refound_after_a_turn_with_camera_path():
    """The same turn in a world that does not change: with the camera path the target is
    followed through the rotation, empty while out of view and re-found after the return."""
    frames, truth, poses, _ = turn_away_and_back(changed=False)
    masks = FlowTracker().track(frames, truth[0], camera=(poses, K))
    gone = [t for t in range(len(truth)) if not truth[t].any()]
    assert not masks[gone].any(), {t: int(masks[t].sum()) for t in gone}
    seen = {t: round(iou(masks[t], truth[t]), 3) for t in range(len(truth)) if fully_in_view(truth[t])}
    assert min(seen.values()) >= 0.8, seen


# ------------------------------------------------------------------------------------ degraded
DEGRADED = {"blur-noise": lambda frames: blur_noise(frames, seed=0), "h264": h264_roundtrip,
            "resize": resize_down_up}


@pytest.mark.parametrize("recipe", sorted(DEGRADED))
def test_a_turn_away_and_back_is_tracked_through_each_degradation(recipe):
    """The unchanged turn, degraded as generated video is (blur sigma 1.5 + noise std 8, H.264
    crf 40 4:2:0, down 2x and up): IoU >= 0.8 in every frame the target is fully in view
    (measured 0.86-0.95 at the worst frame), empty while it is out of view."""
    frames, truth, poses, _ = turn_away_and_back(changed=False)
    masks = FlowTracker().track(DEGRADED[recipe](frames), truth[0], camera=(poses, K))
    gone = [t for t in range(len(truth)) if not truth[t].any()]
    assert not masks[gone].any(), {t: int(masks[t].sum()) for t in gone}
    seen = {t: round(iou(masks[t], truth[t]), 3) for t in range(len(truth)) if fully_in_view(truth[t])}
    assert min(seen.values()) >= 0.8, seen


@pytest.mark.parametrize("recipe", sorted(DEGRADED))
def test_a_pan_away_and_back_is_tracked_through_each_degradation(recipe):
    """The pan away and back without a camera path (PersistBench's case), degraded: the
    target followed out, nothing while it is out of view, re-found when the view returns
    (registration, or its place in the anchor frame where noise defeats SIFT); IoU >= 0.8."""
    out = [(0, x) for x in range(0, 97, 6)]
    frames, truth = pan(out + [(0, 96)] * 4 + out[::-1][1:] + [(0, 0)] * 3)
    masks = FlowTracker().track(DEGRADED[recipe](frames), truth[0])
    gone = [t for t in range(len(truth)) if not truth[t].any()]
    assert not masks[gone].any(), {t: int(masks[t].sum()) for t in gone}
    seen = {t: round(iou(masks[t], truth[t]), 3) for t in range(len(truth)) if fully_in_view(truth[t])}
    assert min(seen.values()) >= 0.8, seen


@pytest.mark.parametrize("recipe", ["blur-noise", "resize"])
def test_a_travelling_target_is_held_through_degradation(recipe):
    """A target travelling over its background, degraded: its last confirmed look (not frame
    t-1's pixels) is matched in smoothed frames, so noise does not pull it onto the
    background (IoU >= 0.8 in every frame; measured 0.86; 0.22 before). Under H.264 crf 40 this
    9 px textured disc loses its texture and is not held (documented in the module)."""
    frames, truth = travelling(20)
    masks = FlowTracker().track(DEGRADED[recipe](frames), truth[0])
    ious = [round(iou(m, t), 3) for m, t in zip(masks, truth)]
    assert min(ious) >= 0.8, ious


def test_a_target_that_moves_out_of_view_over_a_wall_that_stays_leaves_no_mask():
    """PersistBench's invisible window without a camera path: the target travels out of the
    view on its own while the background stays in view (the camera holds still). Once nothing
    confirms it (no verification, no match of its last look), it has gone: no mask from the
    frame it left, although its neighbourhood is still in view."""
    frames, truth = travelling(40, step=(0, 3), pan_step=(0, 0))
    assert truth[-1].sum() == 0 and truth[0].sum() > 0
    masks = FlowTracker().track(noisy(frames, seed=7), truth[0])
    gone = [t for t in range(len(truth)) if truth[t].sum() < MIN_PIXELS]
    assert not masks[gone].any(), {t: int(masks[t].sum()) for t in gone}
    seen = [t for t in range(len(truth)) if fully_in_view(truth[t])]
    assert min(iou(masks[t], truth[t]) for t in seen) >= 0.8


def held_still(n, change_at, change):
    """A still camera on the target of ``pan`` for ``n`` frames; from frame ``change_at`` on, the
    target's pixels are ``change(frame, mask)`` (noisy frames, so no two are identical)."""
    frames, truth = pan([(0, 0)] * n)
    frames = frames.copy()
    for t in range(change_at, n):
        frames[t] = change(frames[t], truth[t])
    return noisy(frames, seed=9), truth


def test_a_target_recoloured_in_place_is_kept_without_a_camera_path():
    """PersistBench's recoloured reference model: the target's colours cycle (R, G, B) -> (G, B,
    R) while it stays in view. Its look no longer matches, its edges do: it has not gone, and
    is followed in every frame (IoU >= 0.8; without the edge check it is dropped 3 frames on)."""
    recolour = lambda frame, mask: np.where(mask[..., None], frame[..., [1, 2, 0]], frame)  # noqa: E731
    frames, truth = held_still(16, 6, recolour)
    masks = FlowTracker().track(frames, truth[0])
    ious = [round(iou(m, t), 3) for m, t in zip(masks, truth)]
    assert min(ious) >= 0.8, ious


def test_a_target_removed_in_place_leaves_no_mask_without_a_camera_path():
    """PersistBench's forgetting and warp-only models: the target is painted over (by the
    background, or black) while its place stays in view: no mask from ``vanish_after`` frames
    on (the frames in between are emptied too), though its neighbourhood is still there."""
    for paint in (lambda frame, mask: np.where(mask[..., None], background(*mask.shape, 1), frame),
                  lambda frame, mask: np.where(mask[..., None], 0, frame).astype(np.uint8)):
        frames, truth = held_still(16, 6, paint)
        masks = FlowTracker().track(frames, truth[0])
        assert masks[:6].any(axis=(1, 2)).all() and iou(masks[5], truth[5]) >= 0.8
        assert not masks[6:].any(), [int(m.sum()) for m in masks]


def test_a_camera_path_reads_the_frames_as_given():
    """With a camera path the tracker neither smooths the frames nor drops a target unconfirmed
    in view (module docstring): its masks do not depend on ``smooth`` or ``vanish_after``."""
    frames, truth, poses, _ = turn_away_and_back(changed=True)
    frames = blur_noise(frames, seed=3)
    plain = FlowTracker(smooth=0.0, vanish_after=0).track(frames, truth[0], camera=(poses, K))
    default = FlowTracker().track(frames, truth[0], camera=(poses, K))
    assert np.array_equal(plain, default)
    frames, truth = travelling(20)  # without one, smoothing matters (the guard of this test)
    frames = blur_noise(frames, seed=3)
    assert not np.array_equal(FlowTracker(smooth=0.0).track(frames, truth[0]), FlowTracker().track(frames, truth[0]))


def test_a_view_back_where_it_started_is_refound_without_registration():
    """The pan away and back with SIFT registration out of the game (``min_inliers`` no image
    meets, as noise or compression do to small renders) and the chain expired (19 frames out of
    view > ``max_chain``): the target is still re-found when the view is back at the anchor's."""
    out = [(0, x) for x in range(0, 97, 6)]
    frames, truth = pan(out + [(0, 96)] * 4 + out[::-1][1:] + [(0, 0)] * 3)
    masks = FlowTracker(min_inliers=10**6).track(noisy(frames, seed=8), truth[0])
    assert masks[-1].any() and iou(masks[-1], truth[-1]) >= 0.8


# ------------------------------------------------------------------------------------ locate
REFERENCE_FRAMES, REFERENCE_TRUTH = pan([(0, 0), (9, 23)], centre=(40, 60), margin=(40, 60))


def test_locate_finds_the_target_in_a_shifted_scene():
    """The reference target found in a frame where the whole scene moved by (-23, -9) px."""
    found = locate(REFERENCE_FRAMES[1], REFERENCE_FRAMES[0], REFERENCE_TRUTH[0])
    assert iou(found, REFERENCE_TRUTH[1]) >= 0.8


def test_locate_without_the_target_is_empty():
    """A frame of another random world, without the target: nothing is found."""
    found = locate(background(H, W, seed=9), REFERENCE_FRAMES[0], REFERENCE_TRUTH[0])
    assert found.shape == (H, W) and not found.any()


# ------------------------------------------------------------------------------------ find_target
def conditioned(seed=4, centre=(40, 30)):
    """A conditioning frame (a textured wall with a target disc left of the centre) and its mask."""
    mask = disc(H, W, *centre)
    return with_target(background(H, W, seed), mask, (200, 60, 40), seed + 1), mask


def test_find_target_keeps_the_given_mask_where_the_model_drew_the_conditioning_frame():
    """Frames that show the conditioning frame (rounded as a replay's): the given mask, as it is."""
    frame, mask = conditioned()
    frames = noisy(np.stack([frame] * 4), seed=2, amplitude=1)
    start, found = find_target(frames, [0], frame, mask)
    assert start == 0 and np.array_equal(found, mask)


def test_find_target_follows_a_mirrored_world():
    """A model that draws the world mirrored left-right: the target is found mirrored, not at the
    conditioning mask's place (which shows wall there)."""
    frame, mask = conditioned()
    frames = np.stack([frame[:, ::-1]] * 4)
    start, found = find_target(frames, [0], frame, mask)
    assert start == 0 and iou(found, mask[:, ::-1]) >= 0.9 and iou(found, mask) == 0


def test_find_target_never_takes_a_painted_out_target_for_it():
    """The target painted out (its pixels the wall's, or black) in every frame: nothing is found,
    though its neighbourhood still matches at its place."""
    frame, mask = conditioned()
    wall = background(H, W, 4)
    for painted in (wall, np.where(mask[..., None], 0, frame).astype(np.uint8)):
        start, found = find_target(np.stack([painted] * 4), [0, 2], frame, mask)
        assert start == 0 and not found.any()


def test_find_target_looks_through_the_initial_frames():
    """The target missing from the first frames of V (black) is found in the first candidate
    that shows it."""
    frame, mask = conditioned()
    frames = np.stack([np.zeros_like(frame)] * 2 + [frame[:, ::-1]] * 2)
    start, found = find_target(frames, [0, 1, 2, 3], frame, mask)
    assert start == 2 and iou(found, mask[:, ::-1]) >= 0.9


def test_locate_with_an_empty_reference_is_empty():
    """An empty reference mask has nothing to find: an empty mask of the frame's size."""
    found = locate(REFERENCE_FRAMES[1][:80], REFERENCE_FRAMES[0], np.zeros((H, W), bool))
    assert found.shape == (80, W) and found.dtype == bool and not found.any()


# ------------------------------------------------------------------------------------ inputs
FRAMES, TRUTH = pan([(0, 0)] * 4)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"frames": FRAMES.astype(np.float32)}, r"expected \(N, H, W, 3\) uint8 RGB frames, got \(4, 96, 128, 3\) float32"),
    ({"frames": FRAMES[..., 0]}, r"expected \(N, H, W, 3\) uint8 RGB frames, got \(4, 96, 128\) uint8"),
    ({"first_mask": TRUTH[0][:, :-1]}, r"first_mask \(96, 127\) does not match frames"),
    ({"start": 4}, r"start 4 outside 0\.\.3"),
    ({"start": -1}, r"start -1 outside 0\.\.3"),
    ({"camera": (np.stack([np.eye(4)] * 3), K)}, r"camera path has 3 poses for 4 frames"),
])
def test_track_rejects_bad_input(kwargs, message):
    """Wrong dtype or shape, a mask of another size, ``start`` out of range, a camera path of
    another length: ValueError naming the problem."""
    arguments = {"frames": FRAMES, "first_mask": TRUTH[0], **kwargs}
    with pytest.raises(ValueError, match=message):
        FlowTracker().track(**arguments)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"min_pixels": 0}, r"min_pixels must be >= 1, got 0"),
    ({"flow_preset": "slow"}, r"flow_preset 'slow'; valid: ultrafast, fast, medium"),
])
def test_tracker_rejects_bad_settings(kwargs, message):
    """Settings out of range: ValueError naming the setting."""
    with pytest.raises(ValueError, match=message):
        FlowTracker(**kwargs)


@pytest.mark.parametrize(("args", "message"), [
    ((FRAMES[0].astype(np.float32), FRAMES[0], TRUTH[0]), r"frame must be uint8 \(H, W, 3\)"),
    ((FRAMES[0], FRAMES[0, ..., 0], TRUTH[0]), r"reference_frame must be uint8 \(H, W, 3\)"),
    ((FRAMES[0], FRAMES[0], TRUTH[0][:-1]), r"reference_mask \(95, 128\) does not match reference_frame"),
])
def test_locate_rejects_bad_input(args, message):
    """locate: images that are not uint8 RGB, a reference mask of another size: ValueError."""
    with pytest.raises(ValueError, match=message):
        locate(*args)


def test_empty_first_mask_gives_empty_masks():
    """No target given: every frame's mask is empty (T, H, W) bool, with or without a camera."""
    empty = np.zeros((H, W), bool)
    for camera in (None, (np.stack([np.eye(4)] * 4), K)):
        masks = FlowTracker().track(FRAMES, empty, camera=camera)
        assert masks.shape == (4, H, W) and masks.dtype == bool and not masks.any()


def test_a_person_is_found_again_when_the_translation_loop_ends_where_it_started():
    """Module doc 6. On WorldMemBench's translation loop (sized so the person leaves the view) the
    flow tracker cannot bridge the parallax and follows something else through the departure; when
    the camera path is back at the start pose it looks for the person from the given mask again."""
    from worldmemory.common.geometry import intrinsics
    from worldmemory.worldmembench import trajectories as tj
    from worldmemory.worldmembench.cases import translation_side
    from worldmemory.worldmembench.reference_models import run_reference
    from worldmemory.worlds.raycaster import generate_world

    world = generate_world("human_000", "human")
    side = translation_side(world, intrinsics(128, 96, 60.0), 128, 96)
    traj = tj.build("translation", {"translation": {"side": side}}, n_frames=241, hold_frames=32,
                    final_hold_frames=9, width=128, height=96)
    frames, truth = run_reference("omniscient", {}, {"id": "human_000", "world": world.to_dict()}, traj, 128, 96)
    target = truth["instance"] == world.people[0].instance
    masks = FlowTracker().track(frames, target[0], camera=(traj.poses, traj.intrinsics))
    back = traj.revisits()[0][1].end - 1  # the last frame of R1, at the start pose
    assert (masks[back] & target[back]).sum() / (masks[back] | target[back]).sum() > 0.9
    assert (masks[-1] & target[-1]).sum() / (masks[-1] | target[-1]).sum() > 0.9
