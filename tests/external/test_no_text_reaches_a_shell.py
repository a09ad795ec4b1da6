"""No case text reaches a shell (issue 39): real rollouts of both benchmarks whose command hands
every placeholder to each form bash evaluates a second time (eval, bash -c, a here-string into
bash, arithmetic, printf -v, functions, ...), on a case whose every free-text key is hostile.
The placeholders hold only workflow-made safe words, so no marker may appear; the same hostile
values, evaluated directly, do create their markers (the test can fail)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from worldmemory.persistbench import prepare as pp
from worldmemory.persistbench import rollout as pb_rollout
from worldmemory.persistbench.camera_paths import PathParams
from worldmemory.worldmembench import external
from worldmemory.worldmembench.cases import load_case, write_embedded_cases
from worldmemory.worldmembench.rollout import write_rollouts

REPO = Path(__file__).resolve().parents[2]
PARAMS = {"n_frames": 161, "hold_frames": 32, "final_hold_frames": 9}
# the forms of the issue that ran a prompt's $(...) past the old deny-list, for any placeholder p
FORMS = [
    "bash /dev/stdin <<< {p}", "source <(echo {p})", "{{ echo {p}; }} | bash", "time [[ {p} -eq 0 ]]",
    "coproc {{ eval {p}; }}", "python3 -W ignore -c 'import os, sys; os.system(sys.argv[1])' {p}",
    "bash -o errexit -c 'eval \"$1\"' _ {p}", "declare -i n; printf -v n %s {p}",
    "m@() {{ eval \"$1\"; }}; m@ {p}", "exec -a n {p}", "eval \"{p}\"", "bash -c '{p}'",
    "echo $(( {p} ))", "a[{p}]=1", "sh -c {p}", "echo {p} | xargs sh -c",
]
# case.json keys that are enums, ids or file names (checked elsewhere); every other string is text
CHECKED = {"id", "family", "kind", "aspect", "conditioning_frame", "mask", "trajectories", "predicate"}


def evaluating(placeholders, output: str) -> str:
    """A template handing every placeholder to every form (each in its own subshell, errors
    ignored), then the real model."""
    parts = [f"( {form.replace('{p}', '{' + name + '}')} ) >/dev/null 2>&1;"
             for name in placeholders for form in FORMS]
    return " ".join(parts) + " " + output


def hostile(markers: Path, key: str) -> str:
    """Text trying each way out of a word; each way creates its own marker file."""
    m = markers / key.replace("/", "_")
    return (f"$(touch {m}.1) `touch {m}.2` '; touch {m}.3; ' \"; touch {m}.4; \"\n touch {m}.5\n"
            f" a[$(touch {m}.6)] x{{a,b}} * ~ -rf ${{IFS}} \\' $'\\x41' {{prompt}} %s")


def poison(value, markers: Path, path: str = ""):
    """``value`` (a case.json's contents) with every free-text string hostile."""
    if isinstance(value, dict):
        return {k: v if k in CHECKED else poison(v, markers, f"{path}{k}.") for k, v in value.items()}
    if isinstance(value, list):
        return [poison(v, markers, f"{path}{i}.") for i, v in enumerate(value)]
    return hostile(markers, path.rstrip(".")) if isinstance(value, str) else value


@pytest.fixture(autouse=True)
def package_on_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO / "scripts"))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")


def test_hostile_case_text_never_runs_in_a_worldmembench_rollout(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    cases = tmp_path / "cases"
    write_embedded_cases(cases, {"human": 0, "object": 0, "environment": 0, "dynamic": 1}, 32, 24,
                         {"human": [], "object": [], "environment": [], "dynamic": ["LR-Hold"]}, PARAMS)
    case_json = cases / "dynamic_000" / "case.json"
    case = poison(json.loads(case_json.read_text()), markers)
    case_json.write_text(json.dumps(case))
    loaded = load_case(cases / "dynamic_000")
    texts = {key: loaded[key] for key in ("prompt", "category", "initial_state", "action")}
    assert texts == {key: hostile(markers, key) for key in texts}  # the case loads, text and all
    still = "python -m worldmemory.worldmembench.still_model --request {request}"
    manifest = write_rollouts(cases, "hostile", "external", {}, PARAMS, tmp_path / "rollouts",
                              command=evaluating(external.PLACEHOLDERS, still))
    video = tmp_path / "rollouts" / manifest["rollouts"][0]["video"]
    request = json.loads((video.parent / "request" / "request.json").read_text())
    assert request["prompt"] == case["prompt"]  # the text reached the model, through its file
    assert sorted(markers.iterdir()) == []

    # the control: the same text, evaluated as shell code, creates its markers
    subprocess.run(["bash", "-c", case["prompt"]], cwd=tmp_path, capture_output=True, timeout=30)
    assert len(list(markers.iterdir())) >= 3


def test_no_placeholder_of_a_persistbench_rollout_runs_the_sequences_text(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    sequences = tmp_path / "sequences"
    pp.prepare(sequences, 1, 16, 64, (6, 10), PathParams(fov_deg=90, width=32, height=32))
    seq_json = next(sequences.glob("*/sequence.json"))
    seq = json.loads(seq_json.read_text())
    seq_json.write_text(json.dumps({**seq, "category": hostile(markers, "category")}))
    copy = "cp {input_video} {video}.mkv && mv {video}.mkv {video}"
    manifest = pb_rollout.write_rollouts(sequences, "hostile", "external", tmp_path / "rollouts",
                                         command=evaluating(pb_rollout.PLACEHOLDERS, copy))
    assert (tmp_path / "rollouts" / manifest["rollouts"][0]["video"]).is_file()
    assert sorted(markers.iterdir()) == []
