"""Procedural 3D worlds with ground truth for WorldMemBench's embedded default.

The paper's cases are photographs with target masks (Section 3.2, Figure 2) and its rollouts come
from video world models. To test the metrics and the workflow on *known* memory behaviour, the
embedded default renders its own worlds: a room, textured objects, human-like figures and dynamic
events, seen by the departure-and-revisit cameras of Section 3.3. Reference "world models" can then
re-render the world after a revisit exactly (perfect memory) or with perturbed appearance and
shape (``perturb``: forgetting), and every frame comes with exact depth and instance masks.

Conventions
-----------
* World coordinates are the camera frame of the conditioning frame (trajectories.py): OpenCV axes,
  x right, y DOWN, z forward, metres. The floor is therefore the room's largest y.
* Boxes are axis-aligned, given by their ``lo`` and ``hi`` corners; a Sphere may be stretched
  into an axis-aligned ellipsoid.
* Instance id 0 is the room (walls, floor, ceiling and its fixtures: pillars, paintings,
  pedestals, tables); every person, object and event has its own id >= 1 and a string target id.
* ``render`` returns z-depth (distance along the camera's optical axis), the depth that DA3-style
  estimators predict and that the Depth Spearman and Reconstruction metrics consume (Section 4.4).
* Worlds are plain dataclasses of lists and floats: ``to_dict`` / ``World.from_dict`` round-trip
  through JSON exactly, so a case manifest can carry its world.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import asdict, dataclass, field, replace
from typing import ClassVar

import numpy as np

from worldmemory.common.seeds import stable_rng

FAMILIES = ("human", "object", "environment", "dynamic")
PATTERNS = ("tiles", "stripes", "noise")  # 'face' is the head pattern of people
# The seven state-transition mechanisms of the procedural taxonomy (Section 3.2 counts seven; the
# paper names them only in Figure 2a's image, so these are procedural stand-ins: 'slice', 'erase'
# and 'lift' for the pepper slicing, drawing erasing and deadlift of its Figure 10).
MECHANISMS = ("fill", "move", "lamp", "slice", "erase", "lift", "melt")
DEFAULT_MECHANISMS = MECHANISMS[:3]  # what a world without a category draws (the embedded default)
# Subcategories per family (Figure 2a's outer ring, as far as a procedural world can express them;
# docs/design.md "Case coverage"): generate_world(case_id, family, category) draws a world of one of them.
CATEGORIES = {
    "human": ("single_person", "multi_person"),
    "object": ("single_object", "multi_object", "furniture", "tabletop"),
    "environment": ("indoor_room", "corridor", "hall"),
    "dynamic": MECHANISMS,
}
NAMESPACE = "worldmembench/world"
EVENT_START = (8, 24)  # an event starts during the default 64-frame initial hold (Section 4.5) ...
EVENT_DURATION = (150, 200)  # ... and completes before the default LR-Hold return (frame 267)
LIGHT = np.array([-0.3, -1.0, -0.5]) / np.linalg.norm([-0.3, -1.0, -0.5])  # towards the light
AMBIENT = 0.4
EPS = 1e-6
LIQUIDS = ([0.8, 0.1, 0.1], [0.1, 0.3, 0.8], [0.1, 0.6, 0.2], [0.9, 0.55, 0.1], [0.5, 0.1, 0.6])
LIGHTS = ([1.0, 0.95, 0.6], [1.0, 0.7, 0.3], [0.6, 0.9, 1.0], [1.0, 0.5, 0.8])
BOARDS = ([0.92, 0.92, 0.88], [0.2, 0.3, 0.25], [0.85, 0.85, 0.95])  # a wiped board: white, slate
WATERS = ([0.55, 0.75, 0.95], [0.7, 0.85, 0.9], [0.45, 0.6, 0.8])  # melt water
ACCENTS = {"fill": LIQUIDS, "lamp": LIGHTS, "erase": BOARDS, "melt": WATERS}  # perturb redraws these
LANDMARKS = ("pillar", "cabinet", "painting")
OBJECT_HALF = (0.15, 0.27)  # half-extent (box) or radius (sphere) of an object, metres
FURNITURE_HALF = ((0.3, 0.45, 0.2), (0.55, 0.95, 0.35))  # per-axis half-extents of a wardrobe
TABLETOP_HALF = (0.1, 0.15)  # half-extent (box) or radius (sphere) of a small tabletop object


@dataclass
class Texture:
    """A two-colour procedural pattern.

    kind 'tiles' (checkerboard), 'stripes' or 'noise' (random cell values): colors are the two RGB
    colours in [0, 1], scale the period in metres, angle the pattern's rotation in radians.
    kind 'face' (heads only): colors are (skin, hair), scale is half the eye spacing and angle the
    hairline latitude, both in radians, so each person's face differs (Human Identity, Section 4.4).
    """

    kind: str
    colors: list
    scale: float
    angle: float


@dataclass
class Box:
    lo: list
    hi: list
    texture: Texture


@dataclass
class Sphere:
    """A sphere, or an ellipsoid with semi-axes radius x stretch along (x, y, z): ``perturb``
    stretches spheres, since a silhouette compared up to scale (Eq. 5) cannot tell two spheres
    apart. ``facing`` is the front direction of its texture (where a face looks)."""

    center: list
    radius: float
    texture: Texture
    facing: list = field(default_factory=lambda: [0.0, 0.0, -1.0])
    stretch: list = field(default_factory=lambda: [1.0, 1.0, 1.0])


@dataclass
class Room:
    """The background (instance 0), seen from inside.

    walls: textures of the faces at x = lo, x = hi, y = lo (ceiling), y = hi (floor), z = lo
    (behind the start view), z = hi (ahead); fixtures: boxes that belong to the room.
    """

    lo: list
    hi: list
    walls: list
    fixtures: list = field(default_factory=list)
    instance: int = 0
    target: str = "room"
    kind: ClassVar[str] = "environment"


@dataclass
class Person:
    """A human-like figure: a clothed box body with a sphere head carrying a face pattern."""

    instance: int
    target: str
    torso: Box
    head: Sphere
    kind: ClassVar[str] = "person"


@dataclass
class Thing:
    """A static object. ``size``: the [low, high] half-extents (each a number, or one per axis) a
    fresh sample of its shape draws from (``perturb``); None (omitted from to_dict): OBJECT_HALF."""

    instance: int
    target: str
    shape: Box | Sphere
    size: list | None = None
    kind: ClassVar[str] = "object"


@dataclass
class Event:
    """An object whose state changes with the frame index (Dynamic Memory, Section 4.5).

    mechanism 'fill': a container (shape, a Box) fills from the bottom with liquid of colour
    ``accent``; 'move': the box shape slides by ``travel`` metres; 'lamp': a bulb (shape, a Sphere)
    brightens from its texture's colours to ``accent``; 'slice': the box is cut in two halves
    along x that part until ``travel[0]`` metres apart; 'erase': a drawing (the box's texture)
    fades to the blank board colour ``accent``; 'lift': the box rises by ``travel`` (y up is
    negative); 'melt': a block (the box) shrinks to a fifth of its height while a puddle of colour
    ``accent`` spreads under it. The event runs from frame ``start`` for ``duration`` frames and
    then keeps its final state.
    """

    instance: int
    target: str
    mechanism: str
    shape: Box | Sphere
    start: int
    duration: int
    travel: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    accent: list = field(default_factory=lambda: [0.0, 0.0, 0.0])
    kind: ClassVar[str] = "object"

    def state(self, frame: int) -> dict:
        """Ground-truth state: whether the event has started and its progress in [0, 1]."""
        progress = min(max((frame - self.start) / self.duration, 0.0), 1.0)
        return {"started": frame >= self.start, "progress": progress}

    def primitives(self, frame: int) -> list[Box | Sphere]:
        """The event's shapes as they are at ``frame``."""
        progress = self.state(frame)["progress"]
        shape = self.shape
        if self.mechanism in ("move", "lift"):
            offset = progress * np.asarray(self.travel)
            return [Box((np.asarray(shape.lo) + offset).tolist(),
                        (np.asarray(shape.hi) + offset).tolist(), shape.texture)]
        if self.mechanism == "slice":  # two halves, each moved half the gap outwards
            lo, hi = np.asarray(shape.lo, dtype=float), np.asarray(shape.hi, dtype=float)
            mid, gap = (lo[0] + hi[0]) / 2, progress * self.travel[0] / 2
            return [Box([lo[0] - gap, lo[1], lo[2]], [mid - gap, hi[1], hi[2]], shape.texture),
                    Box([mid + gap, lo[1], lo[2]], [hi[0] + gap, hi[1], hi[2]], shape.texture)]
        if self.mechanism == "erase":  # the drawing's two colours blend to the blank board
            drawn, blank = np.asarray(shape.texture.colors), np.asarray([self.accent, self.accent])
            colors = (1 - progress) * drawn + progress * blank
            return [replace(shape, texture=replace(shape.texture, colors=colors.tolist()))]
        if self.mechanism == "melt":  # the top comes down; a thin puddle spreads on the surface
            lo, hi = np.asarray(shape.lo, dtype=float), np.asarray(shape.hi, dtype=float)
            top = lo[1] + 0.8 * progress * (hi[1] - lo[1])
            block = Box([lo[0], top, lo[2]], hi.tolist(), shape.texture)
            if progress <= 0:
                return [block]
            spread = 0.15 * progress
            water = Texture(shape.texture.kind, [self.accent, (0.85 * np.asarray(self.accent)).tolist()],
                            shape.texture.scale, shape.texture.angle)
            puddle = Box([lo[0] - spread, hi[1] - 0.01, lo[2] - spread],
                         [hi[0] + spread, hi[1], hi[2] + spread], water)
            return [puddle, block]
        if self.mechanism == "lamp":
            off, on = np.asarray(shape.texture.colors), np.asarray(self.accent)
            lit = (1 - progress) * off + progress * on
            texture = Texture(shape.texture.kind, lit.tolist(), shape.texture.scale,
                              shape.texture.angle)
            return [replace(shape, texture=texture)]
        # fill: liquid occupies the bottom (largest y) `progress` fraction of the container
        surface = shape.hi[1] - progress * (shape.hi[1] - shape.lo[1])
        shades = [self.accent, (0.7 * np.asarray(self.accent)).tolist()]
        liquid = Texture(shape.texture.kind, shades, shape.texture.scale, shape.texture.angle)
        empty = Box(shape.lo, [shape.hi[0], surface, shape.hi[2]], shape.texture)
        full = Box([shape.lo[0], surface, shape.lo[2]], shape.hi, liquid)
        return [box for box in (empty, full) if box.hi[1] > box.lo[1]]


@dataclass
class World:
    """``category``: the subcategory it was drawn as (CATEGORIES); None (omitted from to_dict) for
    a world drawn without one, whose category cases.py reads off its content."""

    family: str
    room: Room
    people: list = field(default_factory=list)
    objects: list = field(default_factory=list)
    events: list = field(default_factory=list)
    category: str | None = None

    def entities(self) -> list:
        """Room, people, objects and events, each with ``instance``, ``target`` and ``kind``."""
        return [self.room, *self.people, *self.objects, *self.events]

    def entity(self, instance: int):
        for e in self.entities():
            if e.instance == instance:
                return e
        raise ValueError(f"no entity with instance id {instance}")

    def to_dict(self) -> dict:
        """Plain JSON data; optional fields that are None are left out (so worlds without them
        serialise as before they existed)."""
        d = asdict(self)
        if d["category"] is None:
            del d["category"]
        for o in d["objects"]:
            if o["size"] is None:
                del o["size"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> World:
        room = d["room"]
        return cls(
            family=d["family"],
            room=Room(**{**room, "walls": [Texture(**t) for t in room["walls"]],
                         "fixtures": [_shape(b) for b in room["fixtures"]]}),
            people=[Person(p["instance"], p["target"], _shape(p["torso"]), _shape(p["head"]))
                    for p in d["people"]],
            objects=[Thing(o["instance"], o["target"], _shape(o["shape"]), o.get("size"))
                     for o in d["objects"]],
            events=[Event(**{**e, "shape": _shape(e["shape"])}) for e in d["events"]],
            category=d.get("category"),
        )


def _shape(d: dict) -> Box | Sphere:
    d = {**d, "texture": Texture(**d["texture"])}
    return Box(**d) if "lo" in d else Sphere(**d)


# ---------------------------------------------------------------------------------------------
# Rendering


def render(world: World, c2w, K, width: int, height: int, frame: int = 0) -> dict:
    """Ray-cast one view: {'rgb' uint8 (H, W, 3), 'depth' float32 z-depth (H, W), 'instance'
    int32 (H, W)}.

    Rays go through pixel centres (u + 0.5, v + 0.5) and K^-1; they are not normalised, so the ray
    parameter of a hit is its z-depth. Each pixel takes the nearest hit over all primitives and is
    shaded as texture colour x Lambert (fixed light, ambient floor), vectorised over pixels.
    """
    c2w = np.asarray(c2w, dtype=float)
    K = np.asarray(K, dtype=float)
    dirs = _camera_rays(K.tobytes(), K.shape, width, height) @ c2w[:3, :3].T
    out = _cast(world, c2w[:3, 3], dirs, frame)
    return {
        "rgb": out["rgb"].reshape(height, width, 3),
        "depth": out["depth"].astype(np.float32).reshape(height, width),
        "instance": out["instance"].reshape(height, width),
    }


@functools.lru_cache(maxsize=16)
def _camera_rays(K_bytes: bytes, shape: tuple, width: int, height: int) -> np.ndarray:
    """Pixel-centre rays in camera coordinates, (u + 0.5, v + 0.5, 1) K^-T (N, 3), read-only:
    the same for every frame of a video, so made once per intrinsics and image size."""
    K = np.frombuffer(K_bytes).reshape(shape)
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    pixels = np.stack([u.ravel(), v.ravel(), np.ones(u.size)], axis=1)
    rays = pixels @ np.linalg.inv(K).T
    rays.flags.writeable = False
    return rays


def render_rays(world: World, origins, directions, frame: int = 0) -> dict:
    """Ray-cast arbitrary rays: {'rgb' uint8 (N, 3), 'depth' float64 (N,), 'instance' int32 (N,)}.

    ``origins`` is one point (3,) shared by all rays (a camera centre) or one per ray (N, 3), each
    inside the room; ``directions`` (N, 3) need not be unit vectors (they are normalised here), so
    'depth' is the Euclidean distance along the ray, not a z-depth. Shading as in ``render``.
    """
    dirs = np.asarray(directions, dtype=float)
    dirs = dirs / np.linalg.norm(dirs, axis=-1, keepdims=True)
    return _cast(world, np.asarray(origins, dtype=float), dirs, frame)


def _cast(world: World, origin, dirs, frame: int) -> dict:
    """Nearest hit and shading of the rays origin + t dirs; 'depth' is the ray parameter t.

    Boxes work on transposed (3, N) copies of the rays, one contiguous row per axis, which numpy
    runs several times faster than the columns of (N, 3) arrays; every number is the same
    elementwise expression either way. Spheres keep the (N, 3) rows of their dot products.
    """
    lo, hi = np.asarray(world.room.lo), np.asarray(world.room.hi)
    if not np.all((lo < origin) & (origin < hi)):
        raise ValueError(f"camera centre {origin} must be inside the room {lo}..{hi}")
    prims = _primitives(world, frame)
    dirs_t = np.ascontiguousarray(dirs.T)
    origin_t = origin[:, None] if origin.ndim == 1 else np.ascontiguousarray(origin.T)
    inv = np.where(dirs_t == 0, 1e-12, dirs_t)
    np.divide(1.0, inv, out=inv)  # inverse directions, shared by every box's slab test
    depth = _slabs(lo, hi, origin_t, inv)[1]  # the room is hit from inside, where the ray exits
    owner = np.zeros(len(dirs), dtype=np.intp)  # 0: the room, i: prims[i - 1]
    for i, (shape, _) in enumerate(prims, start=1):
        if isinstance(shape, Box):
            t, far = _slabs(np.asarray(shape.lo), np.asarray(shape.hi), origin_t, inv)
            closer = (t <= far) & (t > EPS) & (t < depth)  # a hit, and nearer
        else:
            t = _hit_sphere(shape, origin, dirs)
            closer = t < depth
        np.copyto(depth, t, where=closer)
        np.copyto(owner, i, where=closer)

    points = origin_t + depth * dirs_t
    rgb = _shade_boxes(world.room, [shape for shape, _ in prims], owner, points)
    for i, (shape, _) in enumerate(prims, start=1):
        if isinstance(shape, Sphere):
            sel = np.flatnonzero(owner == i)
            rgb[:, sel] = _shade_sphere(shape, np.ascontiguousarray(points[:, sel].T)).T
    np.clip(rgb, 0, 1, out=rgb)
    rgb *= 255
    rgb = np.round(rgb, out=rgb).astype(np.uint8)
    instance = np.array([0, *(inst for _, inst in prims)], dtype=np.int32)[owner]
    return {"rgb": np.ascontiguousarray(rgb.T), "depth": depth, "instance": instance}


def clearance(world: World, points, frame: int = 0) -> np.ndarray:
    """Distance (N,) from each of ``points`` (N, 3) inside the room to the nearest surface at
    ``frame``: the walls, every box, and every sphere's bounding sphere (its radius times its
    largest stretch, so never more than the true distance). 0 inside a shape or outside the room."""
    points = np.atleast_2d(np.asarray(points, dtype=float))
    lo, hi = np.asarray(world.room.lo), np.asarray(world.room.hi)
    nearest = np.clip(np.minimum(points - lo, hi - points).min(axis=1), 0.0, None)
    for shape, _ in _primitives(world, frame):
        if isinstance(shape, Box):
            outside = np.maximum(np.maximum(np.asarray(shape.lo) - points, points - np.asarray(shape.hi)), 0.0)
            gap = np.linalg.norm(outside, axis=1)
        else:
            bound = shape.radius * max(shape.stretch)
            gap = np.clip(np.linalg.norm(points - np.asarray(shape.center), axis=1) - bound, 0.0, None)
        nearest = np.minimum(nearest, gap)
    return nearest


def _primitives(world: World, frame: int) -> list[tuple[Box | Sphere, int]]:
    prims = [(box, 0) for box in world.room.fixtures]
    for p in world.people:
        prims += [(p.torso, p.instance), (p.head, p.instance)]
    prims += [(o.shape, o.instance) for o in world.objects]
    for e in world.events:
        prims += [(shape, e.instance) for shape in e.primitives(frame)]
    return prims


def _slabs(lo, hi, origin, inv) -> tuple[np.ndarray, np.ndarray]:
    """Ray parameters where each ray enters and leaves the box (slab method); ``origin`` (3, 1)
    or (3, N) and ``inv``, the rays' inverse directions (3, N), hold one axis per row. The axes
    are combined pairwise: the same numbers as a max / min over the rows, and faster."""
    for a in range(3):  # one axis at a time: a few (N,) arrays in memory, not (3, N) ones
        t1 = (lo[a] - origin[a]) * inv[a]
        t2 = (hi[a] - origin[a]) * inv[a]
        if a == 0:
            near, far = np.minimum(t1, t2), np.maximum(t1, t2)
        else:
            np.maximum(near, np.minimum(t1, t2), out=near)
            np.minimum(far, np.maximum(t1, t2), out=far)
    return near, far


def _hit_sphere(sphere: Sphere, origin, dirs) -> np.ndarray:
    """Nearest hit with the ellipsoid, solved for the unit sphere in coordinates divided by its
    semi-axes (a per-axis scaling leaves the ray parameter, the z-depth, unchanged)."""
    axes = sphere.radius * np.asarray(sphere.stretch)
    oc = (origin - np.asarray(sphere.center)) / axes
    dirs = dirs / axes
    a = np.einsum("ij,ij->i", dirs, dirs)
    if oc.ndim == 1:  # one origin for all rays
        half_b, c = dirs @ oc, oc @ oc - 1.0
    else:  # one origin per ray
        half_b, c = np.einsum("ij,ij->i", dirs, oc), np.einsum("ij,ij->i", oc, oc) - 1.0
    disc = half_b**2 - a * c
    t = (-half_b - np.sqrt(np.maximum(disc, 0))) / a
    return np.where((disc >= 0) & (t > EPS), t, np.inf)


def _box_face(centre, half, lo, points) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Face axis (0..2) and side (+1 at hi, -1 at lo) of points (3, n) on boxes given by their
    centres (lo + hi) / 2, half-sizes (hi - lo) / 2 and lo corners (each (3, n), one per point),
    and their 2D face coordinates u, v (metres from lo along the other two axes, in order)."""
    rel = points - centre
    rel /= half
    size = np.abs(rel)
    if np.isnan(size.sum()):  # a degenerate box: argmax's rule, under which a NaN wins
        axis = size.argmax(axis=0)
        face = rel[axis, np.arange(len(axis))]
    else:  # the same rule (first of the largest) row by row, cheaper than a reduction over rows
        second = size[1] > size[0]
        third = size[2] > np.maximum(size[0], size[1])
        axis = np.where(third, 2, second)
        face = np.where(third, rel[2], np.where(second, rel[1], rel[0]))
    q = points - lo
    return axis, np.sign(face), np.where(axis == 0, q[1], q[0]), np.where(axis == 2, q[1], q[2])


def _lambert(normals) -> np.ndarray:
    return (AMBIENT + (1 - AMBIENT) * np.clip(normals @ LIGHT, 0, None))[:, None]


def _face_lambert(axis, sign) -> np.ndarray:
    """``_lambert`` (n,) of the normals sign x (unit vector along axis), without building them:
    their dot product with LIGHT is exactly sign x LIGHT[axis], the other terms being zeros."""
    return AMBIENT + (1 - AMBIENT) * np.maximum(sign * LIGHT[axis], 0)


def _shade_boxes(room: Room, shapes: list, owner, points) -> np.ndarray:
    """Shaded colours (3, N) of points (3, N) on the faces of their owners (0: the room, seen
    from inside, i: shapes[i - 1]), in one vectorised pass in which each point gathers its box's
    corners and its face's texture from small tables. Points owned by a sphere are shaded as if
    on the room, for the caller to overwrite."""
    boxes = [room, *(s if isinstance(s, Box) else room for s in shapes)]
    lo = np.array([b.lo for b in boxes], dtype=float).T  # (3, boxes)
    hi = np.array([b.hi for b in boxes], dtype=float).T
    centre, half, lo = (a.take(owner, axis=1) for a in ((lo + hi) / 2, (hi - lo) / 2, lo))
    axis, side, u, v = _box_face(centre, half, lo, points)
    walls = 2 * axis + (side > 0)
    textures = [*room.walls, *(s.texture if isinstance(s, Box) else room.walls[0] for s in shapes)]
    rgb = _patterns(textures, np.where(owner == 0, walls, owner + 5), u, v)
    facing = np.array([-1.0] + [1.0] * len(shapes))  # walls face into the room
    rgb *= _face_lambert(axis, facing[owner] * side)
    return rgb


def _shade_sphere(shape: Sphere, points) -> np.ndarray:
    """Shaded colours (n, 3) of points (n, 3) on the sphere (or ellipsoid)."""
    axes = shape.radius * np.asarray(shape.stretch)
    unit = (points - np.asarray(shape.center)) / axes  # on the unit sphere: texture coordinates
    normals = unit / axes
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    front = np.asarray(shape.facing, dtype=float)
    up = np.array([0.0, -1.0, 0.0])
    right = np.cross(up, front)
    lon = np.arctan2(unit @ right, unit @ front)
    lat = np.arcsin(np.clip(unit @ up, -1, 1))
    if shape.texture.kind == "face":
        colors = _face(shape.texture, lon, lat)
    else:
        colors = _pattern(shape.texture, lon * shape.radius, lat * shape.radius)
    return colors * _lambert(normals)


def _pattern(texture: Texture, a, b) -> np.ndarray:
    """Colours (n, 3) of a 2D pattern at surface coordinates (a, b) in metres."""
    c, s = np.cos(texture.angle), np.sin(texture.angle)
    weight = _weight(texture.kind, *_cells(a, b, c, s, texture.scale))
    c0, c1 = np.asarray(texture.colors, dtype=float)
    return c0 + weight[:, None] * (c1 - c0)


def _patterns(textures: list, which, a, b) -> np.ndarray:
    """Colours (3, n) of the patterns textures[which] (one per point) at (a, b): ``_pattern`` of
    many textures at once, each point gathering its texture's numbers from small tables."""
    cos = np.array([np.cos(t.angle) for t in textures])[which]  # the scalar calls of _pattern
    sin = np.array([np.sin(t.angle) for t in textures])[which]
    x, y = _cells(a, b, cos, sin, np.array([t.scale for t in textures], dtype=float)[which])
    kind = np.array([{"tiles": 0, "stripes": 1}.get(t.kind, 2) for t in textures])[which]
    weight = _mod2(np.where(kind == 0, x + y, x))  # as _weight: tiles, stripes ...
    noise = np.flatnonzero(kind == 2)  # ... and any other kind
    weight[noise] = _hash01(x[noise], y[noise])
    c0, c1 = np.array([t.colors for t in textures], dtype=float).transpose(1, 2, 0)
    out = np.empty((3, len(which)))
    for k in range(3):
        np.add(c0[k][which], weight * (c1[k] - c0[k])[which], out=out[k])
    return out


def _cells(a, b, c, s, scale) -> tuple[np.ndarray, np.ndarray]:
    """Pattern cell (x, y) of surface coordinates (a, b), rotated by (cos, sin) = (c, s)."""
    return np.floor((c * a + s * b) / scale), np.floor((c * b - s * a) / scale)


def _weight(kind: str, x, y) -> np.ndarray:
    """Blend weight in [0, 1] between a pattern's two colours in cell (x, y)."""
    if kind == "tiles":
        return _mod2(x + y)
    if kind == "stripes":
        return _mod2(x)
    return _hash01(x, y)


def _mod2(x) -> np.ndarray:
    """x % 2 of integer-valued floats: x - 2 floor(x / 2) is exact for them (the same numbers)
    and several times faster than np.remainder."""
    return x - 2 * np.floor(x / 2)


def _hash01(x, y) -> np.ndarray:
    """Deterministic pseudo-random value in [0, 1] per integer cell (x, y)."""
    ix, iy = (c.astype(np.int64).view(np.uint64) for c in (x, y))  # negatives wrap around
    h = ix * 73856093 ^ iy * 19349663
    h = (h ^ (h >> 13)) * 1274126177
    return ((h ^ (h >> 16)) & 0xFFFF) / 0xFFFF


def _face(texture: Texture, lon, lat) -> np.ndarray:
    """Skin with two eyes and a mouth on the front hemisphere, hair above the hairline and at
    the back; eyes and mouth are a darkened hair colour."""
    skin, hair = np.asarray(texture.colors, dtype=float)
    front = np.abs(lon) < np.pi / 2
    eyes = (np.abs(lon) - texture.scale) ** 2 + (lat - 0.15) ** 2 < 0.11**2
    mouth = (np.abs(lon) < 0.3) & (np.abs(lat + 0.4) < 0.06)
    colors = np.where((lat > texture.angle)[:, None] | ~front[:, None], hair, skin)
    return np.where((front & (eyes | mouth))[:, None], 0.4 * hair, colors)


# ---------------------------------------------------------------------------------------------
# Generation


def generate_world(case_id: str, family: str, category: str | None = None) -> World:
    """A random world of one case family, deterministic in (case_id, family, category) (Section 3.2).

    'human': 1-2 people facing the camera; 'object': 1-3 textured boxes or spheres on pedestals;
    'environment': a room with 3-5 landmarks (pillars, cabinets, paintings) at varied depths;
    'dynamic': one event ('fill', 'move' or 'lamp') on a table, in view at frame 0, that starts
    during the initial hold. Everything is placed in the view of a 60 degree horizontal FoV camera
    at the origin looking along +z, for the aspect ratios of Appendix C.

    ``category`` (one of CATEGORIES[family]) draws a world of that subcategory instead
    (``_category_world``) and records it in ``World.category``; None keeps the draws above, which
    the embedded default's cases are made of.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    if category is not None and category not in CATEGORIES[family]:
        raise ValueError(f"unknown {family} category {category!r}; valid: {', '.join(CATEGORIES[family])}")
    rng = stable_rng(case_id, f"{NAMESPACE}/{family}")
    if category is not None:
        return _category_world(rng, family, category)
    room = Room(*_room_bounds(rng), [_random_texture(rng, rng.choice(PATTERNS)) for _ in range(6)])
    world = World(family, room)
    floor = room.hi[1]
    if family == "human":
        n = int(rng.integers(1, 3))
        for i, x in enumerate([0.0] if n == 1 else [-0.55, 0.55]):
            world.people.append(_random_person(rng, i + 1, f"person_{i}", x, floor))
    elif family == "object":
        _objects_on_pedestals(rng, world, int(rng.integers(1, 4)))
    elif family == "environment":
        room.fixtures += [_random_landmark(rng, room) for _ in range(int(rng.integers(3, 6)))]
    else:
        event, table = _random_event(rng, floor)
        world.events.append(event)
        room.fixtures.append(table)
    return world


def _category_world(rng, family: str, category: str) -> World:
    """A world of one subcategory (CATEGORIES). Human: one or two people ('single_person',
    'multi_person'). Object: as the family draws them but with one or two-three objects
    ('single_object', 'multi_object'); a wardrobe standing on the floor ('furniture'); two or
    three small boxes or spheres on a table ('tabletop'). Environment: a room ('indoor_room'), a
    long narrow corridor with landmarks along it ('corridor'), a large high hall with 6-8
    landmarks ('hall'). Dynamic: one event of that mechanism (MECHANISMS) on a table."""
    lo, hi = _room_bounds(rng)
    if category == "corridor":
        half = rng.uniform(1.5, 1.9)
        lo[0], hi[0], hi[2] = -half, half, rng.uniform(9.0, 12.0)
    elif category == "hall":
        lo[0], hi[0] = -rng.uniform(5.0, 7.0), rng.uniform(5.0, 7.0)
        lo[1], hi[2] = -rng.uniform(2.2, 3.0), rng.uniform(9.0, 12.0)
    room = Room(_r(lo), _r(hi), [_random_texture(rng, rng.choice(PATTERNS)) for _ in range(6)])
    world = World(family, room, category=category)
    floor = room.hi[1]
    if family == "human":
        for i, x in enumerate([0.0] if category == "single_person" else [-0.55, 0.55]):
            world.people.append(_random_person(rng, i + 1, f"person_{i}", x, floor))
    elif category in ("single_object", "multi_object"):
        _objects_on_pedestals(rng, world, 1 if category == "single_object" else int(rng.integers(2, 4)))
    elif category == "furniture":
        x, z = rng.uniform(-0.5, 0.5), rng.uniform(3.5, 4.5)
        half = rng.uniform(*FURNITURE_HALF)
        shape = Box(_r([x - half[0], floor - 2 * half[1], z - half[2]]), _r([x + half[0], floor, z + half[2]]),
                    _random_texture(rng, rng.choice(PATTERNS)))
        world.objects.append(Thing(1, "object_0", shape, [list(FURNITURE_HALF[0]), list(FURNITURE_HALF[1])]))
    elif category == "tabletop":
        z, top = rng.uniform(2.4, 3.0), rng.uniform(0.35, 0.55)
        room.fixtures.append(Box(_r([-1.0, top, z - 0.35]), _r([1.0, floor, z + 0.35]),
                                 _random_texture(rng, rng.choice(PATTERNS))))
        slots = np.sort(rng.choice([-0.5, 0.0, 0.5], size=int(rng.integers(2, 4)), replace=False))
        for i, x in enumerate(slots):
            x, texture = x + rng.uniform(-0.05, 0.05), _random_texture(rng, rng.choice(PATTERNS))
            if rng.random() < 0.5:
                half = rng.uniform(*TABLETOP_HALF, 3)
                shape = _box_on(x, top, z, half, texture)
            else:
                radius = rng.uniform(*TABLETOP_HALF)
                shape = Sphere(_r([x, top - radius, z]), _r(radius), texture)
            world.objects.append(Thing(i + 1, f"object_{i}", shape, list(TABLETOP_HALF)))
    elif family == "environment":
        n = {"indoor_room": (3, 6), "corridor": (4, 7), "hall": (6, 9)}[category]
        room.fixtures += [_random_landmark(rng, room) for _ in range(int(rng.integers(*n)))]
    else:
        event, table = _random_event(rng, floor, category)
        world.events.append(event)
        room.fixtures.append(table)
    return world


def _r(x):
    """Values rounded to 4 decimals as plain Python floats, so JSON round trips are exact."""
    return np.round(np.asarray(x, dtype=float), 4).tolist()


def _room_bounds(rng) -> tuple[list, list]:
    """Walls around the camera at the origin: lo and hi corners of the room."""
    lo = [-rng.uniform(2.5, 4.5), -rng.uniform(1.0, 1.6), -rng.uniform(2.0, 4.0)]
    hi = [rng.uniform(2.5, 4.5), rng.uniform(1.3, 1.7), rng.uniform(5.5, 9.0)]
    return _r(lo), _r(hi)


def _random_texture(rng: np.random.Generator, kind: str) -> Texture:
    if kind == "face":
        skin = rng.uniform([0.45, 0.3, 0.2], [0.95, 0.8, 0.7])
        hair = rng.uniform(0.05, 0.6, 3)
        return Texture("face", _r([skin, hair]), _r(rng.uniform(0.25, 0.45)),
                       _r(rng.uniform(0.35, 0.7)))
    c0 = rng.uniform(0.1, 0.9, 3)
    c1 = np.clip(c0 + rng.uniform(-0.4, 0.4, 3), 0, 1)
    return Texture(str(kind), _r([c0, c1]), _r(rng.uniform(0.08, 0.5)), _r(rng.uniform(0, np.pi)))


def _random_person(rng, instance: int, target: str, x: float, floor: float) -> Person:
    x += rng.uniform(-0.1, 0.1)
    z = rng.uniform(2.2, 3.2)
    lo, hi, head_y, radius = _person_build(rng, x, z, floor)
    torso = Box(_r(lo), _r(hi), _random_texture(rng, rng.choice(PATTERNS)))
    facing = -np.array([x, 0.0, z]) / np.hypot(x, z)  # looks at the camera
    head = Sphere(_r([x, head_y, z]), _r(radius), _random_texture(rng, "face"), _r(facing))
    return Person(instance, target, torso, head)


def _person_build(rng, x: float, z: float, floor: float) -> tuple[list, list, float, float]:
    """Proportions of a person standing on the floor at (x, z): torso corners, head centre
    height and head radius."""
    height, radius = rng.uniform(1.6, 1.85), rng.uniform(0.11, 0.14)
    half_width, half_depth = rng.uniform(0.2, 0.27), 0.13
    head_y = floor - height + radius
    return ([x - half_width, head_y + 0.8 * radius, z - half_depth],
            [x + half_width, floor, z + half_depth], head_y, radius)


def _pedestal(rng, x: float, z: float, top: float, floor: float, half: float) -> Box:
    return Box(_r([x - half, top, z - half]), _r([x + half, floor, z + half]),
               _random_texture(rng, rng.choice(PATTERNS)))


def _box_on(x: float, top: float, z: float, half, texture: Texture) -> Box:
    """A box centred at (x, z) with its top face at height ``top`` (y down) and half-extents
    ``half`` (x, y, z)."""
    return Box(_r([x - half[0], top - 2 * half[1], z - half[2]]), _r([x + half[0], top, z + half[2]]), texture)


def _objects_on_pedestals(rng, world: World, n: int) -> None:
    """``n`` objects on pedestals in distinct slots of x -0.9, 0, 0.9, left to right."""
    floor = world.room.hi[1]
    for i, x in enumerate(np.sort(rng.choice([-0.9, 0.0, 0.9], size=n, replace=False))):
        shape, pedestal = _random_object(rng, x, floor)
        world.objects.append(Thing(i + 1, f"object_{i}", shape))
        world.room.fixtures.append(pedestal)


def _random_object(rng, x: float, floor: float) -> tuple[Box | Sphere, Box]:
    """A box or sphere resting on a pedestal whose top is a little below eye level."""
    x += rng.uniform(-0.1, 0.1)
    z, top = rng.uniform(2.6, 3.6), rng.uniform(0.2, 0.5)
    texture = _random_texture(rng, rng.choice(PATTERNS))
    if rng.random() < 0.5:
        half = rng.uniform(*OBJECT_HALF, 3)
        shape = _box_on(x, top, z, half, texture)
    else:
        radius = rng.uniform(*OBJECT_HALF)
        shape = Sphere(_r([x, top - radius, z]), _r(radius), texture)
    return shape, _pedestal(rng, x, z, top, floor, 0.12)


def _random_landmark(rng, room: Room, kind: str | None = None, left: bool | None = None) -> Box:
    """A pillar on a side wall, a cabinet against the far wall or a painting on it; ``kind`` and,
    for a pillar, ``left`` (on the wall at x = lo) are drawn unless given."""
    (x0, y0, _z0), (x1, y1, z1) = room.lo, room.hi
    kind = kind or rng.choice(LANDMARKS)
    if kind == "pillar":
        z, half, depth = rng.uniform(1.0, z1 - 0.5), rng.uniform(0.2, 0.5), rng.uniform(0.3, 0.8)
        left = rng.random() < 0.5 if left is None else left
        x = (x0, x0 + depth) if left else (x1 - depth, x1)
        lo, hi = [x[0], y0, z - half], [x[1], y1, z + half]
    elif kind == "cabinet":
        x, half = rng.uniform(x0 + 0.8, x1 - 0.8), rng.uniform(0.3, 0.8)
        top, depth = y1 - rng.uniform(0.8, 2.2), rng.uniform(0.4, 1.2)
        lo, hi = [x - half, top, z1 - depth], [x + half, y1, z1]
    else:
        x, y = rng.uniform(x0 + 1.0, x1 - 1.0), rng.uniform(-0.6, 0.4)
        w, h = rng.uniform(0.3, 0.75), rng.uniform(0.2, 0.5)
        lo, hi = [x - w, y - h, z1 - 0.05], [x + w, y + h, z1]
    return Box(_r(lo), _r(hi), _random_texture(rng, rng.choice(PATTERNS)))


def _random_event(rng, floor: float, mechanism: str | None = None) -> tuple[Event, Box]:
    """One dynamic event on a table in front of the camera (Section 4.5), of ``mechanism`` or, when
    None, one of DEFAULT_MECHANISMS drawn."""
    mechanism = str(rng.choice(DEFAULT_MECHANISMS)) if mechanism is None else mechanism
    z, top = rng.uniform(2.4, 3.2), rng.uniform(0.35, 0.55)
    table = Box(_r([-1.0, top, z - 0.35]), _r([1.0, floor, z + 0.35]),
                _random_texture(rng, rng.choice(PATTERNS)))
    start, duration = int(rng.integers(*EVENT_START)), int(rng.integers(*EVENT_DURATION))
    texture = _random_texture(rng, rng.choice(PATTERNS))
    kwargs = {}
    if mechanism == "fill":
        x, half, height = rng.uniform(-0.4, 0.4), rng.uniform(0.15, 0.2), rng.uniform(0.4, 0.55)
        shape = Box(_r([x - half, top - height, z - half]), _r([x + half, top, z + half]), texture)
        kwargs["accent"] = LIQUIDS[rng.integers(len(LIQUIDS))]
    elif mechanism == "move":
        half = rng.uniform(0.12, 0.17)
        shape = Box(_r([-0.6 - half, top - 2 * half, z - half]), _r([-0.6 + half, top, z + half]),
                    texture)
        kwargs["travel"] = [1.2, 0.0, 0.0]
    elif mechanism == "slice":  # a loaf cut in two; the halves part by 35 cm
        x, half = rng.uniform(-0.3, 0.3), rng.uniform([0.15, 0.08, 0.1], [0.22, 0.12, 0.14])
        shape = _box_on(x, top, z, half, texture)
        kwargs["travel"] = [0.35, 0.0, 0.0]
    elif mechanism == "erase":  # a board facing the camera whose drawing is wiped off
        x, half, height = rng.uniform(-0.3, 0.3), rng.uniform(0.25, 0.35), rng.uniform(0.35, 0.5)
        shape = Box(_r([x - half, top - height, z - 0.02]), _r([x + half, top, z + 0.02]), texture)
        kwargs["accent"] = BOARDS[rng.integers(len(BOARDS))]
    elif mechanism == "lift":  # a bar lifted 60 cm off the table
        x, half = rng.uniform(-0.3, 0.3), rng.uniform([0.25, 0.05, 0.08], [0.35, 0.08, 0.12])
        shape = _box_on(x, top, z, half, texture)
        kwargs["travel"] = [0.0, -0.6, 0.0]
    elif mechanism == "melt":  # a block of ice that melts into a puddle
        x, half = rng.uniform(-0.4, 0.4), rng.uniform(0.12, 0.18, 3)
        shape = _box_on(x, top, z, half, texture)
        kwargs["accent"] = WATERS[rng.integers(len(WATERS))]
    elif mechanism == "lamp":
        radius = rng.uniform(0.15, 0.22)
        texture.colors = _r(0.3 * np.asarray(texture.colors))  # switched off: dark
        shape = Sphere(_r([rng.uniform(-0.4, 0.4), top - radius, z]), _r(radius), texture)
        kwargs["accent"] = LIGHTS[rng.integers(len(LIGHTS))]
    else:
        raise ValueError(f"unknown mechanism {mechanism!r}; valid: {', '.join(MECHANISMS)}")
    event = Event(1, f"{mechanism}_event", mechanism, shape, start, duration,
                  **{k: list(v) for k, v in kwargs.items()})
    return event, table


# ---------------------------------------------------------------------------------------------
# Perturbation (reference models that forget)


def perturb(world: World, entity_ids, amount: float, rng: np.random.Generator,
            reshape: bool = True) -> World:
    """A copy of ``world`` whose given entities (instance ids) have changed appearance and shape.

    Each entity moves a fraction ``amount`` of the way to a freshly sampled version of itself,
    linearly, so a change grows monotonically with ``amount``: 0 leaves the world identical (bit
    for bit), 1 re-samples it outright. Appearance: every texture (and an event's accent colour)
    blends towards a fresh one of the same kind. Shape (``_reshape``): objects, event objects and
    people get fresh proportions where they stand, the room fresh wall distances and wall
    fixtures. Shapes change anisotropically and the room non-uniformly, because the geometry
    metrics discount a uniform scale (Eq. 5 compares silhouettes up to scale, Depth Spearman
    ranks, Eq. 6 removes the median log-depth): a model that forgets must fail them too. Used by
    reference models that re-sample an entity on return ('amnesic') or drift with time out of
    view ('drifting'), the failures Static Memory scores (Section 4.4). ``reshape=False`` changes
    appearance only (same draws), for tests that separate appearance from geometry metrics.
    """
    if not 0 <= amount <= 1:
        raise ValueError(f"amount must be in [0, 1], got {amount}")
    out = copy.deepcopy(world)
    for instance in entity_ids:
        entity = out.entity(instance)
        if amount == 0:  # identical bit for bit (linear blends could flip the sign of a zero)
            continue
        for owner in _textured(entity):
            owner.texture = _blend(owner.texture, _random_texture(rng, owner.texture.kind), amount)
        if isinstance(entity, Room):
            entity.walls = [_blend(t, _random_texture(rng, t.kind), amount) for t in entity.walls]
        if isinstance(entity, Event) and entity.mechanism in ACCENTS:
            palette = ACCENTS[entity.mechanism]
            fresh = np.asarray(palette[rng.integers(len(palette))])
            entity.accent = _mix(entity.accent, fresh, amount)
        if reshape:
            _reshape(entity, amount, rng)
    return out


def _textured(entity) -> list[Box | Sphere]:
    if isinstance(entity, Room):
        return list(entity.fixtures)
    if isinstance(entity, Person):
        return [entity.torso, entity.head]
    return [entity.shape]


def _mix(a, b, amount: float) -> list:
    return ((1 - amount) * np.asarray(a, dtype=float) + amount * np.asarray(b)).tolist()


def _blend(old: Texture, new: Texture, amount: float) -> Texture:
    return Texture(old.kind, _mix(old.colors, new.colors, amount),
                   _mix(old.scale, new.scale, amount), _mix(old.angle, new.angle, amount))


def _mix_shape(old: Box | Sphere, new: Box | Sphere, amount: float) -> Box | Sphere:
    """``old`` moved a fraction ``amount`` of the way to ``new`` (corners, or centre and stretch,
    interpolated linearly; texture and radius kept). A contact shared by both, such as the
    bottom an object rests on, is kept at every amount."""
    if isinstance(old, Box):
        return replace(old, lo=_mix(old.lo, new.lo, amount), hi=_mix(old.hi, new.hi, amount))
    return replace(old, center=_mix(old.center, new.center, amount),
                   stretch=_mix(old.stretch, new.stretch, amount))


def _reshape(entity, amount: float, rng) -> None:
    """Move the entity's geometry a fraction ``amount`` of the way to a fresh sample (in place).

    Object or event object: half-extents (box) or semi-axes (sphere, which becomes an
    ellipsoid) drawn independently per axis from the objects' range (a Thing's own ``size``), resting on the same spot
    (same bottom, same centre in x and z), so it neither floats nor sinks into its pedestal or
    table and an event keeps its mechanics. Person: fresh height, width and head size, standing
    on the same spot. Room: ``_fresh_room``.
    """
    if isinstance(entity, Room):
        fresh = _fresh_room(entity, rng)
        entity.fixtures = [_mix_shape(old, new, amount)
                           for old, new in zip(entity.fixtures, fresh.fixtures)]
        entity.lo, entity.hi = _mix(entity.lo, fresh.lo, amount), _mix(entity.hi, fresh.hi, amount)
    elif isinstance(entity, Person):
        torso, head = entity.torso, entity.head
        x, z = head.center[0], head.center[2]
        lo, hi, head_y, radius = _person_build(rng, x, z, torso.hi[1])
        entity.torso = _mix_shape(torso, replace(torso, lo=lo, hi=hi), amount)
        fresh = replace(head, center=[x, head_y, z], stretch=[radius / head.radius] * 3)
        entity.head = _mix_shape(head, fresh, amount)
    else:
        size = getattr(entity, "size", None) or OBJECT_HALF
        fresh = _resting(entity.shape, rng.uniform(*size, 3))
        entity.shape = _mix_shape(entity.shape, fresh, amount)


def _resting(shape: Box | Sphere, half) -> Box | Sphere:
    """``shape`` with half-extents / semi-axes ``half`` on the same bottom (largest y) and with
    the same centre in x and z."""
    if isinstance(shape, Box):
        lo, hi = np.asarray(shape.lo), np.asarray(shape.hi)
        centre = np.array([(lo[0] + hi[0]) / 2, hi[1] - half[1], (lo[2] + hi[2]) / 2])
        return replace(shape, lo=(centre - half).tolist(), hi=(centre + half).tolist())
    bottom = shape.center[1] + shape.radius * shape.stretch[1]
    return replace(shape, center=[shape.center[0], bottom - half[1], shape.center[2]],
                   stretch=(np.asarray(half) / shape.radius).tolist())


def _fresh_room(room: Room, rng) -> Room:
    """The room re-sampled in geometry: fresh wall distances, each drawn on its own (a change no
    uniform scale undoes), the floor kept so that whatever stands on it stays put, and every
    landmark drawn afresh as one of its kind (a pillar on the same side) in the new room, so it
    moves nearer or farther and changes size. A fixture that touches only the floor (pedestal,
    table) may carry an object or event and is kept. Mixing old and fresh stays safe: each
    landmark is a convex combination of two that keep clear of the camera and the entities.
    """
    lo, hi = _room_bounds(rng)
    fresh = replace(room, lo=lo, hi=[hi[0], room.hi[1], hi[2]], fixtures=[])
    for box in room.fixtures:
        landmark = _landmark(box, room)
        if landmark is not None:
            box = replace(_random_landmark(rng, fresh, *landmark), texture=box.texture)
        fresh.fixtures.append(box)
    return fresh


def _landmark(box: Box, room: Room) -> tuple[str, bool | None] | None:
    """Kind and, for a pillar, side (True: on the wall at x = lo) of a fixture made by
    _random_landmark, read off the walls it touches; None for one that touches only the floor."""
    at_lo, at_hi = np.isclose(box.lo, room.lo), np.isclose(box.hi, room.hi)
    if at_lo[1] and at_hi[1]:
        return "pillar", bool(at_lo[0])
    if at_hi[2]:
        return ("cabinet" if at_hi[1] else "painting"), None
    return None
