"""PersistBench's external models under the shared command contract (worldmemory.external): the
log of every command kept once at --log-dir/<sequence>.log, the job's time limit, and an unknown
placeholder refused up front; real commands through bash on a small embedded run."""

import json
import re
import shutil
import time

import pytest
from worldmemory.persistbench import prepare as pp
from worldmemory.persistbench.camera_paths import PathParams
from worldmemory.persistbench.rollout import main, write_rollouts

COPY = "cp {input_video} {video}.mkv && mv {video}.mkv {video} && echo copied {sequence}"


@pytest.fixture(scope="module")
def sequences(tmp_path_factory):
    out = tmp_path_factory.mktemp("sequences")
    pp.prepare(out, 1, 32, 128, (10, 22), PathParams(fov_deg=90, width=64, height=64))
    return out


def test_every_commands_log_is_kept_once_outside_the_rollouts(sequences, tmp_path):
    manifest = write_rollouts(sequences, "copy-input", "external", tmp_path / "copy",
                              command=COPY, log_dir=tmp_path / "logs")
    ids = [r["sequence"] for r in manifest["rollouts"]]
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [f"{i}.log" for i in ids]
    for seq_id in ids:
        log = (tmp_path / "logs" / f"{seq_id}.log").read_text()
        assert f"copied {seq_id}\n" in log
        assert not (tmp_path / "copy" / seq_id / "command.log").exists()  # kept once


def test_a_failing_commands_log_outlives_the_rollouts(sequences, tmp_path):
    with pytest.raises(RuntimeError) as e:
        write_rollouts(sequences, "bad", "external", tmp_path / "bad",
                       command="echo no weights in /opt/model; exit 4; true {video}",
                       log_dir=tmp_path / "logs")
    seq_id = re.match(r"external model on (\w+): ", str(e.value)).group(1)
    copy = tmp_path / "logs" / f"{seq_id}.log"
    assert "exited with status 4" in str(e.value) and f"Its output ({copy})" in str(e.value)
    shutil.rmtree(tmp_path / "bad")  # Snakemake deletes the failed job's output
    assert "no weights in /opt/model\n" in copy.read_text()


def test_the_cli_kills_a_model_past_its_time(sequences, tmp_path):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"external model on \w+: `sleep 30.*time limit of "
                                           r"0.02 min ran out") as e:
        main(["--sequence", str(sequences / "static_000"), "--model", "slow", "--kind", "external",
              "--command", "sleep 30; true {video}", "--timeout-minutes", "0.02",
              "--log-dir", str(tmp_path / "logs"), "--out", str(tmp_path / "slow" / "static_000")])
    assert time.monotonic() - start < 10
    assert str(tmp_path / "logs") in str(e.value)


@pytest.mark.parametrize("args, message", [
    (["--command", "cp {input_video} {output}"], r"unknown placeholders \['output'\]"),
    (["--command", COPY, "--timeout-minutes", "-1"], "--timeout-minutes must be a positive"),
    ([], "--kind external needs --command"),
])
def test_the_cli_refuses_a_bad_template_or_time_limit_up_front(sequences, tmp_path, capsys, args,
                                                               message):
    with pytest.raises(SystemExit) as e:
        main(["--sequence", str(sequences / "static_000"), "--model", "m", "--kind", "external", *args,
              "--params", json.dumps({}), "--out", str(tmp_path / "m" / "static_000")])
    assert e.value.code == 2 and re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "m").exists()
