"""Synthetic 360-degree scenes for PersistBench's embedded default (Method 1).

PersistBench films each target with a 360-degree camera that acts as an omniscient observer: any
perspective camera at its centre is a crop of the equirectangular frame, so the reference camera
can keep the target in view while the input camera loses it. The paper's panoramas are real
videos; the embedded default renders its own, with exact masks, depth and identities, by
reusing WorldMemBench's procedural worlds and ray caster (``worldmembench.world.render_rays``).

A scene is a large room around a fixed camera centre at the origin, with landmarks against all
four walls, ONE target (an entity of a category: 'sphere-object', 'box-object' or 'person') and
0-2 distractors of the same category elsewhere, so identity matters. In a 'static' scene the
target stays put on its pedestal (or stands, for a person); in a 'dynamic' scene it travels on a
horizontal circle around the camera (``Motion``): over the clip of ``n_frames`` it sweeps
150-250 degrees of longitude, one way or the other, and its start is uniform in longitude, so
about half the dynamic scenes cross the panorama's left/right seam (lon = +-180 deg, behind the
start view); spheres also bob up and down. Distractors of a dynamic scene stand in the arc the
target never visits, so nothing ever hides the target from the centre (landmarks are beyond
its circle).

Conventions: those of ``common.equirect`` (OpenCV world axes, x right, y DOWN, z forward;
longitude 0 along +z, increasing towards +x; latitude positive up); the room is instance 0, the
target ``TARGET_INSTANCE``, distractors 2, 3. Longitudes and latitudes of the API are degrees.
Scenes are dataclasses of plain floats and lists: ``Scene.to_dict`` / ``Scene.from_dict`` round
trip through JSON exactly, so a manifest can carry them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from worldmemory.common.equirect import equirect_directions, lonlat_to_direction
from worldmemory.common.seeds import stable_rng
from worldmemory.worlds import raycaster as wd
from worldmemory.worlds.raycaster import Box, Person, Room, Sphere, Thing, World

KINDS = ("static", "dynamic")
CATEGORIES = ("sphere-object", "box-object", "person")
NAMESPACE = "persistbench/world360"
CENTRE = np.zeros(3)  # the 360-degree camera's centre (world origin)
N_FRAMES = 48  # default clip length a dynamic target's sweep is laid out for
SWEEP_DEG = (150.0, 250.0)  # longitude a dynamic target sweeps over n_frames
RADIUS = (2.0, 3.2)  # horizontal distance of targets and distractors from the centre, metres
BOB = (0.05, 0.15)  # vertical amplitude (m) of a moving sphere ...
BOB_PERIOD = (12.0, 24.0)  # ... and its period in frames
TARGET_INSTANCE = 1
CAP_MARGIN_DEG = 0.5  # render_video: re-cast rays this close to the target's cap too


@dataclass
class Motion:
    """A dynamic target's path: a horizontal circle of ``radius`` metres about the camera's
    vertical axis, at longitude ``lon0 + speed * frame`` degrees (unwrapped; speed signed,
    positive towards +x), with a vertical bob of ``bob`` metres and period ``bob_period`` frames
    (y = y0 + bob sin(2 pi frame / bob_period)). Frame 0 is where the world holds the target."""

    radius: float
    lon0: float
    speed: float
    bob: float = 0.0
    bob_period: float = 16.0

    def longitude(self, frame) -> float | np.ndarray:
        """Unwrapped longitude (degrees) of the target's centre at ``frame`` (float or array)."""
        lon = self.lon0 + self.speed * np.asarray(frame, dtype=float)
        return float(lon) if lon.ndim == 0 else lon

    def offset(self, frame: float) -> np.ndarray:
        """Displacement (3,) of the target from its frame-0 position."""
        def at(f):
            lon = np.radians(self.longitude(f))
            return np.array([self.radius * np.sin(lon),
                             self.bob * np.sin(2 * np.pi * f / self.bob_period),
                             self.radius * np.cos(lon)])
        return at(float(frame)) - at(0.0)


@dataclass
class Scene:
    """A 360-degree scene: the world around the camera centre at the origin, the target (its
    instance id, name and category) and, for kind 'dynamic', its motion."""

    scene_id: str
    kind: str
    category: str
    target_instance: int
    target_name: str
    world: World
    n_frames: int = N_FRAMES
    motion: Motion | None = None

    def world_at(self, frame: int) -> World:
        """The world at ``frame``: a shallow copy with the target moved (the world itself when
        the target does not move; ``world_at(0)`` equals ``world``)."""
        if self.motion is None:
            return self.world
        d = self.motion.offset(frame)
        turn = np.radians(self.motion.longitude(frame) - self.motion.lon0)

        def moved(e):
            if e.instance != self.target_instance:
                return e
            if isinstance(e, Person):
                head = replace(_shift(e.head, d), facing=_turn_dir(e.head.facing, turn))
                return replace(e, torso=_shift(e.torso, d), head=head)
            return replace(e, shape=_shift(e.shape, d))

        return replace(self.world, people=[moved(p) for p in self.world.people],
                       objects=[moved(o) for o in self.world.objects])

    def target_primitives(self, frame: int = 0) -> list[Box | Sphere]:
        entity = self.world_at(frame).entity(self.target_instance)
        return [entity.torso, entity.head] if isinstance(entity, Person) else [entity.shape]

    def target_bounds(self, frame: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounding box (lo, hi) of the target at ``frame``, world metres."""
        corners = np.array([c for p in self.target_primitives(frame) for c in _extent(p)])
        return corners.min(axis=0), corners.max(axis=0)

    def target_center(self, frame: int = 0) -> np.ndarray:
        """Centre (3,) of the target's bounding box: on the motion's circle for a dynamic one."""
        lo, hi = self.target_bounds(frame)
        return (lo + hi) / 2

    def target_longitude(self, frame=0) -> float | np.ndarray:
        """Longitude (degrees) of the target centre's direction: unwrapped along a dynamic
        target's motion (it may leave [-180, 180)), in [-180, 180] for a static one."""
        if self.motion is not None:
            return self.motion.longitude(frame)
        c = self.target_center()
        lon = float(np.degrees(np.arctan2(c[0], c[2])))
        return np.full(np.shape(frame), lon) if np.ndim(frame) else lon

    def target_cap(self, frame: int = 0) -> tuple[float, float, float]:
        """(lon_deg, lat_deg, radius_deg): the smallest cap about the direction of the target's
        centre that holds the whole target as seen from the camera centre (exact for a sphere);
        the target's angular box of ``persistbench.frustum.angular_box_in_view``. lon in [-180, 180]."""
        c = self.target_center(frame)
        axis = c / np.linalg.norm(c)
        radius = 0.0
        for p in self.target_primitives(frame):
            if isinstance(p, Sphere):
                centre = np.asarray(p.center)
                dist = np.linalg.norm(centre)
                reach = np.arcsin(min(p.radius * max(p.stretch) / dist, 1.0))
                radius = max(radius, _angle(axis, centre) + reach)
            else:
                radius = max(radius, max(_angle(axis, k) for k in _corners(p)))
        lon = np.degrees(np.arctan2(c[0], c[2]))
        lat = np.degrees(np.arctan2(-c[1], np.hypot(c[0], c[2])))
        return float(lon), float(lat), float(np.degrees(radius))

    def crosses_seam(self, n_frames: int | None = None) -> bool:
        """Whether the target's centre crosses lon = +-180 deg within the first n_frames."""
        if self.motion is None:
            return False
        n = self.n_frames if n_frames is None else n_frames
        a, b = self.motion.longitude(0), self.motion.longitude(n - 1)
        return np.floor((a + 180) / 360) != np.floor((b + 180) / 360)

    @property
    def distractor_instances(self) -> list[int]:
        return [e.instance for e in self.world.entities()
                if e.instance not in (0, self.target_instance)]

    def to_dict(self) -> dict:
        return {"scene_id": self.scene_id, "kind": self.kind, "category": self.category,
                "target_instance": self.target_instance, "target_name": self.target_name,
                "n_frames": self.n_frames, "world": self.world.to_dict(),
                "motion": None if self.motion is None else asdict(self.motion)}

    @classmethod
    def from_dict(cls, d: dict) -> Scene:
        motion = None if d["motion"] is None else Motion(**d["motion"])
        return cls(d["scene_id"], d["kind"], d["category"], d["target_instance"],
                   d["target_name"], World.from_dict(d["world"]), d["n_frames"], motion)


def _shift(shape: Box | Sphere, d) -> Box | Sphere:
    if isinstance(shape, Box):
        return replace(shape, lo=(np.asarray(shape.lo) + d).tolist(),
                       hi=(np.asarray(shape.hi) + d).tolist())
    return replace(shape, center=(np.asarray(shape.center) + d).tolist())


def _turn_dir(v, angle: float) -> list:
    """Direction ``v`` turned by ``angle`` radians of longitude (about the vertical axis)."""
    c, s = np.cos(angle), np.sin(angle)
    return [v[0] * c + v[2] * s, v[1], v[2] * c - v[0] * s]


def _extent(p: Box | Sphere) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(p, Box):
        return np.asarray(p.lo), np.asarray(p.hi)
    axes = p.radius * np.asarray(p.stretch)
    return np.asarray(p.center) - axes, np.asarray(p.center) + axes


def _corners(box: Box) -> np.ndarray:
    lo, hi = box.lo, box.hi
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                     for z in (lo[2], hi[2])])


def _angle(axis, p) -> float:
    p = np.asarray(p, dtype=float)
    return float(np.arccos(np.clip(axis @ p / np.linalg.norm(p), -1.0, 1.0)))


# ---------------------------------------------------------------------------------------------
# Generation


def generate_scene(scene_id: str, kind: str, n_frames: int = N_FRAMES,
                   category: str | None = None) -> Scene:
    """A random scene, deterministic in (scene_id, kind) (SHA-256 seeded, ``stable_rng``).

    The category is drawn unless given (the draws that follow do not depend on whether it was
    given). A dynamic target's speed is set so that it sweeps 150-250 degrees over ``n_frames``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    rng = stable_rng(scene_id, f"{NAMESPACE}/{kind}")
    drawn = str(rng.choice(CATEGORIES))
    category = drawn if category is None else category
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; valid: {', '.join(CATEGORIES)}")
    room = _room(rng)
    world = World("human" if category == "person" else "object", room)
    lon0 = float(rng.uniform(-180.0, 180.0))
    radius = float(rng.uniform(*RADIUS))
    motion = None
    if kind == "dynamic":
        sweep = rng.uniform(*SWEEP_DEG) * (1 if rng.random() < 0.5 else -1)
        bob = (rng.uniform(*BOB), rng.uniform(*BOB_PERIOD)) if category == "sphere-object" \
            else (0.0, 16.0)
        motion = Motion(*wd._r([radius, lon0, sweep / max(n_frames - 1, 1), *bob]))
        radius, lon0 = motion.radius, motion.lon0
    _place(world, rng, category, TARGET_INSTANCE, "target", lon0, radius, pedestal=motion is None)
    for i, lon in enumerate(_distractor_longitudes(rng, lon0, motion, n_frames)):
        _place(world, rng, category, i + 2, f"distractor_{i + 1}", lon,
               float(rng.uniform(*RADIUS)), pedestal=True)
    return Scene(scene_id, kind, category, TARGET_INSTANCE, "target", world, n_frames, motion)


def _room(rng) -> Room:
    """A large room around the camera (walls 5-8 m away, floor 1.45-1.7 m below the eye) with
    3-6 landmarks of ``world._random_landmark`` against randomly chosen walls."""
    lo = [-rng.uniform(5.0, 8.0), -rng.uniform(2.2, 3.5), -rng.uniform(5.0, 8.0)]
    hi = [rng.uniform(5.0, 8.0), rng.uniform(1.45, 1.7), rng.uniform(5.0, 8.0)]
    room = Room(wd._r(lo), wd._r(hi),
                [wd._random_texture(rng, rng.choice(wd.PATTERNS)) for _ in range(6)])
    for _ in range(int(rng.integers(3, 7))):
        quarter = int(rng.integers(4))  # the wall at longitude 90 x quarter degrees
        local = replace(room, fixtures=[])
        local.lo, local.hi = _turn_box(room.lo, room.hi, -quarter)
        box = wd._random_landmark(rng, local)  # made against the wall ahead (+z) of `local`
        lo, hi = _turn_box(box.lo, box.hi, quarter)
        room.fixtures.append(Box(lo, hi, box.texture))
    return room


def _turn_box(lo, hi, quarters: int) -> tuple[list, list]:
    """Axis-aligned box turned by ``quarters`` x 90 degrees of longitude ((x, z) -> (z, -x) per
    quarter turn: +z goes to +x), exact (swaps and negations only)."""
    a, b = np.array(lo, dtype=float), np.array(hi, dtype=float)
    for _ in range(quarters % 4):
        a, b = a[[2, 1, 0]] * [1, 1, -1], b[[2, 1, 0]] * [1, 1, -1]
    return np.minimum(a, b).tolist(), np.maximum(a, b).tolist()


def _place(world: World, rng, category: str, instance: int, name: str, lon_deg: float,
           radius: float, pedestal: bool) -> None:
    """Add an entity of ``category`` centred at (longitude, horizontal distance) from the camera:
    a person standing on the floor facing the camera, or an object with its top 0.2-0.5 m below
    eye level, on a pedestal (a room fixture) when ``pedestal``, else floating (carried)."""
    floor = world.room.hi[1]
    x, z = radius * np.sin(np.radians(lon_deg)), radius * np.cos(np.radians(lon_deg))
    if category == "person":
        lo, hi, head_y, r = wd._person_build(rng, x, z, floor)
        torso = Box(wd._r(lo), wd._r(hi), wd._random_texture(rng, rng.choice(wd.PATTERNS)))
        head = Sphere(wd._r([x, head_y, z]), wd._r(r), wd._random_texture(rng, "face"),
                      wd._r([-x / radius, 0.0, -z / radius]))
        world.people.append(Person(instance, name, torso, head))
        return
    top = rng.uniform(0.2, 0.5)
    texture = wd._random_texture(rng, rng.choice(wd.PATTERNS))
    if category == "box-object":
        half = rng.uniform(*wd.OBJECT_HALF, 3)
        shape = Box(wd._r([x - half[0], top - 2 * half[1], z - half[2]]),
                    wd._r([x + half[0], top, z + half[2]]), texture)
    else:
        r = rng.uniform(*wd.OBJECT_HALF)
        shape = Sphere(wd._r([x, top - r, z]), wd._r(r), texture)
    world.objects.append(Thing(instance, name, shape))
    if pedestal:
        world.room.fixtures.append(wd._pedestal(rng, x, z, top, floor, 0.12))


def _distractor_longitudes(rng, lon0: float, motion: Motion | None, n_frames: int,
                           gap: float = 45.0, margin: float = 30.0) -> list[float]:
    """0-2 distractor longitudes, ``gap`` degrees apart from each other and from the target; for
    a moving target, inside the arc it never visits with ``margin`` degrees to spare (none when
    that arc is too short)."""
    n = int(rng.integers(0, 3))
    if motion is None:
        lo, hi, taken = lon0 + gap, lon0 + 360 - gap, [lon0]
    else:
        a, b = sorted([motion.longitude(0), motion.longitude(max(n_frames - 1, 0))])
        lo, hi, taken = b + margin, a + 360 - margin, []
    out = []
    for _ in range(n):
        if hi <= lo:
            break
        for _ in range(20):  # rejection sampling: deterministic in rng
            lon = rng.uniform(lo, hi)
            if all(abs(lon - t) >= gap for t in taken + out):
                out.append(float(lon))
                break
    return [float((lon + 180) % 360 - 180) for lon in out]


# ---------------------------------------------------------------------------------------------
# Rendering


def render_panorama(scene: Scene, frame: int, width: int, height: int) -> dict:
    """Equirectangular frame from the camera centre: {'rgb' uint8 (H, W, 3), 'instance' int16
    (H, W), 'depth' float32 (H, W): distance from the centre along each pixel's ray}."""
    out = wd.render_rays(scene.world_at(frame), CENTRE,
                         equirect_directions(width, height).reshape(-1, 3), frame)
    return {"rgb": out["rgb"].reshape(height, width, 3),
            "instance": out["instance"].astype(np.int16).reshape(height, width),
            "depth": out["depth"].astype(np.float32).reshape(height, width)}


def without_target(scene: Scene) -> World:
    """The scene's world with the target removed: what is behind it (the room does not move)."""
    world = scene.world
    return replace(world, people=[p for p in world.people if p.instance != scene.target_instance],
                   objects=[o for o in world.objects if o.instance != scene.target_instance])


def render_background(scene: Scene, width: int, height: int) -> np.ndarray:
    """(H, W, 3) uint8 equirectangular frame of the scene without its target."""
    out = wd.render_rays(without_target(scene), CENTRE,
                         equirect_directions(width, height).reshape(-1, 3))
    return out["rgb"].reshape(height, width, 3)


def render_video(scene: Scene, n_frames: int | None = None, width: int = 256,
                 height: int = 128) -> dict:
    """Frames 0 .. n_frames - 1 (default the scene's) stacked: {'rgb' (T, H, W, 3) uint8,
    'instance' (T, H, W) int16, 'depth' (T, H, W) float32}, each frame as ``render_panorama``.

    Only the target moves, and a ray's colour depends on nothing but its own hits, so the world
    without the target is cast once and each frame re-casts only the rays inside the target's
    cap (``Scene.target_cap`` plus CAP_MARGIN_DEG): a ray outside it cannot hit the target.
    A static scene is rendered once.
    """
    n = scene.n_frames if n_frames is None else int(n_frames)
    if scene.motion is None:
        one = render_panorama(scene, 0, width, height)
        return {k: np.repeat(v[None], n, axis=0) for k, v in one.items()}
    dirs = equirect_directions(width, height).reshape(-1, 3)
    back = wd.render_rays(without_target(scene), CENTRE, dirs)
    out = {"rgb": np.repeat(back["rgb"][None], n, axis=0),
           "instance": np.repeat(back["instance"].astype(np.int16)[None], n, axis=0),
           "depth": np.repeat(back["depth"].astype(np.float32)[None], n, axis=0)}
    for t in range(n):
        lon, lat, radius = scene.target_cap(t)
        axis = lonlat_to_direction(np.radians(lon), np.radians(lat))
        near = np.flatnonzero(dirs @ axis >= np.cos(np.radians(min(radius + CAP_MARGIN_DEG, 180))))
        hit = wd.render_rays(scene.world_at(t), CENTRE, dirs[near], t)
        for k in out:
            out[k][t, near] = hit[k]
    return {"rgb": out["rgb"].reshape(n, height, width, 3),
            "instance": out["instance"].reshape(n, height, width),
            "depth": out["depth"].reshape(n, height, width)}
