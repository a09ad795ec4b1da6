"""Known answers for the procedural world renderer of the embedded default."""

import json
import time

import numpy as np
import pytest
from worldmemory.common.geometry import intrinsics, pose, rot_y
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.metrics.static_memory import depth_spearman
from worldmemory.worlds import raycaster as wd

W, H = 128, 96
K = intrinsics(W, H, 60.0)
F = K[0, 0]
GREY = wd.Texture("tiles", [[0.6, 0.6, 0.6], [0.3, 0.3, 0.3]], 0.5, 0.0)


def box_room(far=5.0, objects=()):
    """Room around the origin whose far wall is the plane z = far."""
    return wd.World("object", wd.Room([-4.0, -3.0, -3.0], [4.0, 3.0, far], [GREY] * 6),
                    objects=list(objects))


def identity_render(world, frame=0):
    return wd.render(world, np.eye(4), K, W, H, frame)


def people_world():
    for i in range(50):
        world = wd.generate_world(f"human_{i:03d}", "human")
        if len(world.people) == 2:
            return world
    raise AssertionError("no two-person world among 50 human cases")


def test_fronto_parallel_wall_has_constant_z_depth():
    out = identity_render(box_room(far=5.0))
    assert out["depth"].dtype == np.float32 and out["depth"].shape == (H, W)
    assert out["depth"][H // 2, W // 2] == pytest.approx(5.0, abs=1e-6)
    np.testing.assert_allclose(out["depth"], 5.0, atol=1e-5)  # the wall fills this view
    assert np.all(out["instance"] == 0)


@pytest.mark.parametrize("d, r", [(3.0, 0.5), (2.0, 0.8)])
def test_sphere_projects_to_the_expected_disc_with_its_instance_id(d, r):
    ball = wd.Thing(7, "ball", wd.Sphere([0.0, 0.0, d], r, GREY))
    out = identity_render(box_room(objects=[ball]))
    expected = F * r / np.sqrt(d**2 - r**2)  # tangent cone of half-angle asin(r / d)
    mask = out["instance"] == 7
    assert np.sqrt(mask.sum() / np.pi) == pytest.approx(expected, abs=1.0)
    v, u = np.mgrid[:H, :W] + 0.5
    dist = np.hypot(u - K[0, 2], v - K[1, 2])
    assert mask[dist < expected - 1].all() and not mask[dist > expected + 1].any()
    assert out["depth"][mask].min() == pytest.approx(d - r, abs=0.01)  # nearest point, on axis


def test_ellipsoid_projects_to_the_expected_ellipse():
    d, r = 3.0, 0.3
    egg = wd.Thing(7, "egg", wd.Sphere([0.0, 0.0, d], r, GREY, stretch=[2.0, 1.0, 1.0]))
    out = identity_render(box_room(objects=[egg]))
    rows, cols = np.nonzero(out["instance"] == 7)
    # tangent planes x = +-k z through the camera: k = (semi-axis along x) / sqrt(d^2 - c^2), c the
    # semi-axis along z; likewise in y
    half = F * r / np.sqrt(d**2 - r**2)
    assert (np.ptp(cols) + 1) / 2 == pytest.approx(2 * half, abs=1.0)
    assert (np.ptp(rows) + 1) / 2 == pytest.approx(half, abs=1.0)
    assert out["depth"][out["instance"] == 7].min() == pytest.approx(d - r, abs=0.01)


def test_rendering_is_deterministic_and_worlds_round_trip():
    for family in wd.FAMILIES:
        world = wd.generate_world(f"{family}_000", family)
        assert world == wd.generate_world(f"{family}_000", family)
        assert wd.World.from_dict(json.loads(json.dumps(world.to_dict()))) == world
        a, b = identity_render(world), identity_render(world)
        for key in ("rgb", "depth", "instance"):
            assert np.array_equal(a[key], b[key])
    assert wd.generate_world("object_000", "object") != wd.generate_world("object_001", "object")


def test_generated_targets_are_in_view_with_their_own_ids():
    for family in wd.FAMILIES:
        for i in range(5):
            world = wd.generate_world(f"{family}_{i:03d}", family)
            ids = [e.instance for e in world.entities()]
            assert ids[0] == 0 and len(set(ids)) == len(ids)
            seen = np.unique(identity_render(world)["instance"])
            assert set(ids) <= set(seen.tolist())


def test_two_people_have_different_faces():
    world = people_world()
    first, second = world.people
    assert first.head.texture != second.head.texture
    out = identity_render(world)
    swapped = people_world()
    swapped.people[1].head.texture = first.head.texture  # give person 1 person 0's face
    other = identity_render(swapped)
    mask = out["instance"] == second.instance
    assert np.any(out["rgb"][mask] != other["rgb"][mask])
    assert np.array_equal(out["rgb"][~mask], other["rgb"][~mask])


def test_turning_around_sees_another_wall_and_returning_reproduces_frame_0():
    world = wd.generate_world("object_000", "object")
    start = identity_render(world)
    behind = wd.render(world, pose(rot_y(np.pi), [0.0, 0.0, 0.0]), K, W, H, 0)
    assert np.mean(start["rgb"] != behind["rgb"]) > 0.5
    assert not np.array_equal(start["instance"], behind["instance"])
    traj = tj.build("LR", width=W, height=H)
    returned = wd.render(world, traj.poses[-1], K, W, H, 0)
    for key in ("rgb", "depth", "instance"):
        assert np.array_equal(start[key], returned[key])


@pytest.mark.parametrize("amount", [0.0, 1.0])
@pytest.mark.parametrize("mechanism", wd.MECHANISMS)
def test_dynamic_event_changes_state_and_pixels(mechanism, amount):
    """Also after ``perturb`` re-sampled the event (its shape too): the mechanics still work."""
    if mechanism in wd.DEFAULT_MECHANISMS:  # drawn by the embedded default's worlds
        world = next(w for w in (wd.generate_world(f"dynamic_{i:03d}", "dynamic") for i in range(60))
                     if w.events[0].mechanism == mechanism)
    else:  # only drawn as a category
        world = wd.generate_world(f"dynamic_{mechanism}_000", "dynamic", mechanism)
    table_top = world.room.fixtures[0].lo[1]
    world = wd.perturb(world, [1], amount, np.random.default_rng(8))
    assert resting_spot(world.events[0].shape)[1] == pytest.approx(table_top)
    event = world.events[0]
    assert event.state(0) == {"started": False, "progress": 0.0}
    assert event.state(tj.DEFAULT_HOLD_FRAMES)["started"]  # visibly starts in the initial hold
    assert 0 < event.state(tj.DEFAULT_HOLD_FRAMES)["progress"] < 1
    assert event.state(400) == {"started": True, "progress": 1.0}
    early, late = identity_render(world, 0), identity_render(world, 400)
    mask = (early["instance"] == event.instance) | (late["instance"] == event.instance)
    assert np.mean(np.any(early["rgb"][mask] != late["rgb"][mask], axis=-1)) > 0.3
    assert np.array_equal(early["rgb"][~mask], late["rgb"][~mask])


def test_perturb_zero_is_identity_and_one_changes_only_that_entity():
    world = wd.generate_world("object_001", "object")
    target = world.objects[0].instance
    same = wd.perturb(world, [target], 0.0, np.random.default_rng(0))
    assert same.to_dict() == world.to_dict() and same is not world
    changed = wd.perturb(world, [target], 1.0, np.random.default_rng(0))
    assert changed != world and world == wd.generate_world("object_001", "object")  # no mutation
    before, after = identity_render(world), identity_render(changed)
    mask = before["instance"] == target
    assert np.mean(np.any(before["rgb"][mask] != after["rgb"][mask], axis=-1)) > 0.5
    either = mask | (after["instance"] == target)  # the shape changes too
    for key in ("rgb", "depth", "instance"):
        assert np.array_equal(before[key][~either], after[key][~either])
    with pytest.raises(ValueError, match="amount"):
        wd.perturb(world, [target], 1.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="instance id 99"):
        wd.perturb(world, [99], 0.5, np.random.default_rng(0))


def test_perturb_without_reshape_changes_appearance_only():
    world = wd.generate_world("object_001", "object")
    target = world.objects[0].instance
    painted = wd.perturb(world, [target], 1.0, np.random.default_rng(0), reshape=False)
    reshaped = wd.perturb(world, [target], 1.0, np.random.default_rng(0))
    shape = painted.entity(target).shape
    assert shape.texture == reshaped.entity(target).shape.texture  # the same draws
    assert shape == wd.Box(world.entity(target).shape.lo, world.entity(target).shape.hi,
                           shape.texture)
    before, after = identity_render(world), identity_render(painted)
    assert np.array_equal(before["instance"], after["instance"])
    assert np.array_equal(before["depth"], after["depth"])


def test_perturb_is_deterministic_in_its_rng():
    world = wd.generate_world("environment_001", "environment")
    ids = [e.instance for e in world.entities()]
    a = wd.perturb(world, ids, 0.7, np.random.default_rng(11))
    assert a == wd.perturb(world, ids, 0.7, np.random.default_rng(11))
    assert a != wd.perturb(world, ids, 0.7, np.random.default_rng(12))


def aspect(mask):
    """Width / height of the mask's tight box: what Eq. 5's silhouette comparison cannot
    normalise away (it removes position and scale)."""
    rows, cols = np.nonzero(mask)
    return (np.ptp(cols) + 1) / (np.ptp(rows) + 1)


def resting_spot(shape):
    """Bottom (largest y) and centre in x and z."""
    if isinstance(shape, wd.Box):
        return [(shape.lo[0] + shape.hi[0]) / 2, shape.hi[1], (shape.lo[2] + shape.hi[2]) / 2]
    return [shape.center[0], shape.center[1] + shape.radius * shape.stretch[1], shape.center[2]]


@pytest.mark.parametrize("kind", [wd.Box, wd.Sphere])
def test_perturb_reshapes_an_object_where_it_rests_and_more_with_the_amount(kind):
    world = wd.generate_world("object_000", "object")  # a sphere and a box
    thing = next(o for o in world.objects if isinstance(o.shape, kind))
    aspects = []
    for amount in (0.0, 0.5, 1.0):
        changed = wd.perturb(world, [thing.instance], amount, np.random.default_rng(3))
        shape = changed.entity(thing.instance).shape
        assert isinstance(shape, kind)
        assert resting_spot(shape) == pytest.approx(resting_spot(thing.shape), abs=1e-12)
        aspects.append(aspect(identity_render(changed)["instance"] == thing.instance))
    change = np.abs(np.array(aspects) - aspects[0])
    assert 0 < change[1] < change[2] and change[2] > 0.2, aspects


def test_perturb_gives_a_person_new_proportions_on_the_same_spot():
    world = people_world()
    person = world.people[0]
    changed = wd.perturb(world, [person.instance], 1.0, np.random.default_rng(4))
    torso, head = changed.people[0].torso, changed.people[0].head
    # feet on the same spot, up to the 4-decimal rounding of the generated corners
    assert resting_spot(torso) == pytest.approx(resting_spot(person.torso), abs=1e-4)
    assert head.center[0] == person.head.center[0] and head.center[2] == person.head.center[2]
    assert head.stretch[0] == head.stretch[1] == head.stretch[2]  # heads stay round
    neck = head.center[1] + 0.8 * head.radius * head.stretch[1]
    assert torso.lo[1] == pytest.approx(neck)  # the head still sits on the torso

    def proportions(p):
        width, height = np.subtract(p.torso.hi, p.torso.lo)[:2]
        return width / height, p.head.radius * p.head.stretch[0] / height

    assert np.abs(np.subtract(proportions(changed.people[0]), proportions(person))).max() > 0.02
    before, after = identity_render(world), identity_render(changed)
    mask = before["instance"] == person.instance
    assert not np.array_equal(mask, after["instance"] == person.instance)


def test_perturb_of_the_room_changes_the_background():
    world = wd.generate_world("environment_000", "environment")
    before = identity_render(world)
    after = identity_render(wd.perturb(world, [0], 1.0, np.random.default_rng(1)))
    assert np.mean(np.any(before["rgb"] != after["rgb"], axis=-1)) > 0.5


def test_perturb_of_the_room_changes_its_depth_non_uniformly():
    """Spearman < 1 rules out a uniform scale, which Depth Spearman and Eq. 6 ignore."""
    world = wd.generate_world("environment_000", "environment")
    depth = identity_render(world)["depth"]
    rho = []
    for amount in (0.0, 0.5, 1.0):
        changed = wd.perturb(world, [0], amount, np.random.default_rng(5))
        rho.append(depth_spearman(depth, identity_render(changed)["depth"]))
    assert rho[0] == 1 and rho[2] < rho[1] < 1 and rho[2] < 0.97, rho
    room, old = changed.room, world.room
    assert room.hi[1] == old.hi[1]  # the floor stays
    assert not np.allclose(np.divide(room.hi, old.hi), np.divide(room.lo, old.lo))
    for new, fixture in zip(room.fixtures, old.fixtures):  # walls carry their fixtures along
        for corner, wall, was, on in ((new.lo, room.lo, fixture.lo, old.lo),
                                      (new.hi, room.hi, fixture.hi, old.hi)):
            touching = np.isclose(was, on)
            assert np.allclose(np.asarray(corner)[touching], np.asarray(wall)[touching])
        assert np.all(np.less(new.lo, new.hi))


def test_re_sampled_rooms_keep_clear_of_the_camera_and_the_entities():
    """Re-sampling again and again (the amnesic model on every return) does not compound: walls
    and landmarks stay within what generate_world makes, clear of where cameras and entities are
    (pillars |x| >= 1.7, cabinets and paintings z >= 4.3)."""
    for i in range(10):
        world = wd.generate_world(f"environment_{i:03d}", "environment")
        for k in range(4):
            world = wd.perturb(world, [0], 1.0, np.random.default_rng(k))
            lo, hi = world.room.lo, world.room.hi
            assert lo[0] <= -2.5 and hi[0] >= 2.5 and lo[2] <= -2.0 and hi[2] >= 5.5
            for box in world.room.fixtures:
                assert np.all(np.greater_equal(box.lo, lo)) and np.all(np.less_equal(box.hi, hi))
                assert min(abs(box.lo[0]), abs(box.hi[0])) >= 1.7 or box.lo[2] >= 4.3


def test_perturb_of_the_room_keeps_what_objects_rest_on():
    world = wd.generate_world("object_001", "object")  # objects on pedestals (room fixtures)
    changed = wd.perturb(world, [0], 1.0, np.random.default_rng(6))
    assert [(b.lo, b.hi) for b in changed.room.fixtures] == [(b.lo, b.hi)
                                                             for b in world.room.fixtures]
    assert changed.objects == world.objects and changed.room.lo != world.room.lo


def test_camera_outside_the_room_is_an_error():
    with pytest.raises(ValueError, match="inside the room"):
        wd.render(box_room(), pose(np.eye(3), [0.0, 0.0, 10.0]), K, W, H)


def test_render_is_fast():
    world = wd.generate_world("object_001", "object")  # 3 objects on 3 pedestals, 6 walls
    identity_render(world)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        identity_render(world)
        times.append(time.perf_counter() - start)
    assert np.median(times) < 0.05


def test_render_rays_with_the_pinhole_rays_reproduces_render():
    world = wd.generate_world("object_001", "object")
    c2w = pose(rot_y(0.4), [0.2, -0.1, 0.3])
    view = wd.render(world, c2w, K, W, H)
    u, v = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
    rays = np.stack([u.ravel(), v.ravel(), np.ones(u.size)], axis=1) @ np.linalg.inv(K).T
    out = wd.render_rays(world, c2w[:3, 3], rays @ c2w[:3, :3].T)
    assert out["rgb"].shape == (H * W, 3) and out["rgb"].dtype == np.uint8
    assert np.array_equal(out["instance"], view["instance"].ravel())
    assert np.abs(out["rgb"].astype(int) - view["rgb"].reshape(-1, 3)).max() <= 1
    # distance along the ray = z-depth x the ray's length at z = 1
    np.testing.assert_allclose(out["depth"], view["depth"].ravel() * np.linalg.norm(rays, axis=1),
                               rtol=1e-6)


def test_render_rays_depth_is_the_distance_to_a_sphere_along_any_ray():
    centre, r = np.array([1.0, -0.5, 2.0]), 0.6
    ball = wd.Thing(3, "ball", wd.Sphere(centre.tolist(), r, GREY))
    world = box_room(objects=[ball])
    rng = np.random.default_rng(0)
    to_ball = centre / np.linalg.norm(centre)
    dirs = to_ball + rng.normal(scale=0.1, size=(500, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    out = wd.render_rays(world, np.zeros(3), 3.0 * dirs)  # any length: normalised inside
    b = dirs @ centre
    disc = b**2 - (centre @ centre - r**2)
    hit = disc > 1e-9
    assert 50 < hit.sum() < 500
    assert np.all(out["instance"][hit] == 3) and np.all(out["instance"][disc < -1e-9] == 0)
    np.testing.assert_allclose(out["depth"][hit], b[hit] - np.sqrt(disc[hit]), atol=1e-9)


def test_render_rays_accepts_one_origin_per_ray():
    ball = wd.Thing(3, "ball", wd.Sphere([0.0, 0.0, 3.0], 0.5, GREY))
    world = box_room(objects=[ball])
    origins = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.0, 0.2, 1.0], [2.0, 0.0, 0.0]])
    dirs = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    out = wd.render_rays(world, origins, dirs)
    for i in range(len(origins)):
        one = wd.render_rays(world, origins[i], dirs[i:i + 1])
        assert out["instance"][i] == one["instance"][0]
        assert out["depth"][i] == pytest.approx(one["depth"][0], abs=1e-12)
        assert np.array_equal(out["rgb"][i], one["rgb"][0])
    assert out["instance"].tolist() == [3, 3, 3, 0]
    assert out["depth"][:3] == pytest.approx([2.5, 3.0 - np.sqrt(0.25 - 0.09), 2.0 - np.sqrt(0.21)])
    with pytest.raises(ValueError, match="inside the room"):
        wd.render_rays(world, [[0.0, 0.0, 0.0], [9.0, 0.0, 0.0]], dirs[:2])


# ---------------------------------------------------------------------------------------------
# Subcategories (wd.CATEGORIES, docs/design.md "Case coverage")

CATEGORY_WORLDS = [(family, category) for family, categories in wd.CATEGORIES.items()
                   for category in categories]


def category_world(family, category, i=0):
    return wd.generate_world(f"{family}_{category}_{i:03d}", family, category)


@pytest.mark.parametrize("family, category", CATEGORY_WORLDS)
def test_category_worlds_render_their_targets_and_round_trip(family, category):
    for i in range(3):
        world = category_world(family, category, i)
        assert world.family == family and world.category == category
        assert world == category_world(family, category, i)
        d = world.to_dict()
        assert d["category"] == category
        assert wd.World.from_dict(json.loads(json.dumps(d))) == world
        instance = identity_render(world)["instance"]
        for entity in [*world.people, *world.objects, *world.events]:
            assert (instance == entity.instance).sum() >= 20, (category, i, entity.target)
        corners = np.array([[0, 0, 0], [0, 0, 0.25], [0.25, 0, 0.25], [0.25, 0, 0]])  # default loop
        assert wd.clearance(world, corners).min() >= 0.3
    assert category_world(family, category, 0) != category_world(family, category, 1)


def test_category_worlds_have_what_their_names_say():
    assert [len(category_world("human", c).people) for c in ("single_person", "multi_person")] == [1, 2]
    assert len(category_world("object", "single_object").objects) == 1
    assert all(len(category_world("object", "multi_object", i).objects) >= 2 for i in range(5))
    furniture = category_world("object", "furniture").objects[0]
    assert furniture.shape.hi[1] == category_world("object", "furniture").room.hi[1]  # on the floor
    assert furniture.shape.hi[1] - furniture.shape.lo[1] >= 0.9
    for c in ("corridor", "hall"):
        rooms = [category_world("environment", c, i).room for i in range(5)]
        widths = [r.hi[0] - r.lo[0] for r in rooms]
        assert all(r.hi[2] >= 9 for r in rooms)
        assert all(w <= 3.8 for w in widths) if c == "corridor" else all(w >= 10 for w in widths)
    for mechanism in wd.MECHANISMS:
        assert category_world("dynamic", mechanism).events[0].mechanism == mechanism
    with pytest.raises(ValueError, match="unknown object category 'animal'"):
        wd.generate_world("object_animal_000", "object", "animal")


def test_worlds_without_a_category_serialise_as_before():
    d = wd.generate_world("object_000", "object").to_dict()
    assert "category" not in d and all("size" not in o for o in d["objects"])
    assert wd.World.from_dict(d).category is None


@pytest.mark.parametrize("category", ["furniture", "tabletop"])
def test_new_objects_perturb_within_their_own_size_where_they_rest(category):
    world = category_world("object", category)
    ids = [o.instance for o in world.objects]
    assert wd.perturb(world, ids, 0.0, np.random.default_rng(1)) == world
    changed = wd.perturb(world, ids, 1.0, np.random.default_rng(1))
    lo, hi = (np.asarray(b, dtype=float) for b in (np.broadcast_to(world.objects[0].size[0], 3),
                                                    np.broadcast_to(world.objects[0].size[1], 3)))
    for old, new in zip(world.objects, changed.objects):
        assert new.shape != old.shape
        assert resting_spot(new.shape) == pytest.approx(resting_spot(old.shape))
        if isinstance(new.shape, wd.Box):
            half = (np.asarray(new.shape.hi) - np.asarray(new.shape.lo)) / 2
        else:
            half = new.shape.radius * np.asarray(new.shape.stretch)
        assert np.all(half >= lo - 1e-9) and np.all(half <= hi + 1e-9)
    assert wd.World.from_dict(json.loads(json.dumps(changed.to_dict()))) == changed
    instance = identity_render(changed)["instance"]
    assert all((instance == o.instance).any() for o in changed.objects)


NEW_MECHANISMS = [m for m in wd.MECHANISMS if m not in wd.DEFAULT_MECHANISMS]


@pytest.mark.parametrize("mechanism", NEW_MECHANISMS)
def test_new_mechanisms_draw_their_progress(mechanism):
    """The shapes follow the progress: the initial state before the start, the final state after
    the end, and in between the mechanism's own change in proportion to the progress."""
    world = category_world("dynamic", mechanism)
    event = world.events[0]
    shape, end = event.shape, event.start + event.duration
    lo, hi = np.asarray(shape.lo), np.asarray(shape.hi)
    assert np.array_equal(identity_render(world, event.start)["rgb"], identity_render(world, 0)["rgb"])
    assert np.array_equal(identity_render(world, end)["rgb"], identity_render(world, end + 50)["rgb"])
    assert not np.array_equal(identity_render(world, end)["rgb"], identity_render(world, 0)["rgb"])
    for frame in (event.start, event.start + event.duration // 3, end):
        p = event.state(frame)["progress"]
        prims = event.primitives(frame)
        if mechanism == "slice":  # two halves, the gap between them p x travel
            assert len(prims) == 2
            assert prims[1].lo[0] - prims[0].hi[0] == pytest.approx(p * event.travel[0])
            assert prims[0].lo[0] == pytest.approx(lo[0] - p * event.travel[0] / 2)
        elif mechanism == "lift":  # raised by p x travel
            assert prims[0].hi[1] == pytest.approx(hi[1] + p * event.travel[1])
            assert prims[0].hi[1] - prims[0].lo[1] == pytest.approx(hi[1] - lo[1])
        elif mechanism == "erase":  # the drawing blends into the blank board
            expected = (1 - p) * np.asarray(shape.texture.colors) + p * np.asarray([event.accent] * 2)
            assert np.allclose(prims[0].texture.colors, expected)
        else:  # melt: the block loses 80 % of its height; a puddle appears once it started
            block = prims[-1]
            assert block.hi[1] - block.lo[1] == pytest.approx((1 - 0.8 * p) * (hi[1] - lo[1]))
            assert len(prims) == (2 if p > 0 else 1)
    if mechanism == "erase":
        assert np.allclose(event.primitives(end)[0].texture.colors, [event.accent] * 2)
