import hashlib
import json
import subprocess

from worldmemory.common.provenance import config_hash, git_state, main, provenance


def test_sidecar_records_what_produced_a_table(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    config = {"device": "cpu", "threads": 2}
    record = provenance(config, tmp_path, [{"model": "m"}], [table], {"train": 0})
    assert record["config_sha256"] == config_hash({"threads": 2, "device": "cpu"})  # key order irrelevant
    assert record["git"] == {"commit": "unknown", "dirty": None}  # not a checkout
    assert record["packages"]["torch"] and record["packages"]["numpy"]
    assert record["outputs"]["t.csv"] == hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    assert record["seeds"] == {"train": 0} and record["models"] == [{"model": "m"}]


def test_git_commit_and_dirty_flag(tmp_path):
    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)
    run("init", "-q")
    (tmp_path / "f").write_text("x")
    run("add", "f")
    run("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "m")
    state = git_state(tmp_path)
    assert len(state["commit"]) == 40 and state["dirty"] is False
    (tmp_path / "f").write_text("y")
    assert git_state(tmp_path)["dirty"] is True


def test_cli_is_byte_stable(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("x\n")
    info = tmp_path / "m.json"
    info.write_text(json.dumps({"model": "m"}))
    args = ["--config", '{"device": "cpu"}', "--repo", str(tmp_path), "--model-info", str(info), "--outputs", str(table)]
    main(args + ["--out", str(tmp_path / "a.json")])
    main(args + ["--out", str(tmp_path / "b.json")])
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
