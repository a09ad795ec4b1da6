"""Known answers for the procedural world renderer of the embedded default."""

import json
import time

import numpy as np
import pytest

from worldmemory.common.geometry import pose, rot_y
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench import world as wd

W, H = 128, 96
K = tj.intrinsics(W, H, 60.0)
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


@pytest.mark.parametrize("mechanism", wd.MECHANISMS)
def test_dynamic_event_changes_state_and_pixels(mechanism):
    world = next(w for w in (wd.generate_world(f"dynamic_{i:03d}", "dynamic") for i in range(60))
                 if w.events[0].mechanism == mechanism)
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
    assert same == world and same is not world
    changed = wd.perturb(world, [target], 1.0, np.random.default_rng(0))
    assert changed != world and world == wd.generate_world("object_001", "object")  # no mutation
    before, after = identity_render(world), identity_render(changed)
    mask = before["instance"] == target
    assert np.mean(np.any(before["rgb"][mask] != after["rgb"][mask], axis=-1)) > 0.5
    assert np.array_equal(before["rgb"][~mask], after["rgb"][~mask])
    assert np.array_equal(before["instance"], after["instance"])
    assert np.array_equal(before["depth"], after["depth"])
    with pytest.raises(ValueError, match="amount"):
        wd.perturb(world, [target], 1.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="instance id 99"):
        wd.perturb(world, [99], 0.5, np.random.default_rng(0))


def test_perturb_of_the_room_changes_the_background():
    world = wd.generate_world("environment_000", "environment")
    before = identity_render(world)
    after = identity_render(wd.perturb(world, [0], 1.0, np.random.default_rng(1)))
    assert np.mean(np.any(before["rgb"] != after["rgb"], axis=-1)) > 0.5


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
