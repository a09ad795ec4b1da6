"""Known answers for case manifests: schema, loading errors and the embedded procedural default."""

import json
import re
import shutil
from collections import Counter
from dataclasses import replace

import imageio.v3 as iio
import numpy as np
import pytest
from worldmemory.common.geometry import intrinsics, pose
from worldmemory.common.ids import ID_PATTERN
from worldmemory.worldmembench import cases
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.metrics.dynamic_memory import event_predicates
from worldmemory.worlds.raycaster import CATEGORIES, FAMILIES, MECHANISMS, World, clearance, generate_world, render

W, H = 64, 48
TRAJECTORIES = {"human": ["LRLR"], "object": ["translation", "LRLRLR"], "environment": ["LRUD"],
                "dynamic": ["LR-Hold", "LR"]}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("cases")
    return out, cases.write_embedded_cases(out, 1, W, H, TRAJECTORIES)


def copy_case(written, tmp_path, case_id):
    out, _ = written
    case_dir = tmp_path / case_id
    shutil.copytree(out / case_id, case_dir)
    return case_dir, json.loads((case_dir / cases.MANIFEST).read_text())


def save(case_dir, manifest):
    (case_dir / cases.MANIFEST).write_text(json.dumps(manifest))


def test_schema_trajectory_names_match_the_trajectory_module():
    items = cases.SCHEMA["properties"]["trajectories"]["items"]["enum"]
    assert items == list(tj.TRAJECTORIES)


def test_one_case_per_family_loads_back(written):
    out, dirs = written
    assert [d.name for d in dirs] == ["human_000", "object_000", "environment_000", "dynamic_000"]
    loaded = cases.load_cases(out)
    assert sorted(c["id"] for c in loaded) == sorted(d.name for d in dirs)
    for case in loaded:
        assert case["trajectories"] == TRAJECTORIES[case["family"]]
        assert case["camera"]["width"] == W and case["camera"]["height"] == H
        np.testing.assert_allclose(case["camera"]["intrinsics"], intrinsics(W, H, 60.0))
        frame = iio.imread(case["conditioning_frame"])
        assert frame.shape == (H, W, 3) and frame.dtype == np.uint8
        world = World.from_dict(case["world"])
        K = np.array(case["camera"]["intrinsics"])
        truth = render(world, np.eye(4), K, W, H, 0)
        assert np.array_equal(frame, truth["rgb"])
        ids = {e.target: e.instance for e in world.entities()}
        for target in case["targets"]:
            mask = iio.imread(target["mask"])
            assert mask.shape == (H, W) and set(np.unique(mask)) <= {0, 255}
            assert np.array_equal(mask > 0, truth["instance"] == ids[target["id"]])
            assert mask.any()


def test_dynamic_case_has_two_questions_per_aspect_with_true_and_false_answers(written):
    out, _ = written
    case = cases.load_case(out / "dynamic_000")
    assert case["category"] in ("fill", "move", "lamp")
    assert case["initial_state"] and case["action"] and case["expected_next_state"]
    counts = Counter(q["aspect"] for q in case["questions"])
    assert counts == {a: 2 for a in cases.ASPECTS}
    for aspect in cases.ASPECTS:
        answers = sorted(q["reference_answer"] for q in case["questions"] if q["aspect"] == aspect)
        assert answers == [False, True]
    first = case["questions"][0]
    assert first["aspect"] == "return_progress" and first["reference_answer"] is True


def test_static_cases_carry_no_event(written):
    out, _ = written
    for case_id in ("human_000", "object_000", "environment_000"):
        case = cases.load_case(out / case_id)
        assert "questions" not in case and "action" not in case


def test_bytes_are_identical_across_writes(written, tmp_path):
    out, _ = written
    again = cases.write_embedded_cases(tmp_path, 1, W, H, TRAJECTORIES)
    for case_dir in again:
        for path in sorted(p for p in case_dir.rglob("*") if p.is_file()):
            assert path.read_bytes() == (out / path.relative_to(tmp_path)).read_bytes(), path


def test_reference_answers_follow_the_event():
    world = generate_world("dynamic_000", "dynamic")
    answers = cases._answers(world.events[0], tj.build("LR-Hold"))
    assert answers == {"advanced_while_away": True, "back_to_initial": False,
                       "kept_after_return": True, "reset_after_return": False,
                       "complete_at_end": True, "initial_at_end": False,
                       "gradual": True, "reversed": False}
    world.events[0].start = 100  # starts after the camera has left: fails the event-start gate
    with pytest.raises(ValueError, match="initial hold"):
        cases._answers(world.events[0], tj.build("LR-Hold"))


@pytest.mark.parametrize("case_id, edit, field, reason", [
    ("human_000", lambda m: m.pop("prompt"), "prompt", "required field is missing"),
    ("dynamic_000", lambda m: m["questions"].pop(), "questions", "has 7 items, needs at least 8"),
    ("dynamic_000", lambda m: [q.update(aspect="final_state") for q in m["questions"][:2]],
     "questions", "aspect return_progress has 0 questions, needs exactly 2"),
    ("object_000", lambda m: m["targets"][0].update(mask="masks/nowhere.png"),
     "targets[0].mask", "file not found"),
    ("object_000", lambda m: m["camera"].update(width="64"),
     "camera.width", "'64' is not of type 'integer'"),
    ("object_000", lambda m: m["camera"].update(width=32), "conditioning_frame",
     "is 64x48, but camera.width x camera.height is 32x48"),
    ("dynamic_000", lambda m: m.pop("action"), "action", "required field is missing"),
    ("human_000", lambda m: m.update(questions=[]), "questions", "not allowed for this family"),
    ("object_000", lambda m: m["targets"][0].update(kind="animal"), "targets[0].kind",
     "is not one of"),
    ("environment_000", lambda m: m.update(trajectories=["LRLR", "spiral"]), "trajectories[1]",
     "is not one of"),
])
def test_broken_manifest_names_case_field_and_reason(written, tmp_path, case_id, edit, field,
                                                     reason):
    case_dir, manifest = copy_case(written, tmp_path, case_id)
    edit(manifest)
    save(case_dir, manifest)
    with pytest.raises(ValueError) as error:
        cases.load_case(case_dir)
    message = str(error.value)
    assert message.startswith(f"case {case_id}: ")
    assert f"{field}: " in message and reason in message


def test_missing_id_is_reported_by_file(written, tmp_path):
    case_dir, manifest = copy_case(written, tmp_path, "human_000")
    del manifest["id"]
    save(case_dir, manifest)
    with pytest.raises(ValueError, match=r"case .*case\.json: id: required field is missing"):
        cases.load_case(case_dir / cases.MANIFEST)


def test_duplicate_case_ids_are_rejected(written, tmp_path):
    for name in ("a", "b"):
        copy_case(written, tmp_path, "human_000")[0].rename(tmp_path / name)
    with pytest.raises(ValueError, match="human_000"):
        cases.load_cases(tmp_path)


def test_every_family_needs_trajectories(tmp_path):
    with pytest.raises(ValueError, match="dynamic"):
        cases.write_embedded_cases(tmp_path, 1, W, H, {"human": ["LR"], "object": ["LR"],
                                                       "environment": ["LR"]})


@pytest.mark.parametrize("bad_id", ["..", ".", "a/b", "-rf", ".hidden", "a b", ""])
def test_a_case_id_is_one_path_component(written, tmp_path, bad_id):
    """A case named '..' would write results/worldmembench/rollouts/<model>/../<trajectory>."""
    case_dir, manifest = copy_case(written, tmp_path, "human_000")
    manifest["id"] = bad_id
    save(case_dir, manifest)
    with pytest.raises(ValueError, match=r"id: .* does not match"):
        cases.load_case(case_dir)


@pytest.mark.parametrize("case_id", [f"{family}_{i:03d}" for family in ("human", "object") for i in range(4)])
def test_the_translation_loop_takes_every_target_out_of_view_in_d1(case_id):
    """Section 3.3: the loop departs and revisits. Sized per world (cases.translation_side), no
    pixel of any target is in view at the end of D1 and every target is back at the end of R1."""
    world = generate_world(case_id, case_id.split("_")[0])
    K = intrinsics(128, 96, 60.0)
    side = cases.translation_side(world, K, 128, 96)
    traj = tj.build("translation", {"translation": {"side": side}}, n_frames=40, hold_frames=4, final_hold_frames=4)
    d1, r1 = traj.revisits()[0]
    targets = [e.instance for e in cases._targets(world)]
    away = render(world, traj.poses[d1.end - 1], K, 128, 96)["instance"]
    back = render(world, traj.poses[r1.end - 1], K, 128, 96)["instance"]
    assert not np.isin(away, targets).any()
    assert all((back == t).sum() >= 20 for t in targets)
    smaller = render(world, tj.build("translation", {"translation": {"side": side - cases.SIDE_STEP}}, n_frames=40,
                                     hold_frames=4, final_hold_frames=4).poses[d1.end - 1], K, 128, 96)["instance"]
    assert side == cases.SIDE_START or np.isin(smaller, targets).any()  # the smallest such side
    corners = np.array([[0, 0, 0], [0, 0, side], [side, 0, side], [side, 0, 0]])
    assert clearance(world, corners).min() >= cases.TRANSLATION_CLEARANCE


def test_translation_cases_carry_their_loop_side(written):
    out, _ = written
    case = cases.load_case(out / "object_000")
    world = World.from_dict(case["world"])
    side = cases.translation_side(world, np.array(case["camera"]["intrinsics"]), W, H)
    assert case["trajectory_params"] == {"translation": {"side": side}}
    assert "trajectory_params" not in cases.load_case(out / "human_000")  # no translation in its list


# ---------------------------------------------------------------------------------------------
# Coverage of the case taxonomy (raycaster.CATEGORIES, docs/design.md "Case coverage")

DEFAULT_CASES = {"human_000": "multi_person", "object_000": "multi_object",
                 "environment_000": "indoor_room", "dynamic_000": "move"}
NEVER_STARTS = {"advanced_while_away": False, "back_to_initial": True, "kept_after_return": True,
                "reset_after_return": False, "complete_at_end": False, "initial_at_end": True,
                "gradual": True, "reversed": False}
RUNS_WHILE_AWAY = {"advanced_while_away": True, "back_to_initial": False, "kept_after_return": True,
                   "reset_after_return": False, "complete_at_end": True, "initial_at_end": False,
                   "gradual": True, "reversed": False}
DONE_BEFORE_LEAVING = {"advanced_while_away": False, "back_to_initial": False, "kept_after_return": True,
                       "reset_after_return": False, "complete_at_end": True, "initial_at_end": False,
                       "gradual": False, "reversed": False}


@pytest.fixture(scope="module")
def per_category(tmp_path_factory):
    out = tmp_path_factory.mktemp("per_category")
    return out, cases.write_embedded_cases(out, 1, W, H, TRAJECTORIES, per_category=1)


def test_the_default_is_still_the_four_old_cases(written):
    """per_category 0 (the default) writes the four cases it wrote before the taxonomy existed,
    with the same categories and no new keys in their worlds (their bytes are what they were)."""
    out, dirs = written
    loaded = {c["id"]: c for c in cases.load_cases(out)}
    assert [d.name for d in dirs] == list(DEFAULT_CASES)
    assert {i: c["category"] for i, c in loaded.items()} == DEFAULT_CASES
    for case in loaded.values():
        assert "category" not in case["world"]
        assert all("size" not in o for o in case["world"]["objects"])


def test_per_category_adds_cases_and_leaves_the_default_ones_byte_identical(written, per_category):
    out, _ = written
    more, dirs = per_category
    for case_id in DEFAULT_CASES:
        for path in sorted(p for p in (out / case_id).rglob("*") if p.is_file()):
            assert (more / path.relative_to(out)).read_bytes() == path.read_bytes(), path
    assert len(dirs) == len(DEFAULT_CASES) + sum(map(len, CATEGORIES.values()))


def test_per_category_generates_every_category_with_its_name(per_category):
    out, dirs = per_category
    loaded = {c["id"]: c for c in cases.load_cases(out)}  # each passes the schema and load_case
    for family, categories in CATEGORIES.items():
        for category in categories:
            case = loaded[f"{family}_{category}_000"]
            assert case["family"] == family and case["category"] == category
            assert case["world"]["category"] == category
            if family == "dynamic":
                assert case["world"]["events"][0]["mechanism"] == category
    assert all(re.fullmatch(ID_PATTERN, d.name) for d in dirs)


def test_per_category_is_deterministic(per_category, tmp_path):
    out, _ = per_category
    again = cases.write_embedded_cases(tmp_path, 1, W, H, TRAJECTORIES, per_category=1)
    for case_dir in again:
        for path in sorted(p for p in case_dir.rglob("*") if p.is_file()):
            assert path.read_bytes() == (out / path.relative_to(tmp_path)).read_bytes(), path


def test_the_plan_names_every_case_before_any_is_rendered():
    """The workflow plans one job per case from embedded_plan: counts per family (one number or a
    mapping, as config/paper.yaml's 60 / 70 / 70 / 60 split), per category beside them; a case's
    id alone decides its content, so adding cases keeps every other id."""
    plan = cases.embedded_plan(1, 2)
    ids = [case_id for case_id, _, _ in plan]
    assert {"dynamic_melt_000", "dynamic_melt_001", "object_furniture_001"} <= set(ids)
    assert len(ids) == len(set(ids)) == len(DEFAULT_CASES) + 2 * sum(map(len, CATEGORIES.values()))
    assert ("object_tabletop_001", "object", "tabletop") in plan and ("human_000", "human", None) in plan
    paper = cases.embedded_plan({"object": 2, "environment": 1, "dynamic": 4},
                                {"human": 30, "object": 17, "environment": 23, "dynamic": 8})
    by_family = {f: sum(1 for _, family, _ in paper if family == f) for f in FAMILIES}
    assert by_family == {"human": 60, "object": 70, "environment": 70, "dynamic": 60}
    assert set(ids) <= {case_id for case_id, _, _ in cases.embedded_plan(3, 2)}
    with pytest.raises(ValueError, match="per_family: unknown families animal"):
        cases.embedded_plan({"animal": 1})
    with pytest.raises(ValueError, match="per_category: counts must be integers >= 0"):
        cases.embedded_plan(1, {"human": -1})


def test_the_cli_writes_one_case_as_the_library_does(tmp_path):
    cases.main(["--out", str(tmp_path / "cli" / "dynamic_melt_001"), "--case", "dynamic_melt_001", "--family",
                "dynamic", "--category", "melt", "--width", str(W), "--height", str(H),
                "--trajectories", json.dumps(TRAJECTORIES["dynamic"])])
    cases.write_embedded_case(tmp_path / "lib", "dynamic_melt_001", "dynamic", "melt", W, H, TRAJECTORIES["dynamic"])
    written = sorted(p.relative_to(tmp_path / "lib") for p in (tmp_path / "lib").rglob("*") if p.is_file())
    cli = tmp_path / "cli" / "dynamic_melt_001"
    assert written and all((cli / f).read_bytes() == (tmp_path / "lib" / f).read_bytes() for f in written)
    assert cases.load_case(tmp_path / "lib")["category"] == "melt"


def test_a_user_case_directory_is_named_by_its_case(tmp_path):
    """The workflow names every result of a user's case by its directory: a directory whose
    case.json says another id, or that is no valid id, stops the run naming both."""
    out = tmp_path / "user"
    cases.write_embedded_case(out / "mine", "human_000", "human", None, W, H, TRAJECTORIES["human"])
    with pytest.raises(ValueError, match="id 'human_000' differs from its directory's name 'mine'"):
        cases.user_cases(out)
    (out / "mine").rename(out / "human_000")
    assert list(cases.user_cases(out)) == ["human_000"]
    (out / "human_000").rename(out / "-x")
    with pytest.raises(ValueError, match="case id '-x' is not a valid id"):
        cases.user_cases(out)


def test_every_mechanism_has_its_event_texts_and_eight_questions():
    assert set(cases.EVENTS) == set(MECHANISMS)
    for mechanism, (initial, action, expected, questions) in cases.EVENTS.items():
        assert initial and action and expected
        assert set(questions) == {p for _, p in cases.CHECKLIST}
        assert len(set(questions.values())) == 8, mechanism


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_checklist_answers_follow_the_mechanisms_progress(per_category, mechanism):
    """The written answers are the predicates on the event's progress; an event that runs while
    the camera is away, one that never starts and one done before the camera leaves each give
    the answers their progress implies."""
    out, _ = per_category
    case = cases.load_case(out / f"dynamic_{mechanism}_000")
    world = World.from_dict(case["world"])
    event = world.events[0]
    truth = cases._answers(event, tj.build(TRAJECTORIES["dynamic"][0]))
    assert {q["predicate"]: q["reference_answer"] for q in case["questions"]} == truth == RUNS_WHILE_AWAY
    assert [q["question"] for q in case["questions"]] == [
        cases.EVENTS[mechanism][3][p] for _, p in cases.CHECKLIST]
    traj = tj.build("LR-Hold")
    away, back = traj.revisits()[0]

    def answers(start, duration):
        changed = replace(event, start=start, duration=duration)
        progress = [changed.state(f)["progress"] for f in range(traj.n_frames)]
        return event_predicates(progress, away.start, back.end - 1)

    assert answers(10**6, event.duration) == NEVER_STARTS
    assert answers(0, 1) == DONE_BEFORE_LEAVING
    with pytest.raises(ValueError, match="initial hold"):
        cases._answers(replace(event, start=away.start + 1), traj)


@pytest.mark.parametrize("family, category", [(f, c) for f in ("human", "object") for c in CATEGORIES[f]])
def test_every_person_and_object_category_has_a_translation_loop(family, category):
    """Each such world admits a loop that takes all its targets out of view (Section 3.3)."""
    K = intrinsics(128, 96, 60.0)
    for i in range(3):
        world = generate_world(f"{family}_{category}_{i:03d}", family, category)
        side = cases.translation_side(world, K, 128, 96)
        corner = render(world, pose(np.eye(3), [side, 0, side]), K, 128, 96)["instance"]
        assert not np.isin(corner, [e.instance for e in cases._targets(world)]).any()
