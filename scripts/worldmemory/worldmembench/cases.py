"""WorldMemBench case manifests: loading, validation and the embedded procedural default.

A case (Section 3.2) is a directory holding ``case.json`` (JSON rather than YAML: it carries the
world description and is written by code, so one deterministic serialisation is enough), the
conditioning frame and one PNG mask per target, all paths relative to the directory and inside it
(common.confine: no absolute path, '..' or symlink leading out). The format is case.schema.yaml
(JSON Schema 2020-12); ``load_case`` adds the rules a schema cannot state: two questions per
Dynamic Memory aspect (Section 4.5), that referenced files exist inside the case's directory, and
that the case's own ``trajectory_params`` name its trajectories' parameters with their builders'
types (trajectories.block_problems, typed_problems; the config checks range-check them with the
config's, trajectories.check).

``write_embedded_cases`` builds the workflow's embedded default from procedural worlds (world.py),
so each case comes with exact ground truth: the target masks are instance masks of the rendered
conditioning frame, and a dynamic case's reference answers follow from its event's known state
along the camera trajectory.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import imageio.v3 as iio
import jsonschema
import numpy as np
import yaml

from worldmemory.common.confine import confinement_problem
from worldmemory.common.geometry import intrinsics, pose
from worldmemory.common.ids import check_case_distinct, check_id
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.metrics.dynamic_memory import event_predicates
from worldmemory.worlds.raycaster import CATEGORIES, FAMILIES, Box, Event, World, clearance, generate_world, render

MANIFEST = "case.json"
SCHEMA = yaml.safe_load((Path(__file__).with_name("case.schema.yaml")).read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
# The translation loop's side is sized per case (translation_side), in these steps (metres).
SIDE_START, SIDE_STOP, SIDE_STEP = 0.25, 3.0, 0.05
TRANSLATION_CLEARANCE = 0.3  # metres the camera keeps from every surface along the loop
ASPECTS = ("return_progress", "persistence_reset", "final_state", "causal_physical")

# Checklist predicates on the event's progress along the trajectory, two per aspect, one true and
# one false for a correctly remembered event, so a judge cannot score by always answering "yes".
CHECKLIST = (
    ("return_progress", "advanced_while_away"),
    ("return_progress", "back_to_initial"),
    ("persistence_reset", "kept_after_return"),
    ("persistence_reset", "reset_after_return"),
    ("final_state", "complete_at_end"),
    ("final_state", "initial_at_end"),
    ("causal_physical", "gradual"),
    ("causal_physical", "reversed"),
)
EVENTS = {  # mechanism: (initial state, action, expected next state, question per predicate)
    "fill": (
        "The container on the table is empty.",
        "Liquid pours into the container and its level slowly rises.",
        "The container is full of liquid.",
        {
            "advanced_while_away": "When the camera returns to the initial view, is the liquid "
                                   "level higher than when the camera turned away?",
            "back_to_initial": "When the camera returns to the initial view, is the container "
                               "as empty as in the first frame?",
            "kept_after_return": "After the camera returns, does the liquid level stay at least "
                                 "as high as it was at the return?",
            "reset_after_return": "After the camera returns, does the liquid level drop again?",
            "complete_at_end": "In the final frames, is the container full of liquid?",
            "initial_at_end": "In the final frames, is the container empty as at the start?",
            "gradual": "Does the liquid level rise gradually rather than jumping from empty "
                       "to full?",
            "reversed": "Does the liquid level ever go down during the video?",
        },
    ),
    "move": (
        "A box rests at the left end of the table.",
        "The box slides slowly to the right along the table.",
        "The box rests at the right end of the table.",
        {
            "advanced_while_away": "When the camera returns to the initial view, is the box "
                                   "farther to the right than when the camera turned away?",
            "back_to_initial": "When the camera returns to the initial view, is the box back at "
                               "its position in the first frame?",
            "kept_after_return": "After the camera returns, does the box stay at least as far "
                                 "right as it was at the return?",
            "reset_after_return": "After the camera returns, does the box move back to the left?",
            "complete_at_end": "In the final frames, is the box at the right end of the table?",
            "initial_at_end": "In the final frames, is the box at the left end as at the start?",
            "gradual": "Does the box slide smoothly rather than jumping from one end to the "
                       "other?",
            "reversed": "Does the box ever move back towards the left during the video?",
        },
    ),
    "lamp": (
        "The lamp on the table is off.",
        "The lamp is switched on and slowly brightens.",
        "The lamp glows at full brightness.",
        {
            "advanced_while_away": "When the camera returns to the initial view, is the lamp "
                                   "brighter than when the camera turned away?",
            "back_to_initial": "When the camera returns to the initial view, is the lamp off as "
                               "in the first frame?",
            "kept_after_return": "After the camera returns, does the lamp stay at least as bright "
                                 "as it was at the return?",
            "reset_after_return": "After the camera returns, does the lamp dim again?",
            "complete_at_end": "In the final frames, does the lamp glow at full brightness?",
            "initial_at_end": "In the final frames, is the lamp off as at the start?",
            "gradual": "Does the lamp brighten gradually rather than switching on at once?",
            "reversed": "Does the lamp ever get dimmer during the video?",
        },
    ),
    "slice": (
        "A whole loaf lies on the table.",
        "The loaf is cut in two and the halves are slowly pushed apart.",
        "Two halves of the loaf lie apart on the table.",
        {
            "advanced_while_away": "When the camera returns to the initial view, are the two halves "
                                   "farther apart than when the camera turned away?",
            "back_to_initial": "When the camera returns to the initial view, is the loaf whole "
                               "again as in the first frame?",
            "kept_after_return": "After the camera returns, do the halves stay at least as far "
                                 "apart as they were at the return?",
            "reset_after_return": "After the camera returns, do the halves move back together?",
            "complete_at_end": "In the final frames, do the two halves lie fully apart?",
            "initial_at_end": "In the final frames, is the loaf whole as at the start?",
            "gradual": "Do the halves part gradually rather than jumping apart at once?",
            "reversed": "Does the gap between the halves ever shrink during the video?",
        },
    ),
    "erase": (
        "A board on the table shows a drawing.",
        "The drawing is slowly wiped off the board.",
        "The board is blank.",
        {
            "advanced_while_away": "When the camera returns to the initial view, is the drawing "
                                   "fainter than when the camera turned away?",
            "back_to_initial": "When the camera returns to the initial view, is the drawing as "
                               "vivid as in the first frame?",
            "kept_after_return": "After the camera returns, does the drawing stay at least as "
                                 "faint as it was at the return?",
            "reset_after_return": "After the camera returns, does the drawing come back?",
            "complete_at_end": "In the final frames, is the board blank?",
            "initial_at_end": "In the final frames, does the board show the full drawing as at "
                              "the start?",
            "gradual": "Does the drawing fade gradually rather than vanishing at once?",
            "reversed": "Does the drawing ever become more vivid again during the video?",
        },
    ),
    "lift": (
        "A bar rests on the table.",
        "The bar is slowly lifted straight up.",
        "The bar is held high above the table.",
        {
            "advanced_while_away": "When the camera returns to the initial view, is the bar "
                                   "higher than when the camera turned away?",
            "back_to_initial": "When the camera returns to the initial view, is the bar resting "
                               "on the table as in the first frame?",
            "kept_after_return": "After the camera returns, does the bar stay at least as high "
                                 "as it was at the return?",
            "reset_after_return": "After the camera returns, does the bar come down again?",
            "complete_at_end": "In the final frames, is the bar held at its highest position?",
            "initial_at_end": "In the final frames, is the bar resting on the table as at the "
                              "start?",
            "gradual": "Does the bar rise smoothly rather than jumping up at once?",
            "reversed": "Does the bar ever move down during the video?",
        },
    ),
    "melt": (
        "A block of ice stands on the table.",
        "The ice slowly melts into a spreading puddle.",
        "A small remnant of ice stands in a puddle of water.",
        {
            "advanced_while_away": "When the camera returns to the initial view, is the block "
                                   "smaller than when the camera turned away?",
            "back_to_initial": "When the camera returns to the initial view, is the block as "
                               "large as in the first frame, without a puddle?",
            "kept_after_return": "After the camera returns, does the block stay at most as large "
                                 "as it was at the return?",
            "reset_after_return": "After the camera returns, does the block grow back?",
            "complete_at_end": "In the final frames, is only a small remnant of ice left in a "
                               "puddle?",
            "initial_at_end": "In the final frames, is the block as large as at the start?",
            "gradual": "Does the block melt gradually rather than shrinking at once?",
            "reversed": "Does the block ever grow or the puddle ever shrink during the video?",
        },
    ),
}
# Prompt sentences of the subcategories drawn by generate_world(..., category) (CATEGORIES).
ROOMS = {
    "corridor": "A long, narrow indoor corridor with patterned walls, floor and ceiling.",
    "hall": "A large, high indoor hall with patterned walls, floor and ceiling.",
}


# ---------------------------------------------------------------------------------------------
# Loading


def load_case(path) -> dict:
    """Validated manifest of the case at ``path`` (its directory or its case.json).

    File paths in the returned dict (conditioning_frame, targets[i].mask) are resolved against
    the case directory. Raises ValueError naming the case id (or the file when the id is
    missing), the field path (e.g. targets[0].mask) and the reason for every problem found.
    """
    path = Path(path)
    manifest_path = path / MANIFEST if path.is_dir() else path
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{manifest_path}: cannot read manifest: {e}") from e
    name = manifest.get("id") if isinstance(manifest, dict) else None
    name = name if isinstance(name, str) else str(manifest_path)
    problems = [p for e in VALIDATOR.iter_errors(manifest) for p in _schema_problems(e)]
    if not problems:
        problems = _case_problems(manifest, manifest_path.parent)
    if problems:
        raise ValueError(f"case {name}: " + "; ".join(dict.fromkeys(problems)))
    root = manifest_path.parent.resolve()
    manifest["conditioning_frame"] = str(root / manifest["conditioning_frame"])
    for target in manifest["targets"]:
        target["mask"] = str(root / target["mask"])
    return manifest


def load_cases(directory) -> list[dict]:
    """Every case under ``directory`` (its subdirectories holding a case.json), sorted by name."""
    dirs = sorted(p for p in Path(directory).iterdir() if (p / MANIFEST).is_file())
    if not dirs:
        raise ValueError(f"{directory}: no case directories with a {MANIFEST}")
    cases = [load_case(d) for d in dirs]
    repeated = [i for i, n in Counter(c["id"] for c in cases).items() if n > 1]
    if repeated:
        raise ValueError(f"{directory}: case ids used more than once: {', '.join(repeated)}")
    return cases


def user_cases(directory) -> dict[str, dict]:
    """The validated cases of a user's case directory (load_case), id -> manifest, sorted by id.
    Each case's directory must be named by its id, a single path component (common.ids): the
    workflow plans one job per case from the names and writes each case's results under its id,
    so no two ids are equal up to case (one directory on a case-insensitive file system)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{directory}: not a directory of cases")
    cases = {}
    case_dirs = sorted(p for p in directory.iterdir() if (p / MANIFEST).is_file())
    check_case_distinct("case", [d.name for d in case_dirs], f"rename one of the directories in {directory}")
    for case_dir in case_dirs:
        check_id("case", case_dir.name, f"rename the directory {case_dir}")
        case = load_case(case_dir)
        if case["id"] != case_dir.name:
            raise ValueError(f"{case_dir / MANIFEST}: id {case['id']!r} differs from its directory's name "
                             f"{case_dir.name!r}; rename the directory or change the id")
        cases[case["id"]] = case
    if not cases:
        raise ValueError(f"{directory}: no case directories with a {MANIFEST}")
    return cases


def _field(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out or "(manifest)"


def _schema_problems(error: jsonschema.ValidationError) -> list[str]:
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        return [f"{_field(path + [k])}: required field is missing" for k in missing]
    if error.validator in ("minItems", "maxItems"):
        bound = "at least" if error.validator == "minItems" else "at most"
        reason = f"has {len(error.instance)} items, needs {bound} {error.validator_value}"
    elif error.validator == "not":
        reason = "not allowed for this family (only dynamic cases have an event)"
    else:
        reason = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    return [f"{_field(path)}: {reason}"]


def _case_problems(manifest: dict, root: Path) -> list[str]:
    """Rules beyond the schema: two questions per aspect, unique ids, typed trajectory parameters,
    existing files inside the case's directory."""
    problems = []
    if "questions" in manifest:
        counts = Counter(q["aspect"] for q in manifest["questions"])
        problems += [f"questions: aspect {a} has {counts[a]} questions, needs exactly 2 "
                     f"(Section 4.5)" for a in ASPECTS if counts[a] != 2]
        problems += _repeated("questions", [q["id"] for q in manifest["questions"]])
    problems += _repeated("targets", [t["id"] for t in manifest["targets"]])
    params = manifest.get("trajectory_params", {})
    problems += (tj.block_problems("trajectory_params", params)
                 or tj.typed_problems("trajectory_params", params, manifest["trajectories"]))
    files = [("conditioning_frame", manifest["conditioning_frame"], "conditioning.png")]
    files += [(f"targets[{i}].mask", t["mask"], f"masks/{t['id']}.png") for i, t in enumerate(manifest["targets"])]
    escaping = [p for field, rel, example in files if (p := confinement_problem(root, field, rel, example))]
    if escaping:
        return problems + escaping
    problems += [f"{field}: file not found: {root / rel}" for field, rel, _ in files if not (root / rel).is_file()]
    size = (manifest["camera"]["width"], manifest["camera"]["height"])
    for field, rel, _ in files:
        if (root / rel).is_file():
            found = _image_size(root / rel)
            if found != size:
                problems.append(f"{field}: {rel} is {found[0]}x{found[1]}, but camera.width x camera.height is "
                                f"{size[0]}x{size[1]} (every estimator reads the model's video at that size); "
                                "resize the image or correct the camera")
    return problems


def _image_size(path: Path) -> tuple[int, int]:
    """(width, height) of an image, from its header."""
    props = iio.improps(path)
    return int(props.shape[1]), int(props.shape[0])


def _repeated(field: str, ids: list[str]) -> list[str]:
    return [f"{field}: id {i!r} is used {n} times" for i, n in Counter(ids).items() if n > 1]


# ---------------------------------------------------------------------------------------------
# The embedded default


def family_counts(count: int | dict, what: str) -> dict[str, int]:
    """``count`` (one number for every family, or family -> number, missing families 0) as
    family -> number; ValueError naming ``what`` for a negative or unknown entry."""
    counts = {f: count for f in FAMILIES} if isinstance(count, int) else {f: 0 for f in FAMILIES} | dict(count)
    unknown = sorted(set(counts) - set(FAMILIES))
    if unknown:
        raise ValueError(f"{what}: unknown families {', '.join(unknown)}; valid: {', '.join(FAMILIES)}")
    bad = {f: n for f, n in counts.items() if not isinstance(n, int) or n < 0}
    if bad:
        raise ValueError(f"{what}: counts must be integers >= 0, got {bad}")
    return counts


def embedded_plan(per_family: int | dict, per_category: int | dict = 0) -> list[tuple[str, str, str | None]]:
    """(case id, family, category) of the embedded default's cases, in writing order.

    ``per_family`` cases per family, drawn with the family's default content (ids like
    'human_000'), then ``per_category`` for each subcategory of raycaster.CATEGORIES (ids
    '<family>_<category>_<i>', e.g. 'dynamic_slice_000', drawn by generate_world(id, family,
    category)); each is one number for every family or a mapping family -> number (the paper's
    60 / 70 / 70 / 60 split: config/paper.yaml). A case's content follows from its id, so adding
    cases never changes another. The ids are known before anything is rendered: the workflow
    plans one job per case from them.
    """
    per_family, per_category = family_counts(per_family, "per_family"), family_counts(per_category, "per_category")
    plan = [(f"{family}_{i:03d}", family, None) for family in FAMILIES for i in range(per_family[family])]
    plan += [(f"{family}_{category}_{i:03d}", family, category) for family in FAMILIES
             for category in CATEGORIES[family] for i in range(per_category[family])]
    return plan


def write_embedded_cases(out_dir, per_family: int | dict, width: int, height: int,
                         trajectories: dict[str, list[str]], trajectory_params: dict | None = None,
                         per_category: int | dict = 0) -> list[Path]:
    """Write every case of ``embedded_plan(per_family, per_category)`` under out_dir
    (write_embedded_case); returns the case directories."""
    missing = [f for f in FAMILIES if f not in trajectories]
    if missing:
        raise ValueError(f"no trajectories given for families: {', '.join(missing)}")
    return [write_embedded_case(Path(out_dir) / case_id, case_id, family, category, width, height,
                                trajectories[family], trajectory_params)
            for case_id, family, category in embedded_plan(per_family, per_category)]


def write_embedded_case(case_dir, case_id: str, family: str, category: str | None, width: int, height: int,
                        trajectories: list[str], trajectory_params: dict | None = None) -> Path:
    """Write the procedural case ``case_id`` of ``family`` (drawn as ``category``, None: the
    family's default content) into ``case_dir``.

    It gets conditioning.png (identity pose, frame 0), masks/<target>.png (the target's instance
    mask in that frame, 0/255) and case.json with the world description; a dynamic case also gets
    the event description and the eight-question checklist. The camera is the trajectories' default
    pinhole (60 degree horizontal FoV) at width x height. Deterministic: the same arguments give
    the same bytes. ``trajectory_params`` (frame counts, amplitudes) are those the rollouts will
    use, so a dynamic case's reference answers hold for its actual trajectories.
    """
    trajectory_params = dict(trajectory_params or {})
    K = intrinsics(width, height, tj.DEFAULT_FOV_DEG)
    names = list(trajectories)
    world = generate_world(case_id, family, category)
    case_dir = Path(case_dir)
    (case_dir / "masks").mkdir(parents=True, exist_ok=True)
    frame = render(world, np.eye(4), K, width, height, frame=0)
    iio.imwrite(case_dir / "conditioning.png", frame["rgb"])
    targets = _targets(world)
    for entity in targets:
        mask = frame["instance"] == entity.instance
        if not mask.any():
            raise ValueError(f"case {case_id}: target {entity.target} is not visible")
        iio.imwrite(case_dir / "masks" / f"{entity.target}.png", mask.astype(np.uint8) * 255)
    manifest = {
        "id": case_id,
        "family": family,
        "category": _category(world),
        "conditioning_frame": "conditioning.png",
        "prompt": _prompt(world),
        "targets": [{"id": e.target, "kind": e.kind, "mask": f"masks/{e.target}.png"} for e in targets],
        "camera": {"intrinsics": K.tolist(), "width": width, "height": height, "fps": tj.DEFAULT_FPS},
        "trajectories": names,
    }
    if family == "dynamic":
        manifest.update(_event_fields(case_id, world.events[0], names, width, height, trajectory_params))
    if "translation" in names and family in ("human", "object"):
        side = translation_side(world, K, width, height)
        manifest["trajectory_params"] = {"translation": {"side": side}}
    manifest["world"] = world.to_dict()
    (case_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    load_case(case_dir)  # what we write must pass what we read
    return case_dir


def translation_side(world: World, K, width: int, height: int) -> float:
    """Side (metres) of the translation loop for this world: the smallest, in SIDE_STEP steps from
    SIDE_START, at whose far corner (the end of D1, after Forward and Right) no pixel of any target
    is in view, while the camera keeps TRANSLATION_CLEARANCE from every surface along the whole
    square. Section 3.3: the loop is a departure and revisit, so each target must leave the view in
    D1 (R1 ends on the start pose, where it returns). The RPE normalises the path to unit length
    (Eq. 2), so the side does not change Camera Following. ValueError when no side fits the room."""
    targets = [e.instance for e in _targets(world)]
    for side in np.round(np.arange(SIDE_START, SIDE_STOP + SIDE_STEP / 2, SIDE_STEP), 2):
        corners = np.array([[0, 0, 0], [0, 0, side], [side, 0, side], [side, 0, 0], [0, 0, 0.0]])
        path = np.concatenate([np.linspace(a, b, 50) for a, b in zip(corners[:-1], corners[1:])])
        if clearance(world, path).min() < TRANSLATION_CLEARANCE:
            break
        instance = render(world, pose(np.eye(3), corners[2]), K, width, height)["instance"]
        if not np.isin(instance, targets).any():
            return float(side)
    raise ValueError(f"no translation loop of side {SIDE_START}-{SIDE_STOP} m takes every target of "
                     f"this {world.family} world out of view while keeping {TRANSLATION_CLEARANCE} m "
                     "from every surface; drop 'translation' from its trajectories")


def _targets(world: World) -> list:
    return {"human": world.people, "object": world.objects, "environment": [world.room],
            "dynamic": world.events}[world.family]


def _category(world: World) -> str:
    """Subcategory within the family (Figure 2a; single/multi-person per Section 3.2): the one it
    was drawn as, else read off its content."""
    if world.category is not None:
        return world.category
    if world.family == "human":
        return "single_person" if len(world.people) == 1 else "multi_person"
    if world.family == "object":
        return "single_object" if len(world.objects) == 1 else "multi_object"
    if world.family == "environment":
        return "indoor_room"
    return world.events[0].mechanism


def _prompt(world: World) -> str:
    room = ROOMS.get(world.category, "An indoor room with patterned walls, floor and ceiling.")
    if world.category == "furniture":
        return (f"{room} A tall cabinet with a {world.objects[0].shape.texture.kind} pattern stands "
                "on the floor.")
    if world.category == "tabletop":
        things = ", ".join(f"a small {'box' if isinstance(o.shape, Box) else 'sphere'} with a "
                           f"{o.shape.texture.kind} pattern" for o in world.objects)
        return f"{room} On a table: {things}."
    if world.family == "human":
        people = "One person stands" if len(world.people) == 1 else "Two people stand"
        return f"{room} {people} facing the camera, in patterned clothing."
    if world.family == "object":
        things = ", ".join(f"a {'box' if isinstance(o.shape, Box) else 'sphere'} with a "
                           f"{o.shape.texture.kind} pattern" for o in world.objects)
        return f"{room} On pedestals: {things}."
    if world.family == "environment":
        return f"{room} Pillars, cabinets and paintings stand along the walls."
    return f"{room} {EVENTS[world.events[0].mechanism][1]}"


def _event_fields(case_id: str, event: Event, names: list[str], width: int, height: int,
                  trajectory_params: dict) -> dict:
    """Event description and checklist; answers are the predicates evaluated on the event's
    ground-truth progress along each trajectory, which must agree."""
    answers = [_answers(event, tj.build(n, width=width, height=height, **trajectory_params)) for n in names]
    if any(a != answers[0] for a in answers):
        raise ValueError(f"case {case_id}: reference answers differ between trajectories {names}")
    initial, action, expected, questions = EVENTS[event.mechanism]
    return {
        "initial_state": initial,
        "action": action,
        "expected_next_state": expected,
        "questions": [{"id": f"q{i}", "aspect": aspect, "question": questions[predicate],
                       "reference_answer": answers[0][predicate], "predicate": predicate}
                      for i, (aspect, predicate) in enumerate(CHECKLIST, start=1)],
    }


def _answers(event: Event, traj: tj.Trajectory) -> dict[str, bool]:
    """Truth of each checklist predicate for the event seen along ``traj``.

    The camera turns away at the start of D1 and is back at the end of R1 (Section 3.3); the
    gate of Section 4.5 needs the event to have started visibly before D1.
    """
    p = np.array([event.state(f)["progress"] for f in range(traj.n_frames)])
    away, back = traj.revisits()[0]
    if p[away.start] <= 0:
        raise ValueError(f"{event.target} does not start during the initial hold of {traj.name}")
    return event_predicates(p, away.start, back.end - 1)


def main(argv=None):
    """Write one case of the embedded default (rule worldmembench_case)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--out", required=True, type=Path, help="the case's directory")
    ap.add_argument("--case", required=True, help="its id (embedded_plan)")
    ap.add_argument("--family", required=True, choices=FAMILIES)
    ap.add_argument("--category", default=None,
                    help="its subcategory (raycaster.CATEGORIES); omitted: the family's default content")
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--height", type=int, required=True)
    ap.add_argument("--trajectories", required=True, help="JSON: the case's trajectory names")
    ap.add_argument("--trajectory-params", default="{}", help="JSON: trajectories.build keyword arguments")
    args = ap.parse_args(argv)
    write_embedded_case(args.out, args.case, args.family, args.category, args.width, args.height,
                        json.loads(args.trajectories), json.loads(args.trajectory_params))
    print(f"[cases] {args.case} -> {args.out}")


if __name__ == "__main__":
    main()
