"""Known answers for PersistBench's synthetic 360-degree scenes (world360)."""

import json
import time

import numpy as np
import pytest
from worldmemory.common.equirect import direction_to_pixel, equirect_directions
from worldmemory.persistbench.tracking import mask_longitudes
from worldmemory.worlds import raycaster as wd
from worldmemory.worlds import world360 as w3

W, H = 256, 128
GREY = wd.Texture("tiles", [[0.6, 0.6, 0.6], [0.3, 0.3, 0.3]], 0.5, 0.0)
ROOM_LO, ROOM_HI = [-6.0, -3.0, -7.0], [5.0, 1.6, 8.0]


def direction(lon_deg, lat_deg):
    lon, lat = np.radians(lon_deg), np.radians(lat_deg)
    return np.array([np.cos(lat) * np.sin(lon), -np.sin(lat), np.cos(lat) * np.cos(lon)])


def ball_scene(centre, r, motion=None, kind="static"):
    """A grey box room with one sphere target (instance 1) of centre ``centre`` (frame 0)."""
    world = wd.World("object", wd.Room(ROOM_LO, ROOM_HI, [GREY] * 6),
                     objects=[wd.Thing(1, "target", wd.Sphere(list(map(float, centre)), r, GREY))])
    return w3.Scene("ball", kind, "sphere-object", 1, "target", world, 24, motion)


def seam_scene(n=24, lon0=150.0, speed=2.5, radius=2.5, r=0.3):
    """A ball circling the camera at 2.5 deg/frame from lon 150: at the seam (180) on frame 12."""
    motion = w3.Motion(radius, lon0, speed)
    centre = radius * direction(lon0, 0.0)
    return ball_scene(centre, r, motion, "dynamic")


def analytic_hits(centre, r):
    """Per pixel of the W x H panorama: the ray's discriminant and distance to the sphere."""
    d = equirect_directions(W, H)
    b = d @ centre
    disc = np.where(b > 0, b**2 - (centre @ centre - r**2), -1.0)  # < 0: misses (or behind)
    return disc, b - np.sqrt(np.maximum(disc, 0))


@pytest.mark.parametrize("lon, lat", [(0.0, 0.0), (60.0, 10.0), (-120.0, -20.0), (179.0, 5.0)])
def test_a_target_appears_at_the_pixel_its_direction_predicts(lon, lat):
    centre, r = 3.0 * direction(lon, lat), 0.3
    out = w3.render_panorama(ball_scene(centre, r), 0, W, H)
    mask = out["instance"] == 1
    u_pred, v_pred = direction_to_pixel(centre, W, H)  # index space: pixel u's centre at u
    u = mask_longitudes(mask[None])[0]  # circular mean: right across the seam at lon 179
    u = (u + 180) / 360 * W - 0.5
    du = (u - u_pred + W / 2) % W - W / 2
    assert abs(du) < 0.5  # measured < 0.1 px
    assert np.argwhere(mask)[:, 0].mean() == pytest.approx(v_pred, abs=0.5)
    if lon == 179.0:  # the ball straddles the seam: on both borders
        assert mask[:, 0].any() and mask[:, -1].any()


def test_instance_map_and_depth_match_the_analytic_sphere_and_room():
    centre, r = 2.5 * direction(40.0, -15.0), 0.4
    out = w3.render_panorama(ball_scene(centre, r), 0, W, H)
    assert out["rgb"].shape == (H, W, 3) and out["rgb"].dtype == np.uint8
    assert out["instance"].dtype == np.int16 and out["depth"].dtype == np.float32
    disc, dist = analytic_hits(centre, r)
    mask = out["instance"] == 1
    assert mask[disc > 1e-6].all() and not mask[disc < -1e-6].any()
    assert mask.sum() > 100
    np.testing.assert_allclose(out["depth"][mask], dist[mask], rtol=1e-6)
    # every other ray ends on the room's walls: the slab exit distance
    d = equirect_directions(W, H)
    bound = np.where(d > 0, ROOM_HI, ROOM_LO)
    with np.errstate(divide="ignore"):
        wall = np.where(d != 0, bound / d, np.inf).min(axis=-1)
    np.testing.assert_allclose(out["depth"][~mask], wall[~mask], rtol=1e-6)
    assert np.all(out["instance"][~mask] == 0)


def test_generation_is_deterministic_from_the_id_and_round_trips_through_json():
    for kind in w3.KINDS:
        for i in range(4):
            scene = w3.generate_scene(f"pb_{i:03d}", kind)
            assert scene == w3.generate_scene(f"pb_{i:03d}", kind)
            assert w3.Scene.from_dict(json.loads(json.dumps(scene.to_dict()))) == scene
            assert scene.kind == kind and scene.category in w3.CATEGORIES
            assert (scene.motion is None) == (kind == "static")
        assert w3.generate_scene("pb_000", kind) != w3.generate_scene("pb_001", kind)
    scene = w3.generate_scene("pb_002", "dynamic")
    a, b = w3.render_video(scene, 4, 64, 32), w3.render_video(scene, 4, 64, 32)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    # the category can be forced; the draws after it do not depend on that
    for category in w3.CATEGORIES:
        forced = w3.generate_scene("pb_002", "dynamic", category=category)
        assert forced.category == category
        assert forced.motion.lon0 == scene.motion.lon0
    with pytest.raises(ValueError, match="unknown kind"):
        w3.generate_scene("pb_000", "moving")


def test_generated_scenes_have_one_target_distractors_of_its_kind_and_the_promised_sweeps():
    sweeps, crossings = [], 0
    for i in range(40):
        scene = w3.generate_scene(f"gen_{i:03d}", "dynamic", n_frames=48)
        target = scene.world.entity(scene.target_instance)
        assert target.target == scene.target_name
        kinds = {type(scene.world.entity(k)) for k in scene.distractor_instances}
        assert kinds <= {type(target)}
        sweeps.append(scene.motion.speed * 47)
        crossings += scene.crosses_seam()
    assert all(150 <= abs(s) <= 250 for s in np.round(sweeps, 2))
    assert min(sweeps) < 0 < max(sweeps)  # both directions
    assert 5 <= crossings <= 35  # some scenes cross the seam, not all


@pytest.mark.parametrize("category", w3.CATEGORIES)
def test_the_target_is_always_visible_and_inside_its_cap(category):
    scene = w3.generate_scene("cap_000", "dynamic", n_frames=12, category=category)
    video = w3.render_video(scene, 12, W, H)
    d = equirect_directions(W, H)
    for t in range(12):
        mask = video["instance"][t] == scene.target_instance
        assert mask.sum() > 10, f"target hidden on frame {t}"
        lon, lat, radius = scene.target_cap(t)
        assert lon == pytest.approx((scene.target_longitude(t) + 180) % 360 - 180, abs=1e-3)
        angles = np.degrees(np.arccos(np.clip(d[mask] @ direction(lon, lat), -1, 1)))
        assert angles.max() <= radius + 1e-6
        assert angles.max() >= radius - 2.0  # and not loose (about a pixel: 1.4 deg)


def test_a_dynamic_target_crossing_the_seam_appears_on_both_sides_and_moves_smoothly():
    scene = seam_scene()
    assert scene.crosses_seam()
    video = w3.render_video(scene, 24, W, H)
    masks = video["instance"] == 1
    assert masks.reshape(24, -1).any(axis=1).all()
    assert masks[12][:, 0].any() and masks[12][:, -1].any()  # at the seam on frame 12
    assert not (masks[0][:, 0].any() or masks[-1][:, -1].any())
    lon = np.unwrap(mask_longitudes(masks), period=360)
    np.testing.assert_allclose(lon, 150 + 2.5 * np.arange(24), atol=1.0)
    assert np.all(np.abs(np.diff(lon) - 2.5) < 1.0)
    # the instance map is the analytic sphere on every frame, through the crossing
    for t in (0, 12, 23):
        disc, dist = analytic_hits(scene.target_center(t), 0.3)
        assert masks[t][disc > 1e-6].all() and not masks[t][disc < -1e-6].any()
        np.testing.assert_allclose(video["depth"][t][masks[t]], dist[masks[t]], rtol=1e-6)


def test_a_static_target_never_moves_and_a_dynamic_one_moves_only_itself():
    static = w3.generate_scene("still_000", "static")
    video = w3.render_video(static, 6, 64, 32)
    assert all(np.array_equal(video[k][0], video[k][t]) for k in video for t in range(6))
    assert static.world_at(5) is static.world
    assert static.target_longitude(5) == static.target_longitude(0)
    assert w3.render_panorama(static, 5, 64, 32)["instance"].tolist() == \
        video["instance"][0].tolist()

    scene = w3.generate_scene("pb_003", "dynamic")
    assert scene.world_at(0) == scene.world
    video = w3.render_video(scene, 8, 64, 32)
    target = video["instance"] == scene.target_instance
    for t in range(1, 8):
        assert not np.array_equal(target[t], target[0])
        still = ~(target[t] | target[0])
        assert np.array_equal(video["rgb"][t][still], video["rgb"][0][still])
        assert np.array_equal(video["instance"][t][still], video["instance"][0][still])


@pytest.mark.parametrize("category", w3.CATEGORIES)
def test_render_video_equals_rendering_every_frame(category):
    scene = w3.generate_scene("fast_000", "dynamic", n_frames=6, category=category)
    video = w3.render_video(scene, 6, 96, 48)
    frames = [w3.render_panorama(scene, t, 96, 48) for t in range(6)]
    for k in ("rgb", "instance", "depth"):
        assert np.array_equal(video[k], np.stack([f[k] for f in frames]))
    if category == "person":  # the moving person keeps facing the camera
        for t in range(6):
            head = scene.world_at(t).entity(scene.target_instance).head
            facing = np.asarray(head.facing)
            to_camera = -np.asarray(head.center) * [1, 0, 1]
            assert facing @ to_camera / np.linalg.norm(to_camera) == pytest.approx(1, abs=1e-3)


def test_render_video_is_fast():
    scene = w3.generate_scene("pb_001", "dynamic", n_frames=24)
    w3.render_video(scene, 2, W, H)
    start = time.perf_counter()
    w3.render_video(scene, 24, W, H)
    assert (time.perf_counter() - start) / 24 < 0.05  # measured 2-11 ms per 256 x 128 frame
