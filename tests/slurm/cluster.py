"""A one-node SLURM cluster on this machine, for the SLURM profile's test and by hand.

    python tests/slurm/cluster.py start DIR   # prints the environment to export (SLURM_CONF, PATH)
    python tests/slurm/cluster.py stop DIR

Debian's `munge`, `slurmctld`, `slurmd` and `slurm-client` packages, run as root without systemd:
munged, slurmctld and slurmd are started as daemons that write pid files under DIR, and are
stopped by those process ids. Everything the cluster writes (munge key and socket, slurm.conf,
state, spool, logs, pid files) stays under DIR; nothing under /etc is touched, so the clients find
the cluster through SLURM_CONF. The node is this host (`hostname -s`, reached on 127.0.0.1) with
the CPUs and memory the machine has (nproc, /proc/meminfo); one partition `debug`. The choices
that make it run in a container:

* no accounting database (AccountingStorageType=accounting_storage/none, no job accounting
  gather): `sacct` cannot answer, so Snakemake's SLURM plugin must query `squeue`, and MinJobAge
  keeps finished jobs visible to squeue for 10 minutes (the plugin falls back to sacct when
  MinJobAge is below 3x its first status-check delay);
* no cgroups (proctrack/linuxproc, task/none);
* batch_sched_delay=0: a job starts within a second of its submission or of a free CPU;
* `bin/srun`: the jobstep executor that runs inside each batch job drops every SLURM_* variable
  but the job's ids before it calls `srun`, so SLURM_CONF would not reach it; this shim puts it
  back (on a real cluster slurm.conf is at its default path or served by slurmctld).
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "srun")
PARTITION = "debug"


def missing_binaries():
    """The daemons and clients this cluster needs that are not installed ([] when all are)."""
    return [b for b in DAEMONS + CLIENTS if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def _binary(name):
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mb():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


class SlurmCluster:
    def __init__(self, root):
        self.root = Path(root).resolve()
        self.conf = self.root / "slurm.conf"
        self.node = socket.gethostname().split(".")[0]
        self.cpus = os.cpu_count()
        # slurmd drains a node whose configured memory exceeds what it finds; leave it a margin.
        self.memory_mb = int(_memory_mb() * 0.9)
        self.bin_dir = self.root / "bin"  # the srun shim
        self.pid_files = {name: self.root / f"{name}.pid" for name in DAEMONS}
        self.logs = {name: self.root / f"{name}.log" for name in DAEMONS}

    @property
    def env(self):
        """The variables a client (sbatch, squeue, Snakemake's SLURM plugin) needs."""
        return {"SLURM_CONF": str(self.conf), "PATH": f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def _run(self, *cmd, **kw):
        return subprocess.run(cmd, env={**os.environ, **self.env}, capture_output=True, text=True, **kw)

    def write_config(self):
        for d in ("munge", "state", "spool", "bin"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o700)
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        (self.root / "plugstack.conf").write_text("")
        self.conf.write_text(f"""\
# One-node test cluster written by tests/slurm/cluster.py
ClusterName=worldmemory-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.root / 'munge' / 'munge.socket'}
StateSaveLocation={self.root / 'state'}
SlurmdSpoolDir={self.root / 'spool'}
SlurmctldPidFile={self.pid_files['slurmctld']}
SlurmdPidFile={self.pid_files['slurmd']}
SlurmctldLogFile={self.logs['slurmctld']}
SlurmdLogFile={self.logs['slurmd']}
PlugStackConfig={self.root / 'plugstack.conf'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")
        srun = self.bin_dir / "srun"
        srun.write_text(f'#!/bin/sh\nSLURM_CONF={self.conf} exec {shutil.which("srun")} "$@"\n')
        srun.chmod(0o755)

    def start(self, timeout=60):
        """Write the configuration, start munged, slurmctld and slurmd, and wait until the node
        takes jobs."""
        self.stop()  # daemons a crashed earlier run left behind
        self.write_config()
        munge = self.root / "munge"
        self._daemon("munged", "--force", f"--socket={munge / 'munge.socket'}", f"--key-file={munge / 'munge.key'}",
                     f"--pid-file={self.pid_files['munged']}", f"--log-file={self.logs['munged']}",
                     f"--seed-file={munge / 'munged.seed'}")
        # -i: ignore state a previous cluster in this directory saved.
        self._daemon("slurmctld", "-i", "-f", str(self.conf))
        self._daemon("slurmd", "-f", str(self.conf), "-N", self.node)
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = self._run("sinfo", "--noheader", "--format=%t", "--partition", PARTITION).stdout.strip()
            if state == "idle":
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the SLURM node did not become idle in {timeout} s (state {state!r})\n{self.tail_logs()}")

    def _daemon(self, name, *args):
        pid_file = self.pid_files[name]
        result = subprocess.run([_binary(name), *args], env={**os.environ, **self.env},
                                capture_output=True, text=True, timeout=30)
        for _ in range(100):
            if pid_file.exists() and pid_file.read_text().strip():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not start (exit {result.returncode}): {result.stderr}\n{self.tail_logs()}")

    def stop(self, timeout=10):
        """Stop the daemons by the process ids in their pid files (slurmd first, munged last)."""
        for name in reversed(DAEMONS):
            pid_file = self.pid_files[name]
            try:
                pid = int(pid_file.read_text().strip())
            except (FileNotFoundError, ValueError):
                continue
            if _alive(pid, name):
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + timeout
                while _alive(pid, name) and time.monotonic() < deadline:
                    time.sleep(0.1)
                if _alive(pid, name):
                    os.kill(pid, signal.SIGKILL)
            pid_file.unlink(missing_ok=True)

    def tail_logs(self, lines=20):
        out = []
        for log in self.logs.values():
            if log.exists():
                out.append(f"--- {log}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(out)


def _alive(pid, name):
    """Whether ``pid`` is still a running ``name`` (a pid file can outlive its process)."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return comm == name and state != "Z"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("dir", type=Path)
    args = parser.parse_args(argv)
    cluster = SlurmCluster(args.dir)
    if args.action == "start":
        if missing := missing_binaries():
            sys.exit(f"missing: {' '.join(missing)} (apt-get install slurmctld slurmd slurm-client munge)")
        cluster.start()
        for key, value in cluster.env.items():
            print(f"export {key}={value}")
    else:
        cluster.stop()


if __name__ == "__main__":
    main()
