import hashlib
import json
import os
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

from worldmemory.common.provenance import (
    config_hash,
    git_state,
    main,
    name_version,
    package_versions,
    provenance,
    write_job_info,
)

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_sidecar_records_what_produced_a_table(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    config = {"device": "cpu", "threads": 2}
    record = provenance(config, tmp_path, [{"model": "m"}], [table], {"train": 0})
    assert record["config_sha256"] == config_hash({"threads": 2, "device": "cpu"})  # key order irrelevant
    assert record["git"] == {"commit": "unknown", "dirty": None}  # not a checkout
    assert record["packages"]["torch"] and record["packages"]["numpy"] and None not in record["packages"].values()
    assert record["outputs"]["t.csv"] == hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    assert record["seeds"] == {"train": 0} and record["models"] == [{"model": "m"}]


def test_git_commit_and_dirty_flag(tmp_path):
    def run(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

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
    config = tmp_path / "resolved.json"
    config.write_text('{"device": "cpu"}')
    args = ["--config", str(config), "--repo", str(tmp_path), "--model-info", str(info), "--outputs", str(table)]
    main(args + ["--out", str(tmp_path / "a.json")])
    main(args + ["--out", str(tmp_path / "b.json")])
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_a_job_records_the_environment_it_ran_in(tmp_path):
    """As under --sdm conda: the table job runs where torch is absent (a bare virtual environment
    here), the model job where it is present. The table's sidecar lists no torch of its own (no
    null either) and carries the model job's torch through the model's sidecar."""
    info = tmp_path / "model.json"
    write_job_info(info, model="m", device="cpu")
    assert json.loads(info.read_text())["packages"]["torch"]
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    table = tmp_path / "t.csv"
    table.write_text("x\n")
    config = tmp_path / "resolved.json"
    config.write_text('{"device": "cpu"}')
    subprocess.run([bare / "bin" / "python", "-m", "worldmemory.common.provenance", "--config", config,
                    "--model-info", info, "--outputs", table, "--out", tmp_path / "t.json"],
                   check=True, env={**os.environ, "PYTHONPATH": str(SCRIPTS)})
    record = json.loads((tmp_path / "t.json").read_text())
    assert "torch" not in record["packages"] and "numpy" not in record["packages"]
    assert record["packages"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert record["models"][0]["packages"]["torch"] == json.loads(info.read_text())["packages"]["torch"]


def test_package_versions_read_as_the_full_metadata_parse_reads_them():
    """The header-only read gives what importlib's full parse gives, for every distribution here."""
    parsed = {d.metadata["Name"]: d.version for d in metadata.distributions() if d.metadata["Name"]}
    assert {k: v for k, v in package_versions().items() if k != "python"} == parsed


def test_name_and_version_come_from_the_headers_only(tmp_path):
    """A long description that quotes other headers after the blank line changes nothing."""
    info = tmp_path / "fake-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-pkg\nVersion: 1.0.post2\n"
                                   "Classifier: Name: not this\n\nName: other\nVersion: 9\n")
    assert name_version(metadata.PathDistribution(info)) == ("fake-pkg", "1.0.post2")
    (info / "METADATA").write_text("Metadata-Version: 2.1\n\nName: only-in-the-body\n")
    assert name_version(metadata.PathDistribution(info)) is None
