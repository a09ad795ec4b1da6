"""./run.sh starts Snakemake safely (worldmemory.workflow.launch): it reads the working directory
and config files as Snakemake does, reports a YAML error with file and line, never removes the
lock of a live Snakemake, and ends the jobs a killed Snakemake left running before it removes the
stale lock and resumes."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from worldmemory.workflow import launch
from worldmemory.workflow.config_files import load_config_file

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def wait_for(condition, what, timeout=60.0, process=None):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process is None or process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def alive(pid):
    return launch._alive(pid)


@pytest.fixture
def processes():
    """Popen objects a test starts; whatever is left is killed and reaped at the end."""
    started = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


# -- arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize("form", [["-d", "{d}"], ["-d{d}"], ["--directory={d}"], ["--directory", "{d}"]])
@pytest.mark.parametrize("profile", [[], ["--profile", "profiles/default"]])
def test_every_form_of_directory_is_read(tmp_path, monkeypatch, form, profile):
    monkeypatch.chdir(REPO)  # where run.sh runs, so that its --profile resolves
    args = [*profile, "--cores", "1", *(a.format(d=tmp_path / "wd") for a in form), "all"]
    assert launch.parse_arguments(args) == (tmp_path / "wd", [])


@pytest.mark.parametrize("profile", [["--profile", "profiles/slurm"], ["--profile=profiles/slurm"]])
def test_run_sh_leaves_the_local_profile_out_when_given_one(tmp_path, profile):
    """`./run.sh snakemake --profile profiles/slurm` (README, SLURM) runs with that profile alone:
    Snakemake merges every --profile, and profiles/default's cores: 2 would cap every SLURM job."""
    done = subprocess.run(["./run.sh", "snakemake", "results/permanence/table3.csv", *profile, "--workflow-profile",
                           "none", "-n", "--directory", str(tmp_path)], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Using profile profiles/slurm for setting default command line arguments" in done.stdout + done.stderr
    assert "profiles/default" not in done.stdout + done.stderr


def test_the_directory_defaults_to_the_current_one_and_may_be_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert launch.parse_arguments(["--cores", "1"]) == (tmp_path, [])
    assert launch.parse_arguments(["-d", "sub"])[0] == tmp_path / "sub"


@pytest.mark.parametrize("args, files", [
    (["--configfile", "a.yaml", "b.yaml"], ["a.yaml", "b.yaml"]),
    (["--configfile=a.yaml"], ["a.yaml"]),
    (["--configfiles", "a.yaml"], ["a.yaml"]),
    (["target", "--configfile", "a.yaml"], ["a.yaml"]),
])
def test_config_files_are_read(args, files):
    assert launch.parse_arguments(args)[1] == [Path(f) for f in files]


def test_arguments_snakemake_rejects_or_only_prints_are_left_to_it():
    assert launch.parse_arguments(["--no-such-option"]) is None
    assert launch.parse_arguments(["--version"]) is None


@pytest.mark.parametrize("cmdline, args", [
    (["/x/.venv/bin/snakemake", "-d", "w"], ["-d", "w"]),
    (["/x/.venv/bin/python3.11", "/x/.venv/bin/snakemake", "--cores", "1"], ["--cores", "1"]),
    (["python", "-u", "-m", "snakemake", "-n"], ["-n"]),
    (["python3", "-msnakemake", "-n"], ["-n"]),
    (["python", "-X", "dev", "-m", "snakemake"], []),
    (["python", "-m", "pytest", "snakemake"], None),
    (["python", "-c", "import snakemake"], None),
    (["python", "script.py", "snakemake"], None),
    (["bash", "./run.sh", "snakemake"], None),
    ([], None),
])
def test_snakemake_command_lines_are_recognised(cmdline, args):
    assert launch.snakemake_arguments(cmdline) == args


# -- config files --------------------------------------------------------------------------------


def test_a_yaml_error_names_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("device: cpu\nworldmembench:\n  per_family: 1\n   width: 64\n")
    with pytest.raises(ValueError) as error:
        load_config_file(bad)
    message = str(error.value)
    assert message.startswith(f"{bad}:4:9: ")
    assert "mapping values are not allowed here" in message
    assert "hint: correct line 4" in message


def test_a_missing_colon_names_both_lines_and_a_tab_its_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\nb\nc: 2\n")
    with pytest.raises(ValueError, match=r"bad\.yaml:3:1: could not find expected ':'") as error:
        load_config_file(bad)
    assert "line 2 or line 3" in str(error.value)
    bad.write_text("a:\n\t- 1\n")
    with pytest.raises(ValueError, match=r"bad\.yaml:2:1: found character '\\t'"):
        load_config_file(bad)


def test_a_valid_file_loads_and_a_non_mapping_does_not(tmp_path):
    assert load_config_file(REPO / "tests" / "config" / "tiny_worldmembench.yaml")["device"] == "cpu"
    assert load_config_file(REPO / "config" / "config.yaml")
    (tmp_path / "c.json").write_text('{"device": "cpu"}')
    assert load_config_file(tmp_path / "c.json") == {"device": "cpu"}
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ValueError, match="mapping"):
        load_config_file(tmp_path / "list.yaml")
    with pytest.raises(ValueError, match="not found"):
        load_config_file(tmp_path / "missing.yaml")


def test_run_sh_stops_on_a_bad_config_before_touching_anything(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("device: cpu\nthreads: [1\n")
    workdir = tmp_path / "wd"
    result = subprocess.run([str(REPO / "run.sh"), "snakemake", "-d", str(workdir), "-n",
                             "--configfile", str(REPO / "tests" / "config" / "tiny.yaml"), str(bad)],
                            capture_output=True, text=True, env=ENV, timeout=120)
    assert result.returncode == 1
    assert f"[run.sh] {bad}:3:1: " in result.stderr
    assert "hint: correct line" in result.stderr
    assert not workdir.exists()


# -- processes -----------------------------------------------------------------------------------


def test_orphaned_jobs_are_found_by_their_workdir_and_terminated(tmp_path, processes):
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    (tmp_path / "link").symlink_to(mine)
    job = subprocess.Popen(["sleep", "60"], env={**ENV, "WORLDMEMORY_WORKDIR": str(tmp_path / "link")})
    stranger = subprocess.Popen(["sleep", "60"], env={**ENV, "WORLDMEMORY_WORKDIR": str(other)})
    unmarked = subprocess.Popen(["sleep", "60"], cwd=mine)
    processes += [job, stranger, unmarked]
    wait_for(lambda: launch._environ(stranger.pid).get("WORLDMEMORY_WORKDIR"), "the processes to start")

    found = [pid for pid, _ in launch.orphaned_jobs(mine)]
    assert found == [job.pid]
    assert launch.orphaned_jobs(mine)[0][1] == ["sleep", "60"]
    launch.terminate(found, grace=5)
    assert job.wait(timeout=5) == -signal.SIGTERM
    assert stranger.poll() is None and unmarked.poll() is None
    assert [pid for pid, _ in launch.orphaned_jobs(other)] == [stranger.pid]


def test_a_job_that_ignores_sigterm_is_killed(tmp_path, processes):
    job = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                            "signal.SIG_IGN); print(flush=True); time.sleep(60)"],
                           env={**ENV, "WORLDMEMORY_WORKDIR": str(tmp_path)}, stdout=subprocess.PIPE)
    processes.append(job)
    job.stdout.readline()  # the handler is set
    assert launch.terminate([job.pid], grace=0.5) == [job.pid]
    assert job.wait(timeout=5) == -signal.SIGKILL


def test_a_live_snakemake_keeps_its_lock(tmp_path, processes):
    """A Snakemake in the workdir (by its current directory, or by its -d before it changes into
    it) stops the launcher, which names its pid and leaves the lock and its jobs alone."""
    workdir, elsewhere = tmp_path / "wd", tmp_path / "elsewhere"
    (workdir / ".snakemake" / "locks").mkdir(parents=True)
    (workdir / ".snakemake" / "locks" / "0.output.lock").write_text("x")
    elsewhere.mkdir()
    fake = tmp_path / "bin" / "snakemake"  # a stand-in that only sleeps
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(60)\n")
    job = subprocess.Popen(["sleep", "60"], env={**ENV, "WORLDMEMORY_WORKDIR": str(workdir)})
    processes.append(job)
    for cwd, args in ((workdir, []), (elsewhere, [f"-d{workdir}"])):
        snakemake = subprocess.Popen([sys.executable, str(fake), *args], cwd=cwd)
        processes.append(snakemake)
        wait_for(lambda pid=snakemake.pid: launch.snakemake_arguments(launch._cmdline(pid)) is not None,
                 "the stand-in to start")
        assert [pid for pid, _ in launch.live_snakemakes(workdir)] == [snakemake.pid]
        assert launch.live_snakemakes(elsewhere) == []
        with pytest.raises(launch.LaunchError, match=f"pid {snakemake.pid}") as error:
            launch.make_safe(workdir)
        assert "wait for it to finish, or stop it" in str(error.value)
        assert (workdir / ".snakemake" / "locks" / "0.output.lock").exists()
        assert job.poll() is None
        snakemake.kill()
        snakemake.wait()


def test_the_flock_outlives_the_exec_and_stops_a_second_launcher(tmp_path, processes):
    """The first launcher execs a stand-in for Snakemake that sleeps: the flock it took is held by
    the stand-in, and a second launcher in the same workdir stops; once it ends, one starts."""
    env = {**ENV, "PYTHONPATH": str(REPO / "scripts")}
    stand_in = ("import sys; from worldmemory.workflow import launch; "
                "launch.snakemake_command = lambda argv: ['sleep', '60']; "
                "sys.exit(launch.main(sys.argv[1:]))")
    first = subprocess.Popen([sys.executable, "-c", stand_in, "-d", str(tmp_path)], env=env)
    processes.append(first)
    wait_for(lambda: launch._cmdline(first.pid) == ["sleep", "60"], "the exec", process=first)
    second = [sys.executable, "-c", stand_in.replace("'60'", "'0'"), "-d", str(tmp_path)]
    result = subprocess.run(second, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1
    assert f"[run.sh] another ./run.sh is running in {tmp_path}" in result.stderr
    first.kill()
    first.wait()
    assert subprocess.run(second, capture_output=True, env=env, timeout=120).returncode == 0


def test_the_rules_mark_their_jobs_with_the_workdir():
    """The marker the launcher finds orphaned jobs by: the rules' shell prefix exports it."""
    assert 'WORLDMEMORY_WORKDIR="$PWD"' in (REPO / "rules" / "common.smk").read_text()


# -- real runs -----------------------------------------------------------------------------------

# A rule whose job waits (the body); the prefix is the rules' marker (rules/common.smk).
SNAKEFILE = """
shell.prefix('set -euo pipefail; export WORLDMEMORY_WORKDIR="$PWD"; ')

rule all:
    input: "out.txt"

rule wait:
    output: "out.txt"
    shell: "{body}; echo done > {{output}}"
"""
UNTIL_RELEASED = "for i in $(seq 1200); do [ -e release ] && break; sleep 0.1; done"
UNTIL_KILLED = "[ -e fast ] || sleep 600"  # a resumed run finds `fast` and does not wait


def start_plain_snakemake(tmp_path, workdir, body, **popen):
    """``snakemake`` itself (not run.sh) on the rule that waits; its Snakefile and process."""
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text(SNAKEFILE.format(body=body))
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(workdir),
               "--cores", "1"]
    return snakefile, subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, **popen)


@pytest.fixture
def workdir(tmp_path):
    """A working directory whose jobs are ended at the end of the test, whatever happened."""
    path = tmp_path / "wd"
    yield path
    launch.terminate([pid for pid, _ in launch.orphaned_jobs(path)], grace=1)


def locks(workdir):
    directory = workdir / ".snakemake" / "locks"
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


@pytest.mark.workflow
def test_run_sh_refuses_while_a_snakemake_started_without_it_runs(tmp_path, workdir, processes):
    snakefile, first = start_plain_snakemake(tmp_path, workdir, UNTIL_RELEASED)
    processes.append(first)
    wait_for(lambda: locks(workdir), "the first run's lock", process=first)
    held = locks(workdir)

    second = subprocess.run([str(REPO / "run.sh"), "snakemake", "-s", str(snakefile), f"-d{workdir}",
                             "--cores", "1"], capture_output=True, text=True, env=ENV, timeout=60)
    assert second.returncode != 0
    assert f"Snakemake is already running in {workdir} (pid {first.pid})" in second.stderr
    assert "resuming" not in second.stderr
    assert locks(workdir) == held

    (workdir / "release").touch()
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 0, out[-3000:]
    assert (workdir / "out.txt").read_text() == "done\n"
    assert locks(workdir) == []


@pytest.mark.workflow
def test_run_sh_ends_the_jobs_of_a_killed_snakemake_and_resumes(tmp_path, workdir, processes):
    snakefile, first = start_plain_snakemake(tmp_path, workdir, UNTIL_KILLED, start_new_session=True)
    processes.append(first)
    wait_for(lambda: any(cmd[:1] == ["sleep"] for _, cmd in launch.orphaned_jobs(workdir)),
             "the job to run", process=first)
    os.kill(first.pid, signal.SIGKILL)  # Snakemake alone: its job goes on as an orphan
    first.wait()
    orphans = launch.orphaned_jobs(workdir)
    shells = [pid for pid, cmd in orphans if launch._is_job_shell(cmd)]
    assert shells and len(orphans) >= 2, orphans  # the job's shell and its sleep
    assert locks(workdir)

    (workdir / "fast").touch()  # the resumed job does not wait
    second = subprocess.run([str(REPO / "run.sh"), "snakemake", "-s", str(snakefile),
                             "--directory", str(workdir), "--cores", "1"],
                            capture_output=True, text=True, env=ENV, timeout=120)
    assert second.returncode == 0, second.stderr[-3000:]
    for pid, _ in orphans:
        assert f"  {pid}: " in second.stderr
        assert not alive(pid)
    assert "removing the lock of a run that was killed; resuming" in second.stderr
    assert (workdir / "out.txt").read_text() == "done\n"
    assert locks(workdir) == []
    assert launch.orphaned_jobs(workdir) == []


def test_a_target_swallowed_by_configfile_is_named_with_the_fix(tmp_path, monkeypatch):
    """`--configfile config/paper.yaml results/table2.csv` reads the target as a second config file
    (in a working directory where the target is not built yet)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(launch.LaunchError) as error:
        launch.check_config_files([REPO / "config" / "paper.yaml", Path("results/table2.csv")])
    message = str(error.value)
    assert "results/table2.csv: config file not found" in message
    assert "put the targets before --configfile, or write --configfile=FILE" in message
