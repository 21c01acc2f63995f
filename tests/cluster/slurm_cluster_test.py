#!/usr/bin/env python3
"""A Slurm cluster on this machine running the SSB queries under mqx (issue 35).

Starts munged, slurmctld and one slurmd per node on this host (Slurm's
multiple-slurmd build, which Debian's 22.05 is: `slurmd -N NODE`, a port per
node, "%n" in the spool, pid and log paths), configured with deploy/slurm (the mqxmem
GRES, the Prolog that starts each node's mqxd, the TaskProlog); each node's
mqxd runs on the simulated device with an instance of its own. Then:

  correctness  the 13 SSB queries submitted ROUNDS times with mqx-sbatch across
               the nodes; every job completes and its result equals the CPU
               reference (--check);
  node death   13 queries submitted, and while node n2 runs some of them its
               slurmd, its mqxd and its job processes are killed: Slurm
               requeues its jobs, they finish correctly on n1, each job's
               result is taken once; n2 comes back and runs queries again;
  throughput   (--bench) 13 x BATCH queries with n2 drained, then with both
               nodes, REPEATS times each, with the sim's copies charged in
               real time so that the simulated devices, not the host's cores,
               bind.

Every process started is stopped at the end, on failure and on SIGTERM
too, and nothing of mqx may be left under /dev/shm or /dev/mqueue.

  slurm_cluster_test.py --build BUILD [--rounds N] [--bench] [--repeats N]
                        [--batch N] [--results FILE] [--keep DIR]

Exit 0 passed, 1 failed (one line saying what), 77 skipped: Slurm or munge
is not installed, not root, or the daemons cannot start here.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKIP = 77
QUERIES = ["q1.1", "q1.2", "q1.3", "q2.1", "q2.2", "q2.3", "q3.1", "q3.2", "q3.3", "q3.4", "q4.1", "q4.2", "q4.3"]
REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "slurm"
SBIN = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]


class Skip(Exception):
    """The cluster cannot run here: the test is skipped, not failed."""


class Failure(Exception):
    """What the test found wrong, in one line."""


class Stop(Exception):
    """A signal asked the test to stop."""


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def wait_for(what, predicate, timeout_s, interval_s=0.25):
    """predicate()'s first true value, polling; fails naming what it waited for."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"waited {timeout_s} s for {what}")
        time.sleep(interval_s)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def find_program(name):
    found = shutil.which(name)
    if found:
        return found
    for directory in SBIN:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def environ_of(pid):
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {key.decode(errors="replace"): value.decode(errors="replace") for key, value in pairs}


def processes_with(predicate):
    """Pids of this machine's processes whose environment satisfies predicate."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            environment = environ_of(entry.name)
            if environment and predicate(environment):
                pids.append(int(entry.name))
    return pids


def kill_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def descendants(pids):
    """Every process below pids in the process tree."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def command_of(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Cluster:
    """slurmctld, munged and a slurmd per node, all children of this test."""

    def __init__(self, work, build, data, nodes, mqxmem_mib, job_mib, mqx_config):
        self.work = work
        self.build = build
        self.data = data
        self.nodes = nodes
        self.mqxmem_mib = mqxmem_mib
        self.job_mib = job_mib
        # Every process of this cluster (daemons, steps, tasks) carries the tag
        # in its environment: that is how they are found to be killed.
        self.tag = f"{os.getpid()}-{int(time.time())}"
        self.instance_prefix = f"slurmtest{os.getpid()}"
        self.daemons = {}  # name -> Popen
        self.submitted = {}  # job id -> (query, round label)
        self.jobs_seen = {}  # job id -> scontrol's last view of it
        self.most_running = {}  # node -> the most jobs seen running there at once
        self.conf = work / "slurm.conf"
        self.run_dir = work / "run"
        self.out = work / "out"
        self.out.mkdir()
        self.programs = {name: find_program(name) for name in
                         ["munged", "munge", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "sinfo", "scancel"]}
        self.env = {key: value for key, value in os.environ.items() if not key.startswith(("MQX_", "SLURM_"))}
        self.env.update({
            "SLURM_CONF": str(self.conf),
            "MQX_SLURM_TEST_TAG": self.tag,
            "PATH": os.pathsep.join([str(build / "bin"), str(DEPLOY), *[str(Path(p).parent) for p in self.programs.values() if p], os.environ.get("PATH", "")]),
        })
        (work / "mqx.toml").write_text(mqx_config)

    # --- starting -----------------------------------------------------------

    def check_installed(self):
        missing = [name for name, path in self.programs.items() if path is None]
        if missing:
            raise Skip(f"Slurm or munge is not installed (no {', '.join(missing)}): "
                       "apt-get install slurmctld slurmd slurm-client munge (scripts/install-deps does as root)")
        if os.geteuid() != 0:
            raise Skip("slurmd must run as root to start jobs, and this test is not root")
        if not shutil.which("setpriv") or not shutil.which("flock"):
            raise Skip("the Prolog needs setpriv and flock (util-linux)")

    def start(self):
        munge_dir = self.work / "munge"
        munge_dir.mkdir(mode=0o700)
        key = munge_dir / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        self.munge_socket = munge_dir / "socket"
        self.spawn("munged", [self.programs["munged"], "--foreground", "--force", f"--key-file={key}",
                              f"--socket={self.munge_socket}", f"--pid-file={munge_dir / 'pid'}",
                              f"--log-file={munge_dir / 'log'}", f"--seed-file={munge_dir / 'seed'}"],
                   munge_dir / "out")
        try:
            wait_for("munged's socket", self.munge_socket.exists, 10)
        except Failure:
            raise Skip(f"munged did not start: {self.tail(munge_dir / 'log')} {self.tail(munge_dir / 'out')}")

        self.write_config()
        (self.work / "state").mkdir()
        for node in self.nodes:
            (self.work / "spool" / node).mkdir(parents=True)
        self.spawn("slurmctld", [self.programs["slurmctld"], "-D", "-i", "-f", str(self.conf)], self.work / "slurmctld.out")
        try:
            wait_for("slurmctld to answer", lambda: self.quiet([self.programs["scontrol"], "ping"], "UP"), 20)
        except Failure:
            raise Skip(f"slurmctld did not start: {self.tail(self.work / 'slurmctld.log')} {self.tail(self.work / 'slurmctld.out')}")
        config = self.quiet([self.programs["scontrol"], "show", "config"]) or ""
        if not re.search(r"^MULTIPLE_SLURMD\s*=\s*Yes", config, re.MULTILINE):
            raise Skip("this Slurm is built without --enable-multiple-slurmd (scontrol show config has no "
                       "MULTIPLE_SLURMD = Yes): its nodes cannot share this host")
        for node in self.nodes:
            self.start_slurmd(node)
        try:
            wait_for("every node to be idle", lambda: all(self.node_state(n) == "IDLE" for n in self.nodes), 30)
        except Failure:
            states = {node: self.node_state(node) for node in self.nodes}
            raise Skip(f"the slurmd did not register ({states}): {self.tail(self.work / f'slurmd-{self.nodes[0]}.log')}")

    def spawn(self, name, argv, output, extra_env=None):
        env = dict(self.env, **(extra_env or {}))
        with open(output, "ab") as sink:
            self.daemons[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                                  env=env, start_new_session=True)

    def start_slurmd(self, node):
        self.spawn(f"slurmd-{node}", [self.programs["slurmd"], "-D", "-N", node, "-f", str(self.conf)],
                   self.work / f"slurmd-{node}.out", {"MQX_SLURM_TEST_NODE": node})

    def write_config(self):
        work = self.work
        env_file = work / "slurm.env"
        env_file.write_text(
            f"MQX_SLURM_BIN_DIR={self.build / 'bin'}\n"
            f"MQX_SLURM_RUN_DIR={self.run_dir}\n"
            f"MQX_SLURM_INSTANCE={self.instance_prefix}-%n\n"
            f"MQX_CONFIG={work / 'mqx.toml'}\n")
        # slurmd gives the Prolog a fixed environment, so the environment file
        # is named by a script in front of each of deploy/slurm's.
        hooks = work / "hooks"
        hooks.mkdir()
        for hook in ["prolog", "task-prolog"]:
            path = hooks / hook
            path.write_text(f"#!/bin/sh\nMQX_SLURM_ENV={env_file} exec {DEPLOY / hook}\n")
            path.chmod(0o755)
        host = socket.gethostname().split(".")[0]
        nodes = []
        for node in self.nodes:
            # Several slurmd on one host (MULTIPLE_SLURMD): each node is this
            # host on a port of its own.
            nodes.append(f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={free_port()} "
                         f"CPUs=8 RealMemory=4000 Gres=mqxmem:{self.mqxmem_mib}")
        mqx_part = (DEPLOY / "slurm-mqx.conf.in").read_text()
        mqx_part = (mqx_part.replace("@MQX_SLURM_DIR@", str(hooks)).replace("@MQX_NODES@", "\n".join(nodes))
                    .replace("@MQX_NODE_LIST@", ",".join(self.nodes)))
        self.conf.write_text(f"""# The test's cluster on one host ({REPO / 'tests/cluster/slurm_cluster_test.py'})
ClusterName=mqxtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# A requeued job may start again only after the credentials of its killed
# run expired (cred_expire, 120 s by default): 10 s keeps the test short.
AuthInfo=socket={self.munge_socket},cred_expire=10
StateSaveLocation={work / 'state'}
SlurmdSpoolDir={work / 'spool'}/%n
SlurmctldPidFile={work / 'slurmctld.pid'}
SlurmdPidFile={work / 'spool'}/slurmd-%n.pid
SlurmctldLogFile={work / 'slurmctld.log'}
SlurmdLogFile={work}/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# The nodes say CPUs=8 on a host of 2 cores: mqxmem, not cores, limits how
# many queries a node runs.
SlurmdParameters=config_overrides
# A killed node is noticed within about SlurmdTimeout and comes back when its
# slurmd registers again.
SlurmdTimeout=5
ReturnToService=2
# Each job's end schedules the next at once, not in batches every 3 s.
# Requeued jobs wait for cred_expire and are then started by the backfill
# scheduler: every 5 s rather than 30.
SchedulerParameters=batch_sched_delay=0,bf_interval=5
# Finished jobs stay in slurmctld for the test's final accounting (no slurmdbd).
MinJobAge=3600
{mqx_part}""")

    # --- asking Slurm ---------------------------------------------------------

    def quiet(self, argv, expect=None):
        try:
            result = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            return None
        if result.returncode != 0:
            return None
        return result.stdout if expect is None or expect in result.stdout else None

    def slurm(self, argv, what, extra_env=None):
        result = subprocess.run(argv, env=dict(self.env, **(extra_env or {})), capture_output=True, text=True,
                                timeout=60)
        if result.returncode != 0:
            raise Failure(f"{what} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    def node_state(self, node):
        text = self.quiet([self.programs["scontrol"], "show", "node", node, "-o"]) or ""
        match = re.search(r"\bState=(\S+)", text)
        return match.group(1) if match else "UNKNOWN"

    def jobs(self, ids=None):
        """scontrol's view of every job (or of ids): id -> {key: value}."""
        text = self.slurm([self.programs["scontrol"], "show", "job", "-o"], "scontrol show job")
        jobs = {}
        for line in text.splitlines():
            fields = dict(re.findall(r"(\w+)=(\S*)", line))
            if "JobId" in fields and (ids is None or fields["JobId"] in ids):
                jobs[fields["JobId"]] = fields
        return jobs

    def submit(self, query, label, extra=(), extra_env=None):
        """Submits query with mqx-sbatch; extra_env reaches the job through sbatch's environment.

        Never through --export=ALL,NAME=VALUE: any --export but ALL (NONE, a
        list of names) and --get-user-env make sbatch set SLURM_GET_USER_ENV=1,
        and then slurmd runs the user's login shell (su - USER -c env, for up
        to 120 s, in the thread that would launch the job) before every start
        of the job. The login scripts of the user (root here) are nothing this
        test controls: on the dev box root's waited 60 s for pyenv's rehash
        lock, the jobs did not start within 30 s, and each slurmd waited for
        those threads at SIGTERM."""
        if any(option.startswith(("--export", "--get-user-env")) for option in extra):
            raise Failure(f"submit {query}: {list(extra)}: give the job's variables as extra_env, not --export")
        program = self.build / "bench" / "ssb" / "gpu" / f"ssb-{query}"
        # The job prints which attempt and node it is, then becomes the query:
        # a requeued job's output file holds each attempt in turn.
        attempt = 'echo "# attempt ${SLURM_RESTART_COUNT:-0} on $SLURMD_NODENAME"; exec "$@"'
        argv = ["mqx-sbatch", "--parsable", "--mqxmem", str(self.job_mib), "--name", query,
                f"--output={self.out}/%j.out", "--open-mode=append", *extra, "--",
                "bash", "-c", attempt, "attempt", str(program), "--data", str(self.data), "--check", "--device", "sim"]
        job = self.slurm(argv, f"mqx-sbatch of {query}", extra_env).strip().split(";")[0]
        self.submitted[job] = (query, label)
        return job

    def wait_done(self, ids, timeout_s):
        def done():
            jobs = self.jobs(ids)
            for node in self.nodes:
                running = sum(1 for j in ids if jobs.get(j, {}).get("JobState") == "RUNNING" and jobs[j]["NodeList"] == node)
                self.most_running[node] = max(self.most_running.get(node, 0), running)
            pending = [j for j in ids if jobs.get(j, {}).get("JobState") not in ("COMPLETED", "FAILED", "CANCELLED",
                                                                                 "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL")]
            return not pending
        wait_for(f"{len(ids)} jobs to end", done, timeout_s, 0.2)

    def check_results(self, ids):
        """Each job COMPLETED with exit 0, and its last attempt's result passed the check."""
        jobs = self.jobs(ids)
        self.jobs_seen.update(jobs)
        for job in ids:
            fields = jobs[job]
            query, label = self.submitted[job]
            output = (self.out / f"{job}.out").read_text(errors="replace") if (self.out / f"{job}.out").exists() else ""
            last = output.rsplit("# attempt ", 1)[-1]
            if fields["JobState"] != "COMPLETED" or fields.get("ExitCode") != "0:0":
                raise Failure(f"job {job} ({query}, {label}) ended {fields['JobState']} exit {fields.get('ExitCode')} "
                              f"on {fields.get('NodeList')}: {output.strip().splitlines()[-1:] or 'no output'}")
            if last.count("# check passed") != 1:
                raise Failure(f"job {job} ({query}, {label}): its last attempt did not print '# check passed' once")
        return jobs

    # --- a node's death -------------------------------------------------------

    def node_processes(self, node):
        """The job processes and step daemons of node (not its mqxd, not slurmd)."""
        return processes_with(lambda e: e.get("MQX_SLURM_TEST_TAG") == self.tag and
                              (e.get("SLURMD_NODENAME") == node or e.get("MQX_SLURM_TEST_NODE") == node))

    def mqxd_pids(self, node=None):
        pids = []
        for pid_file in self.run_dir.glob(f"{node or '*'}/*/mqxd.pid"):
            pid = pid_file.read_text().strip()
            if pid.isdigit() and alive(int(pid)) and Path(f"/proc/{pid}/comm").read_text().strip() == "mqxd":
                pids.append(int(pid))
        return pids

    def freeze_node(self, node):
        """Stops everything of node; returns the pids, for kill_frozen.

        Killing one process after another would let the survivors act on
        the first deaths (a job step reporting that its query found no mqxd,
        a Prolog starting a new mqxd), which no dead node does: so all of
        them are stopped first (SIGSTOP, until a scan finds no new one:
        the node's slurmd and mqxd, its job processes and step daemons, and
        the children of any of them), then killed."""
        slurmd = self.daemons[f"slurmd-{node}"]
        frozen = set()
        while True:
            found = ({slurmd.pid} | set(self.mqxd_pids(node)) | set(self.node_processes(node))) - frozen
            found |= set(descendants(frozen | found)) - frozen
            if not found:
                break
            kill_all(found, signal.SIGSTOP)
            frozen |= found
        return frozen

    def kill_frozen(self, node, frozen):
        kill_all(frozen, signal.SIGKILL)
        slurmd = self.daemons[f"slurmd-{node}"]
        try:
            slurmd.wait(10)
        except subprocess.TimeoutExpired:
            raise Failure(f"the slurmd of {node} (pid {slurmd.pid}) did not die within 10 s of SIGKILL")
        del self.daemons[f"slurmd-{node}"]
        wait_for(f"the processes of {node} to die", lambda: not [pid for pid in frozen if alive(pid)], 10, 0.1)

    # --- stopping ---------------------------------------------------------------

    def stop(self):
        """Everything this cluster started, in an order that lets mqxd clean up."""
        # Job processes first: each mqxd then reclaims its dead clients' records
        # and queues (within its liveness interval) before it stops.
        # Not slurmctld's helper (slurmscriptd), which it needs to stop.
        tasks = [pid for pid in processes_with(lambda e: e.get("MQX_SLURM_TEST_TAG") == self.tag and
                                               ("SLURM_JOB_ID" in e or "MQX_SLURM_TEST_NODE" in e))
                 if pid not in {process.pid for process in self.daemons.values()} | set(self.mqxd_pids())]
        kill_all(tasks, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in tasks) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        mqxds = self.mqxd_pids()
        kill_all(mqxds, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in mqxds) and time.monotonic() < deadline:
            time.sleep(0.1)
        kill_all([p for p in mqxds if alive(p)], signal.SIGKILL)
        # What the daemons started and that outlives them (a slurmstepd, or a
        # helper that slurmd killed the daemon waited for) has no tag to be found
        # by: it is found as their descendant now and killed once they stopped.
        below = set(descendants([process.pid for process in self.daemons.values()]))
        # slurmctld first (stopped after the slurmd it waits for them), then the
        # slurmd, then munged, which both still talk to.
        order = [["slurmctld"], [n for n in self.daemons if n.startswith("slurmd-")], ["munged"]]
        for names in order:
            group = {name: self.daemons.pop(name) for name in names if name in self.daemons}
            for process in group.values():
                if process.poll() is None:
                    process.terminate()
            deadline = time.monotonic() + 10
            for name, process in group.items():
                try:
                    process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    # slurmd waits for its request threads before it exits, and
                    # one may wait long (a user environment loaded for a job).
                    log(f"{name} did not stop within 10 s of SIGTERM: killed")
                    process.kill()
                    try:
                        process.wait(10)
                    except subprocess.TimeoutExpired:
                        log(f"{name} (pid {process.pid}) did not die within 10 s of SIGKILL")
        strays = [pid for pid in below if alive(pid)]
        if strays:
            names = sorted({command_of(pid) for pid in strays})
            log(f"killing {len(strays)} processes that the daemons left: {', '.join(names)}")
            kill_all(strays, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while any(alive(p) for p in strays) and time.monotonic() < deadline:
                time.sleep(0.1)

    def leftovers(self):
        prefix = f"mqx-{os.getuid()}-{self.instance_prefix}-"
        found = []
        for directory in ["/dev/shm", "/dev/mqueue"]:
            if os.path.isdir(directory):
                found += [f"{directory}/{name}" for name in os.listdir(directory) if name.startswith(prefix)]
        return found

    @staticmethod
    def tail(path, lines=2):
        try:
            return " | ".join(Path(path).read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return ""


def run_round(cluster, label, count, timeout_s):
    """count x the 13 queries at once; every result checked. Returns (ids, seconds, jobs by node).

    The jobs are submitted held and released together, so that the time is
    the cluster's, not that of 13 x count sbatch calls one after another."""
    ids = [cluster.submit(query, label, ["--hold"]) for _ in range(count) for query in QUERIES]
    started = time.monotonic()
    cluster.slurm([cluster.programs["scontrol"], "release", ",".join(ids)], "scontrol release")
    cluster.wait_done(ids, timeout_s)
    seconds = time.monotonic() - started
    jobs = cluster.check_results(ids)
    per_node = {}
    for job in ids:
        per_node[jobs[job]["NodeList"]] = per_node.get(jobs[job]["NodeList"], 0) + 1
    log(f"{label}: {len(ids)} jobs correct in {seconds:.1f} s, by node {per_node}")
    return ids, seconds, per_node


def node_death(cluster, victim, survivor, timeout_s):
    """13 queries; victim dies while it runs some of them. Returns the facts for the report."""
    # Slower copies (about 5 s a query) for this round: the node dies while
    # its queries are surely mid-run, not between two of them.
    slow = {"MQX_SIM_COPY_BANDWIDTH_GBPS": "0.002"}
    ids = [cluster.submit(query, "node death", extra_env=slow) for query in QUERIES]

    def running_on_victim():
        jobs = cluster.jobs(ids)
        running = [j for j in ids if jobs[j]["JobState"] == "RUNNING" and jobs[j]["NodeList"] == victim]
        return running if len(running) >= 2 else None
    on_victim = wait_for(f"two jobs running on {victim}", running_on_victim, 60)
    # Let their queries get under way (data loaded, device memory held)
    # before the node dies.
    wait_for(f"a query of {victim} to start its device work",
             lambda: any("# attempt 0" in (cluster.out / f"{j}.out").read_text(errors="replace")
                         for j in on_victim if (cluster.out / f"{j}.out").exists()), 30)
    time.sleep(0.5)
    frozen = cluster.freeze_node(victim)
    # What slurmctld saw running there once nothing of the node can report
    # any more (and a report already sent has arrived) is what died.
    time.sleep(0.5)
    jobs = cluster.jobs(ids)
    on_victim = [j for j in ids if jobs[j]["JobState"] == "RUNNING" and jobs[j]["NodeList"] == victim]
    log(f"killing node {victim} (slurmd, mqxd, {len(on_victim)} running jobs, {len(frozen)} processes in all)")
    killed_at = time.monotonic()
    cluster.kill_frozen(victim, frozen)
    if not on_victim:
        raise Failure(f"no job ran on {victim} any more when it was killed")
    wait_for(f"Slurm to mark {victim} down and requeue its jobs",
             lambda: cluster.node_state(victim).startswith("DOWN"), 60, 0.5)
    detected_s = time.monotonic() - killed_at
    cluster.wait_done(ids, timeout_s)
    jobs = cluster.check_results(ids)
    requeued = [j for j in ids if int(jobs[j].get("Restarts", "0")) > 0]
    missing = [j for j in on_victim if j not in requeued]
    if missing:
        raise Failure(f"jobs {missing} were running on {victim} when it died but were not requeued")
    for job in requeued:
        if jobs[job]["NodeList"] != survivor:
            raise Failure(f"requeued job {job} finished on {jobs[job]['NodeList']}, not on {survivor}")
        # The first attempt was killed: its output must not hold a result that
        # would be counted beside the rerun's.
        attempts = (cluster.out / f"{job}.out").read_text(errors="replace").split("# attempt ")[1:]
        if not attempts or int(attempts[-1].split()[0]) != int(jobs[job]["Restarts"]):
            raise Failure(f"requeued job {job}: its output's last attempt is not restart {jobs[job]['Restarts']}")
    results = {}
    for job in ids:
        results.setdefault(cluster.submitted[job], []).append(job)
    twice = {key: value for key, value in results.items() if len(value) != 1}
    if twice or len(results) != len(QUERIES):
        raise Failure(f"results not counted exactly once per query: {twice or len(results)}")
    log(f"node death: {len(on_victim)} jobs were running on {victim}, {len(requeued)} requeued, all 13 correct; "
        f"Slurm saw the node down after {detected_s:.1f} s")
    return {"jobs": len(ids), "running_on_killed_node": len(on_victim), "requeued": len(requeued),
            "detected_down_s": round(detected_s, 1), "failed": 0}


def throughput(cluster, repeats, batch):
    """13 x batch queries on n1 alone (n2 drained), then on both, repeats times, alternating."""
    runs = {"one_node": [], "two_nodes": []}
    scontrol = cluster.programs["scontrol"]
    for repeat in range(repeats):
        for mode in runs:
            state = "DRAIN reason=throughput_on_one_node" if mode == "one_node" else "RESUME"
            cluster.slurm([scontrol, "update", "NodeName=n2", *f"State={state}".split()], f"draining or resuming n2")
            expected = "IDLE+DRAIN" if mode == "one_node" else "IDLE"
            wait_for(f"n2 to be {expected}", lambda: cluster.node_state("n2") == expected, 30)
            ids, seconds, per_node = run_round(cluster, f"throughput, {mode}, #{repeat + 1}", batch, 600)
            if mode == "one_node" and set(per_node) != {"n1"}:
                raise Failure(f"with n2 drained the jobs ran on {per_node}")
            runs[mode].append({"jobs": len(ids), "seconds": round(seconds, 2), "jobs_per_s": round(len(ids) / seconds, 3),
                               "by_node": per_node})
    summary = {}
    for mode, measured in runs.items():
        rates = [run["jobs_per_s"] for run in measured]
        summary[mode] = {"median_jobs_per_s": round(statistics.median(rates), 3), "min": min(rates), "max": max(rates),
                         "runs": measured}
    summary["speedup_median"] = round(summary["two_nodes"]["median_jobs_per_s"] / summary["one_node"]["median_jobs_per_s"], 2)
    log(f"throughput: one node {summary['one_node']['median_jobs_per_s']} jobs/s "
        f"({summary['one_node']['min']}-{summary['one_node']['max']}), two nodes "
        f"{summary['two_nodes']['median_jobs_per_s']} ({summary['two_nodes']['min']}-{summary['two_nodes']['max']}): "
        f"{summary['speedup_median']}x")
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--data", type=Path, help="SSB data (default BUILD/tests/cluster/ssb-sfSF)")
    parser.add_argument("--sf", default="0.05")
    parser.add_argument("--rounds", type=int, default=2, help="the 13 queries this many times over in the correctness part")
    parser.add_argument("--bench", action="store_true", help="also measure throughput with one node against two")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=2, help="throughput: 13 x BATCH jobs per measurement")
    parser.add_argument("--copy-gbps", default="0.01", help="the simulated device's copy bandwidth (sim.copy_bandwidth_gbps)")
    parser.add_argument("--results", type=Path, help="write the run's facts as JSON")
    parser.add_argument("--keep", type=Path, help="keep the cluster's files (logs, outputs) here")
    parser.add_argument("--deadline", type=int, default=540, help="seconds before the test stops itself")
    args = parser.parse_args()

    build = args.build.resolve()
    data = (args.data or build / "tests" / "cluster" / f"ssb-sf{args.sf}").resolve()
    for need in [build / "bin" / "mqxd", build / "bin" / "mqx-run", build / "bench/ssb/gpu/ssb-q4.3",
                 build / "bench/ssb/datagen/ssb-datagen"]:
        if not need.exists():
            print(f"slurm_cluster_test: {need} is missing; build mqxd mqx-run ssb-queries ssb-datagen", file=sys.stderr)
            return 1

    def stop(signum, _frame):
        raise Stop(f"stopped by signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(sig, stop)
    signal.alarm(args.deadline)

    work = Path(tempfile.mkdtemp(prefix="mqx-slurm-"))
    # The sim's copies take their charged time (realtime) at a bandwidth that
    # makes a query last about a second: long enough to die mid-run, and
    # each node's device, not the host's cores, limits the throughput.
    config = (f'[backend]\nkind = "sim"\n[sim]\ncapacity = "64MiB"\nrealtime = true\n'
              f'copy_bandwidth_gbps = {args.copy_gbps}\n'
              '[daemon]\nliveness_interval_ms = 100\nadmission_timeout_s = 300\n')
    cluster = Cluster(work, build, data, ["n1", "n2"], mqxmem_mib=64, job_mib=16, mqx_config=config)
    facts = {"commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=7", "HEAD"], capture_output=True,
                                      text=True).stdout.strip(),
             "nodes": cluster.nodes, "multi_slurmd": "one host: MULTIPLE_SLURMD build, slurmd -N per node, a port each",
             "sf": args.sf, "sim_copy_bandwidth_gbps": float(args.copy_gbps), "sim_realtime": True,
             "node_mqxmem_mib": cluster.mqxmem_mib, "job_mqxmem_mib": cluster.job_mib,
             "host": f"{os.cpu_count()} cores shared with other work"}
    status = 0
    started = time.monotonic()
    try:
        cluster.check_installed()
        if not (data / "manifest.json").exists():
            log(f"generating SSB SF {args.sf} into {data}")
            subprocess.run([str(build / "bench/ssb/datagen/ssb-datagen"), "--sf", args.sf, "--seed", "1",
                            "--out", str(data), "--quiet"], check=True, timeout=300)
        cluster.start()
        log(f"cluster up in {time.monotonic() - started:.1f} s: slurmctld, {len(cluster.nodes)} slurmd, munged ({work})")
        gres = cluster.slurm([cluster.programs["sinfo"], "-h", "-N", "-o", "%N %G"], "sinfo")
        if sorted(set(gres.split("\n")) - {""}) != [f"{node} mqxmem:{cluster.mqxmem_mib}" for node in cluster.nodes]:
            raise Failure(f"Slurm does not see each node's mqxmem:{cluster.mqxmem_mib}: sinfo says {gres.strip()!r}")
        ids, seconds, per_node = run_round(cluster, "correctness", args.rounds, 300)
        if len(per_node) < 2:
            raise Failure(f"all {len(ids)} jobs ran on {list(per_node)}: Slurm did not spread them over the nodes")
        # Slurm places by mqx's capacity: no node ran more queries at once than
        # its mqxmem holds of their requests.
        limit = cluster.mqxmem_mib // cluster.job_mib
        if any(count > limit for count in cluster.most_running.values()):
            raise Failure(f"a node ran more than {limit} jobs of mqxmem:{cluster.job_mib} at once: {cluster.most_running}")
        log(f"at most {cluster.most_running} jobs ran at once on each node (mqxmem allows {limit})")
        # A job step through mqx-srun, its result checked as the batch jobs' are.
        step = subprocess.run(["mqx-srun", "--mqxmem", str(cluster.job_mib), "--", str(build / "bench/ssb/gpu/ssb-q2.1"),
                               "--data", str(data), "--check", "--device", "sim"], env=cluster.env, capture_output=True,
                              text=True, timeout=120)
        if step.returncode != 0 or step.stdout.count("# check passed") != 1:
            raise Failure(f"mqx-srun of q2.1 exited {step.returncode}: {(step.stdout + step.stderr).strip().splitlines()[-1:]}")
        log("mqx-srun: q2.1 as a job step, correct")
        facts["correctness"] = {"jobs": len(ids), "failed": 0, "seconds": round(seconds, 1), "by_node": per_node}
        facts["node_death"] = node_death(cluster, "n2", "n1", 300)
        # The node comes back: its slurmd registers again, its Prolog starts a
        # new mqxd, which clears what the killed one left.
        cluster.start_slurmd("n2")
        wait_for("n2 to come back idle", lambda: cluster.node_state("n2") == "IDLE", 60, 0.5)
        back = [cluster.submit(query, "after return", ["--nodelist=n2"]) for query in QUERIES[:3]]
        cluster.wait_done(back, 120)
        cluster.check_results(back)
        log("n2 is back and runs queries correctly")
        facts["after_return"] = {"jobs": len(back), "failed": 0}
        if args.bench:
            facts["throughput"] = throughput(cluster, args.repeats, args.batch)
    except Skip as skip:
        print(f"SKIP: {skip}", flush=True)
        status = SKIP
    except (Failure, Stop, subprocess.SubprocessError) as failure:
        print(f"FAILED: {failure}", file=sys.stderr, flush=True)
        status = 1
    finally:
        signal.alarm(0)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # the teardown runs to its end
        stopping = time.monotonic()
        cluster.stop()
        log(f"cluster stopped in {time.monotonic() - stopping:.1f} s")
        left = cluster.leftovers()
        if left and status != SKIP:
            print(f"FAILED: left behind: {' '.join(left)}", file=sys.stderr)
            status = status or 1
        for path in left:
            os.unlink(path)
        if args.keep:
            # Sockets and fifos (munge's, slurmstepd's) cannot be copied.
            shutil.copytree(work, args.keep, dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if not (Path(d) / n).is_file() and not (Path(d) / n).is_dir()])
        shutil.rmtree(work, ignore_errors=True)
    facts["test_seconds"] = round(time.monotonic() - started, 1)
    jobs = cluster.jobs_seen
    facts["totals"] = {"jobs": len(jobs), "failed": sum(1 for state in jobs.values() if state["JobState"] != "COMPLETED"),
                       "requeues": sum(int(state.get("Restarts", "0")) for state in jobs.values())}
    if status == 0:
        log(f"passed in {facts['test_seconds']} s")
        if args.results:
            args.results.write_text(json.dumps(facts, indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
