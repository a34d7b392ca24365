"""Fault trials: ingest and refreshes killed, the broker down, killed, frozen and restarted, and
every run twice at once, each checked against a run without the fault.

    python -m proving_ground.fault_trials [--ingest-kills 24] [--refresh-kills 10] [--quick]

It starts its own embedded Apache Kafka broker (a second one for the broker faults), writes
generated coordinator history into regular topics laid out like `__consumer_offsets`, and runs
every ingest, refresh, plan and apply in a child process (proving_ground.cli_process: the real
`offsets-platform` command line with fault points). Prints one line per trial, then a summary
table; exits 1 if any trial failed. docs/fault-trials.md says what each trial checks.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_platform.broker.embedded import EmbeddedBroker, free_loopback_port
from offsets_platform.ingest.offsets_topic import CHECKPOINTS, ingest_offsets_topic
from offsets_platform.lake import Lake
from offsets_platform.lake.tables import RECORD_TABLES
from offsets_platform.settings import USER_ENV, KafkaConnection
from proving_ground import lake_checks
from proving_ground.cli_process import start_cli_process
from proving_ground.workload import create_history_topic, generate, produce_records

START_MS = 1_700_000_000_000  # the simulated history's start: fixed, so every run sees the same bytes
AS_OF = "2023-11-25 00:00:00"  # the models' "now": after the history, the same for every refresh
SEED = 11
BATCH_RECORDS = 5_000  # records per ingest batch: many Delta commits, so many points to be killed at
CHILD_TIMEOUT_S = 300
# A broker that stops answering mid-read fails ingest after the reader's 15 s without a record;
# this bound adds the time to close the run and to start the child process.
BROKER_FAULT_BOUND_S = 45.0
QUIET = {"emit": lambda line: None}


@dataclass
class Trial:
    section: str
    name: str
    problems: list[str]
    seconds: float
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class Section:
    title: str
    checked: str
    trials: list[Trial] = field(default_factory=list)


class Child:
    """A `proving_ground.cli_process` child in a process group of its own (its Spark JVM too),
    its output collected as it comes."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None):
        self.started = time.monotonic()
        self.process = start_cli_process(command, start_new_session=True, env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        self.ready_at: float | None = None
        self.stderr = ""
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            if line.rstrip() == "READY" and self.ready_at is None:
                self.ready_at = time.monotonic()
            self.lines.append(line.rstrip())

    def _read_stderr(self) -> None:
        self.stderr = self.process.stderr.read()

    def wait_ready(self, timeout_s: float = 120) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.ready_at is None and self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.ready_at is not None

    def kill(self) -> None:
        """SIGKILL the whole group (the Python process and any JVM it started)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout_s: float = CHILD_TIMEOUT_S) -> int | None:
        """The exit status, or None if it did not end within `timeout_s` (it is then killed)."""
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
            code = None
        self.kill()  # whatever it left in its group (a Spark JVM whose Python was killed)
        for reader in self._readers:
            reader.join(10)
        return code

    @property
    def stdout(self) -> str:
        return "\n".join(self.lines)


class Trials:
    """The trials and their report."""

    def __init__(self, args: argparse.Namespace, scratch: Path):
        self.args = args
        self.scratch = scratch
        self.random = random.Random(args.seed)
        self.sections: dict[str, Section] = {}
        self.spark = None

    # reporting

    def section(self, key: str, title: str, checked: str) -> Section:
        return self.sections.setdefault(key, Section(title, checked))

    def record(self, key: str, name: str, started: float, problems: list[str], note: str = "",
               said: str = "") -> Trial:
        section = self.sections[key]
        trial = Trial(section.title, name, problems, time.monotonic() - started, note)
        section.trials.append(trial)
        number = f"{len(section.trials)}"
        verdict = "ok" if trial.ok else "FAILED"
        print(f"[{section.title} {number}] {name}: {verdict} ({trial.seconds:.1f} s{'; ' + note if note else ''})",
              flush=True)
        if said:
            print(f"    it said: {said}", flush=True)
        for problem in problems:
            print(f"    {problem}", flush=True)
        return trial

    def summary(self) -> int:
        print()
        width = max(len(section.title) for section in self.sections.values())
        print(f"{'trials':<{width}}  {'run':>3}  {'failed':>6}  checked")
        for section in self.sections.values():
            if not section.trials:
                continue
            failed = sum(not trial.ok for trial in section.trials)
            print(f"{section.title:<{width}}  {len(section.trials):>3}  {failed:>6}  {section.checked}")
        total = sum(len(section.trials) for section in self.sections.values())
        failures = sum(not t.ok for section in self.sections.values() for t in section.trials)
        print(f"{total} trials, {failures} failed")
        return 1 if failures else 0

    # helpers

    def folder(self, name: str) -> Path:
        path = self.scratch / name
        path.mkdir(parents=True, exist_ok=False)
        return path

    def get_spark(self):
        if self.spark is None:
            from offsets_platform.lake.spark import get_spark

            self.spark = get_spark(master="local[2]")
        return self.spark

    def refresh(self, lake_root: Path, full: bool = False, as_of: str | None = AS_OF) -> None:
        """A refresh in this process (its Spark session stays warm between refreshes)."""
        from offsets_platform.models import ModelRunner

        ModelRunner(self.get_spark(), Lake(lake_root), variables={"as_of": as_of} if as_of else None,
                    lease_wait_s=30, **QUIET).run_all(full_refresh=full)

    def full_refresh_of_a_copy(self, lake_root: Path, name: str) -> Path:
        """A fresh copy of the lake's bronze tables, refreshed from scratch: the reference."""
        copy = lake_checks.copy_lake(lake_root, self.scratch / name / "lake", layers=("bronze",))
        self.refresh(copy, full=True)
        return copy


def history_topic(bootstrap: str, topic: str, records: int, first: int = 0, count: int | None = None) -> None:
    """Records [first, first + count) of the generated history, appended to `topic`."""
    create_history_topic(bootstrap, topic)
    stream = generate(seed=SEED, records=records, start_ms=START_MS)
    part = (record for index, record in enumerate(stream) if first <= index < first + (count or records))
    produce_records(bootstrap, part, topic=topic)


def ingest_command(bootstrap: str, home: Path, topic: str, *options: str) -> list[str]:
    return [*options, "--", "ingest", "--bootstrap-server", bootstrap, "--home", str(home), "--offsets-topic", topic]


def ingest_in_child(bootstrap: str, home: Path, topic: str, *options: str) -> tuple[Child, int | None]:
    child = Child(ingest_command(bootstrap, home, topic, "--batch-records", str(BATCH_RECORDS), *options))
    return child, child.wait()


def ordinal(number: int) -> str:
    return f"{number}{'th' if 10 <= number % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th')}"


# Ingest killed with SIGKILL


def ingest_kills(trials: Trials, bootstrap: str) -> None:
    key = "ingest"
    trials.section(key, "ingest SIGKILL", "every table readable; the lease free; no duplicate; only rows a clean "
                   "ingest wrote, none missing below the checkpoint; the rerun equals a clean ingest into a fresh lake")
    records, topic = trials.args.records, "history-ingest"
    history_topic(bootstrap, topic, records)
    connection = KafkaConnection(bootstrap, offsets_topic=topic)
    reference = trials.folder("ingest-reference")
    started = time.monotonic()
    child, code = ingest_in_child(bootstrap, reference, topic)
    if code != 0 or child.ready_at is None:
        raise SystemExit(f"the clean ingest failed ({code}): {child.stderr[-2000:]}")
    duration = time.monotonic() - child.ready_at
    batches = -(-records // BATCH_RECORDS)
    print(f"clean ingest of {records:,} records in batches of {BATCH_RECORDS:,}: {duration:.1f} s after its imports "
          f"({time.monotonic() - started:.1f} s in all)", flush=True)
    reference_lake = reference / "lake"

    # Exact points: right after each table's commit, in the first batch and in a middle one; then
    # random times over a run's length.
    exact = [(table, batch) for batch in (1, max(2, batches // 3)) for table in (*RECORD_TABLES, CHECKPOINTS)]
    exact = exact[:(trials.args.ingest_kills + 1) // 2]  # half of the trials (12 of 24), the rest random
    for number in range(trials.args.ingest_kills):
        home = trials.folder(f"ingest-kill-{number + 1}")
        started = time.monotonic()
        if number < len(exact):
            table, batch = exact[number]
            name = f"SIGKILL right after the {ordinal(batch)} commit of {table}"
            child, code = ingest_in_child(bootstrap, home, topic, "--die-after-write", f"{table}:{batch}")
            when = ""
        else:
            # within the first 80% of a clean run's time: its end is closing the client and exiting
            delay = trials.random.uniform(0, 0.8 * duration)
            name = f"SIGKILL at a random time, {delay:.2f} s into the run"
            child = Child(ingest_command(bootstrap, home, topic, "--batch-records", str(BATCH_RECORDS)))
            child.wait_ready()
            time.sleep(max(0.0, delay - (time.monotonic() - child.ready_at)))
            child.kill()
            code = child.wait()
            when = "" if code == -signal.SIGKILL else f"the run had ended first (exit {code})"
        problems = [] if code == -signal.SIGKILL or when else [f"exit {code}, not SIGKILL: {child.stderr[-500:]}"]
        lake_root = home / "lake"
        problems += lake_checks.unreadable(lake_root, lake_checks.INGEST_TABLES)
        problems += lake_checks.held_leases(lake_root)
        kept = lake_checks.bronze_counts(lake_root) if not problems else 0
        if not problems:
            problems += [f"after the kill: {p}" for p in lake_checks.bronze_differences(lake_root, reference_lake,
                                                                                       partial=True)]
        try:  # the rerun, with no wait: the killed run's lease went with its process
            rerun = ingest_offsets_topic(connection, Lake(lake_root), batch_records=BATCH_RECORDS, lease_wait_s=0,
                                         **QUIET)
            problems += [f"after the rerun: {p}" for p in lake_checks.bronze_differences(lake_root, reference_lake)]
            note = f"{kept:,} rows kept, the rerun read {rerun.records_read:,} records"
        except Exception as error:
            problems.append(f"the rerun failed: {type(error).__name__}: {error}")
            note = ""
        trials.record(key, name, started, problems, "; ".join(filter(None, [when, note])))


# Refresh killed with SIGKILL


def refresh_kills(trials: Trials, bootstrap: str) -> None:
    key = "refresh"
    trials.section(key, "refresh SIGKILL", "every table readable; the leases free; the next refresh's model tables "
                   "equal a full refresh of a fresh copy of the lake's bronze tables")
    records, topic = trials.args.records, "history-refresh"
    connection = KafkaConnection(bootstrap, offsets_topic=topic)
    # The base: the first part of the log ingested and refreshed, the rest ingested since, so that
    # the killed refresh is an incremental one (merges into tables that runs already wrote).
    base = trials.folder("refresh-base") / "lake"
    first = records * 2 // 3
    history_topic(bootstrap, topic, records, 0, first)
    ingest_offsets_topic(connection, Lake(base), **QUIET)
    started = time.monotonic()
    trials.refresh(base)
    print(f"base lake: {first:,} records ingested and refreshed ({time.monotonic() - started:.1f} s)", flush=True)
    history_topic(bootstrap, topic, records, first, records - first)
    ingest_offsets_topic(connection, Lake(base), **QUIET)
    started = time.monotonic()
    reference = trials.full_refresh_of_a_copy(base, "refresh-reference")
    print(f"reference: a full refresh of a copy of the bronze tables ({time.monotonic() - started:.1f} s)", flush=True)

    def models_child(home: Path, *options: str) -> Child:
        lake_checks.copy_lake(base, home / "lake")
        return Child([*options, "--as-of", AS_OF, "--", "models", "--home", str(home)],
                     env={"OFFSETS_PLATFORM_SPARK_MASTER": "local[2]"})

    # The length of a refresh in a child process, from its imports done to its end.
    home = trials.folder("refresh-timing")
    child = models_child(home)
    code = child.wait()
    if code != 0 or child.ready_at is None:
        raise SystemExit(f"the refresh without a fault failed ({code}): {child.stderr[-2000:]}")
    duration = time.monotonic() - child.ready_at
    models = lake_checks.model_tables()
    per_model = duration / len(models)
    print(f"a refresh in a child process: {duration:.1f} s after its imports, {len(models)} models", flush=True)
    unfaulted = lake_checks.model_differences(home / "lake", reference)
    if unfaulted:
        raise SystemExit(f"a refresh without a fault differs from a full refresh: {unfaulted}")

    # Exact points: right after an incremental model's merge, and a table model's overwrite,
    # before either run is recorded; then random times over a refresh's length.
    exact = ["log_offset_state", "offset_commit_counts", "offset_removals", "committed_offsets"]
    exact = exact[:trials.args.refresh_kills // 2]
    for number in range(trials.args.refresh_kills):
        home = trials.folder(f"refresh-kill-{number + 1}")
        started = time.monotonic()
        if number < len(exact):
            name = f"SIGKILL right after {exact[number]}'s table was written, before its run was recorded"
            child = models_child(home, "--die-after-model-write", exact[number])
            code = child.wait()
            when = ""
        else:
            # A random point of the refresh: once a random number of models finished, a random part
            # of a model's time later (a fixed delay would land past the end when the machine is
            # busier than when the refresh was timed).
            finished, delay = trials.random.randrange(len(models) - 1), trials.random.uniform(0, per_model)
            name = f"SIGKILL at a random time, {delay:.1f} s after {finished} models finished"
            child = models_child(home)
            child.wait_ready()
            while _models_finished(child) < finished and child.process.poll() is None:
                time.sleep(0.02)
            time.sleep(delay)
            child.kill()
            code = child.wait()
            when = "" if code == -signal.SIGKILL else f"the refresh had ended first (exit {code})"
        problems = [] if code == -signal.SIGKILL or when else [f"exit {code}, not SIGKILL: {child.stderr[-500:]}"]
        done = _models_finished(child)
        lake_root = home / "lake"
        problems += lake_checks.unreadable(lake_root, [*lake_checks.model_tables(), "model_runs"])
        problems += lake_checks.held_leases(lake_root)
        try:
            rerun_started = time.monotonic()
            trials.refresh(lake_root)
            rerun_s = time.monotonic() - rerun_started
            problems += [f"after the rerun: {p}" for p in lake_checks.model_differences(lake_root, reference)]
        except Exception as error:
            problems.append(f"the rerun failed: {type(error).__name__}: {error}")
            rerun_s = 0.0
        trials.record(key, name, started, problems,
                      "; ".join(filter(None, [when, f"{done} models done before the kill, rerun {rerun_s:.0f} s"])))


def _models_finished(child: Child) -> int:
    """Models a refresh reported done ("[3/16] model silver.x: full, ...")."""
    return sum(line.startswith("[") and ": " in line for line in list(child.lines))


# The broker down, killed, frozen, restarted


def broker_faults(trials: Trials, main_broker: EmbeddedBroker) -> None:
    """On a broker of their own (it is killed and restarted); with --quick, only the broker down at
    start and frozen, on the main broker (which a freeze leaves as it was)."""
    key = "broker"
    trials.section(key, "broker faults", "ingest ends within a bound with a message naming the address and what "
                   "to check, no traceback; the lake as before or a whole checkpointed prefix; the rerun equals a "
                   "clean ingest")
    records, topic, quick = trials.args.records, "history-faults", trials.args.quick
    broker = main_broker if quick else EmbeddedBroker(trials.scratch / "fault-broker").start()
    try:
        history_topic(broker.bootstrap_servers, topic, records)
        connection = KafkaConnection(broker.bootstrap_servers, offsets_topic=topic)
        reference = trials.folder("faults-reference") / "lake"
        ingest_offsets_topic(connection, Lake(reference), batch_records=BATCH_RECORDS, **QUIET)
        broker = _down_at_start(trials, key, broker, connection, reference, new_home=not quick)
        for fault in ("frozen",) if quick else ("killed", "frozen", "restarted"):
            broker = _fault_mid_ingest(trials, key, fault, broker, connection, reference)
    finally:
        if broker is not main_broker:
            broker.stop()


def _message(child: Child) -> str:
    """What a failed run told its operator (the last line of stderr), up to "Check that"."""
    lines = child.stderr.strip().splitlines()
    return lines[-1].split(" Check that")[0] if lines else ""


def _clear_message(child: Child, address: str) -> list[str]:
    """The last line of stderr is the message; it names the address and what to check."""
    problems = []
    if "Traceback" in child.stderr:
        problems.append("stderr holds a traceback")
    lines = child.stderr.strip().splitlines()
    last = lines[-1] if lines else ""
    if not last.startswith(f"error: Kafka at {address} did not answer: ") or "Check that the broker" not in last:
        problems.append(f"the message does not name the address and what to check: {last[:300]!r}")
    return problems


def _down_at_start(trials: Trials, key: str, broker: EmbeddedBroker, connection: KafkaConnection,
                   reference: Path, new_home: bool = True) -> EmbeddedBroker:
    """Two runs against a port nothing listens on: into a new home, and into a lake already holding a
    prefix of the log; then the rerun on the real broker."""
    address = f"127.0.0.1:{free_loopback_port()}"
    home = trials.folder("faults-down")
    lake_root = home / "lake"
    # a prefix first: a run stopped after its second checkpoint
    ingest_in_child(broker.bootstrap_servers, home, connection.offsets_topic, "--die-after-write", f"{CHECKPOINTS}:2")
    before = {name: Lake(lake_root).version(name) for name in lake_checks.INGEST_TABLES}
    targets = [(trials.folder("faults-down-new"), "into a new home")] if new_home else []
    for target, name in [*targets, (home, "into a lake holding a prefix")]:
        started = time.monotonic()
        child, code = ingest_in_child(address, target, connection.offsets_topic)
        seconds = time.monotonic() - started
        problems = [] if code == 1 else [f"exit {code}, not 1"]
        problems += _clear_message(child, address)
        if seconds > BROKER_FAULT_BOUND_S:
            problems.append(f"it took {seconds:.0f} s to give up")
        if target == home:
            after = {name: Lake(lake_root).version(name) for name in lake_checks.INGEST_TABLES}
            if after != before:
                problems.append(f"the lake changed: Delta versions {before} before, {after} after")
            problems += lake_checks.bronze_differences(lake_root, reference, partial=True, beyond_checkpoint=False)
            rerun = ingest_offsets_topic(connection, Lake(lake_root), batch_records=BATCH_RECORDS, lease_wait_s=0,
                                         **QUIET)
            problems += [f"after the rerun: {p}" for p in lake_checks.bronze_differences(lake_root, reference)]
            note = f"gave up after {seconds:.1f} s; the rerun on the broker read {rerun.records_read:,} records"
        else:
            if (target / "lake").exists():
                problems.append(f"it created {target / 'lake'}")
            note = f"gave up after {seconds:.1f} s"
        trials.record(key, f"broker down at start, {name}", started, problems, note, said=_message(child))
    return broker


def _fault_mid_ingest(trials: Trials, key: str, fault: str, broker: EmbeddedBroker, connection: KafkaConnection,
                      reference: Path) -> EmbeddedBroker:
    home = trials.folder(f"faults-{fault}")
    lake_root = home / "lake"
    started = time.monotonic()
    # slowed down (a pause after each commit) and with little read ahead, so that the fault lands
    # well inside the run while records are still to be fetched from the broker
    child = Child(ingest_command(broker.bootstrap_servers, home, connection.offsets_topic,
                                 "--batch-records", str(BATCH_RECORDS // 2), "--write-delay", "0.1",
                                 "--prefetch-records", "200"))
    child.wait_ready()
    _wait_for_checkpoints(lake_root, 2, child)
    fault_at = time.monotonic()
    if fault == "killed":
        os.killpg(broker.pid, signal.SIGKILL)
    elif fault == "frozen":
        os.killpg(broker.pid, signal.SIGSTOP)
    else:  # a controlled shutdown, then the same broker again
        data_dir, port = broker.data_dir, broker.port
        broker.stop()
        broker = EmbeddedBroker(data_dir, port=port).start()
    code = child.wait(timeout_s=BROKER_FAULT_BOUND_S + 60)
    seconds = time.monotonic() - fault_at
    problems = []
    if fault == "restarted" and code == 0:
        note = f"the run rode out the restart and finished {seconds:.1f} s after the broker went down"
    else:
        note = f"gave up {seconds:.1f} s after the fault"
        problems += [] if code == 1 else [f"exit {code}, not 1"]
        problems += _clear_message(child, connection.bootstrap_servers)
        if seconds > BROKER_FAULT_BOUND_S + (20 if fault == "restarted" else 0):
            problems.append(f"it took {seconds:.0f} s to give up")
    problems += lake_checks.unreadable(lake_root, lake_checks.INGEST_TABLES)
    if not problems:
        problems += [f"after the fault: {p}" for p in lake_checks.bronze_differences(
            lake_root, reference, partial=code != 0, beyond_checkpoint=False)]
    if fault == "frozen":
        os.killpg(broker.pid, signal.SIGCONT)
        # Frozen for longer than its session with the controller (broker.session.timeout.ms, 9 s), the
        # broker is fenced once it runs again and registers anew: until then it drops requests
        thawed = _serving_again(broker.bootstrap_servers, connection.offsets_topic)
        note += f"; the broker served again {thawed:.1f} s after SIGCONT (and still 3 s later)"
    elif fault == "killed":
        broker._process.wait()
        broker = EmbeddedBroker(broker.data_dir, port=broker.port).start()
    try:
        rerun = ingest_offsets_topic(connection, Lake(lake_root), batch_records=BATCH_RECORDS, lease_wait_s=0, **QUIET)
        problems += [f"after the rerun: {p}" for p in lake_checks.bronze_differences(lake_root, reference)]
        note += f"; the rerun read {rerun.records_read:,} records"
    except Exception as error:
        problems.append(f"the rerun failed: {type(error).__name__}: {error}")
    trials.record(key, f"broker {fault} mid-ingest", started, problems, note, said=_message(child) if code else "")
    return broker


def _serving_again(bootstrap: str, topic: str, timeout_s: float = 120.0, steady_s: float = 3.0) -> float:
    """Seconds until every partition of `topic` has a leader in the broker's metadata, and still
    has `steady_s` later (a thawed broker may answer for a moment before its controller fences it)."""
    started = time.monotonic()
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    serving_since = None
    while time.monotonic() - started < timeout_s:
        try:
            found = admin.list_topics(topic, timeout=5).topics.get(topic)
            serving = found is not None and found.error is None and bool(found.partitions) and all(
                partition.leader >= 0 for partition in found.partitions.values())
        except KafkaException:
            serving = False
        if not serving:
            serving_since = None
        elif serving_since is None:
            serving_since = time.monotonic()
        elif time.monotonic() - serving_since >= steady_s:
            return serving_since - started
        time.sleep(0.5)
    raise SystemExit(f"the broker at {bootstrap} did not serve {topic} again within {timeout_s:.0f} s")


def _wait_for_checkpoints(lake_root: Path, count: int, child: Child) -> None:
    log = lake_root / "bronze" / CHECKPOINTS / "_delta_log"
    deadline = time.monotonic() + 120
    # version 0 creates the table; each checkpoint after that is one more commit
    while len(list(log.glob("*.json"))) < count + 1 and child.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


# Twice at once


def concurrency(trials: Trials, bootstrap: str, with_models: bool) -> None:
    key = "concurrency"
    trials.section(key, "twice at once", "two processes started together on one lake: every record once, each "
                   "model run once, a plan stored once, each request sent once")
    topic = "history-ingest"  # written by the ingest trials: the same log as their clean ingest
    home = trials.folder("twice-ingest")
    started = time.monotonic()
    command = ingest_command(bootstrap, home, topic, "--barrier", f"{trials.scratch / 'barrier-ingest'}:2",
                             "--batch-records", str(BATCH_RECORDS))
    children = [Child(command), Child(command)]
    codes = [child.wait() for child in children]
    problems = [f"exit {codes}: {[c.stderr[-300:] for c in children]}"] if codes != [0, 0] else []
    waited = [child for child in children if "waiting up to" in child.stdout]
    if len(waited) != 1:
        problems.append(f"{len(waited)} runs waited for the other's lease, not 1")
    problems += lake_checks.bronze_differences(home / "lake", trials.scratch / "ingest-reference" / "lake")
    trials.record(key, "two ingests", started, problems)

    if with_models:
        started = time.monotonic()
        command = ["--barrier", f"{trials.scratch / 'barrier-models'}:2", "--as-of", AS_OF, "--",
                   "models", "--home", str(home)]
        env = {"OFFSETS_PLATFORM_SPARK_MASTER": "local[1]"}
        children = [Child(command, env), Child(command, env)]
        codes = [child.wait() for child in children]
        problems = [f"exit {codes}: {[c.stderr[-300:] for c in children]}"] if codes != [0, 0] else []
        twice = {model: n for model, n in lake_checks.model_runs_per_model(home / "lake").items() if n != 1}
        if twice:
            problems.append(f"models run more than once: {twice}")
        reference = trials.full_refresh_of_a_copy(home / "lake", "twice-models-reference")
        problems += lake_checks.model_differences(home / "lake", reference)
        trials.record(key, "two refreshes", started, problems)
        _plans_and_applies(trials, key, bootstrap)


def _plans_and_applies(trials: Trials, key: str, bootstrap: str) -> None:
    """Empty groups on the broker, a snapshot and a refresh; then two `plan` runs at once making the
    same plan, and two `apply` runs of it at once."""
    from offsets_platform.cli import main as cli_main
    from offsets_platform.ingest.snapshots import snapshot_cluster

    home = trials.folder("twice-cleanup")
    groups = [f"idle-{n}" for n in range(3)]
    _empty_groups(bootstrap, groups)
    snapshot_cluster(KafkaConnection(bootstrap), Lake(home / "lake"), **QUIET)
    trials.refresh(home / "lake", as_of=None)  # now: the snapshot's groups are Empty since moments ago

    started = time.monotonic()
    plan_time = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    command = ["--barrier", f"{trials.scratch / 'barrier-plan'}:2", "--plan-time", plan_time, "--",
               "plan", "--home", str(home), "--idle-hours", "0"]
    # the author and the approver are two people (four-eyes), named as a login wrapper would
    children = [Child(command, env={USER_ENV: "ops"}), Child(command, env={USER_ENV: "ops"})]
    codes = sorted(child.wait() for child in children)
    stored = Lake(home / "lake").read_arrow("cleanup_plans").to_pylist()
    plan_ids = {row["plan_id"] for row in stored}
    problems = [] if codes == [0, 1] else [f"exit {codes}, not one 0 and one 1"]
    refused = [child for child in children if "is already stored; plans never change" in child.stderr]
    if len(refused) != 1:
        problems.append("the second run did not say the plan is already stored")
    if len(plan_ids) != 1 or len(stored) != len({row["action_id"] for row in stored}):
        problems.append(f"{len(plan_ids)} plans, {len(stored)} action rows stored")
    planned = sorted(row["group"] for row in stored)
    if planned != groups:
        problems.append(f"the plan deletes {planned}, not {groups}")
    trials.record(key, "two plans (the same plan)", started, problems)
    if len(plan_ids) != 1:
        return

    (plan_id,) = plan_ids
    with open(os.devnull, "w") as quiet:
        sys.stdout, real_stdout = quiet, sys.stdout
        user_before = os.environ.get(USER_ENV)
        os.environ[USER_ENV] = "alice"
        try:
            cli_main(["approve", plan_id, "--home", str(home)])
        finally:
            sys.stdout = real_stdout
            if user_before is None:
                os.environ.pop(USER_ENV)
            else:
                os.environ[USER_ENV] = user_before
    started = time.monotonic()
    command = ["--barrier", f"{trials.scratch / 'barrier-apply'}:2", "--send-delay", "2", "--",
               "apply", plan_id, "--bootstrap-server", bootstrap, "--home", str(home)]
    children = [Child(command), Child(command)]
    codes = [child.wait() for child in children]
    problems = [] if codes == [0, 0] else [f"exit {codes}: {[c.stderr[-300:] for c in children]}"]
    sent = [line for child in children for line in child.lines if line.startswith("SENT")]
    if sent != [f"SENT DeleteGroups {','.join(groups)}"]:
        problems.append(f"requests sent: {sent}")
    audit = [row for row in Lake(home / "lake").read_arrow("cleanup_audit").to_pylist() if row["plan_id"] == plan_id]
    outcomes = sorted(row["outcome"] for row in audit)
    if outcomes != sorted(["sending", "deleted"] * len(groups)):
        problems.append(f"audit outcomes {outcomes}")
    left = set(groups) & {group.group_id for group in AdminClient({"bootstrap.servers": bootstrap})
                          .list_consumer_groups(request_timeout=15).result(30).valid}
    if left:
        problems.append(f"groups still there: {sorted(left)}")
    trials.record(key, "two applies", started, problems)


def _empty_groups(bootstrap: str, groups: list[str]) -> None:
    """Classic consumer groups whose one member joined, committed and left: Empty at once, and
    proposed for DeleteGroups with --idle-hours 0. (A group that only commits, without joining,
    is standalone: a plan deletes it only once Kafka would expire its offsets.)"""
    topic = "orders"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    for group in groups:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                             "group.protocol": "classic"})
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        if not consumer.assignment():
            raise SystemExit(f"group {group} was not assigned {topic} within 60 s")
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
        consumer.close()  # leaves the group: Empty


SECTIONS = ("ingest", "refresh", "broker", "concurrency")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proving_ground.fault_trials", description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-kills", type=int, default=24, help="ingest runs killed (default 24)")
    parser.add_argument("--refresh-kills", type=int, default=10, help="model refreshes killed (default 10)")
    parser.add_argument("--records", type=int, default=60_000, help="records of generated history (default 60,000)")
    parser.add_argument("--quick", action="store_true",
                        help="a few trials without Spark, about a minute: 2 ingest kills, the broker down at start and "
                        "frozen, two ingests at once")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these trials (repeatable)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random kill times")
    parser.add_argument("--keep", action="store_true", help="keep the brokers' and lakes' folders")
    args = parser.parse_args(argv)
    sections = set(args.only or SECTIONS)
    if args.quick:
        args.ingest_kills, args.refresh_kills, args.records = min(args.ingest_kills, 2), 0, min(args.records, 20_000)
        sections -= {"refresh"}
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    scratch = Path(tempfile.mkdtemp(prefix="fault-trials-"))
    print(f"fault trials in {scratch}", flush=True)
    trials = Trials(args, scratch)
    try:
        with EmbeddedBroker(scratch / "broker") as broker:
            steps: list[tuple[str, Callable[[], None]]] = [
                ("ingest", lambda: ingest_kills(trials, broker.bootstrap_servers)),
                ("refresh", lambda: refresh_kills(trials, broker.bootstrap_servers)),
                ("broker", lambda: broker_faults(trials, broker)),
                ("concurrency", lambda: concurrency(trials, broker.bootstrap_servers, not args.quick)),
            ]
            if "concurrency" in sections and "ingest" not in sections:
                sections.add("ingest")  # the two ingests compare with the ingest trials' clean ingest
                args.ingest_kills = 0
            for name, step in steps:
                if name in sections and (name != "refresh" or args.refresh_kills):
                    step()
        return trials.summary()
    finally:
        if trials.spark is not None:
            trials.spark.stop()
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
