"""Kafka's own Java clients as group members: a share consumer and a Kafka Streams application.

No Python client joins share groups (KIP-932) or streams groups (KIP-1071), so the workload runs
the programs Kafka ships, from the installed jars, as child processes:
- `org.apache.kafka.tools.consumer.ConsoleShareConsumer` (kafka-console-share-consumer.sh), which
  prints every record it receives on its stdout, one line each, and acknowledges it;
- `org.apache.kafka.streams.examples.wordcount.WordCountDemo`, whose one argument is a
  properties file (bootstrap.servers, application.id, group.protocol=streams, state.dir).

`JvmMembers` owns them. Its thread starts every process and lives until `stop()`, because the
processes are started with PR_SET_PDEATHSIG, which Linux ties to the thread that started a child,
not to the process: if the Python process dies, even by SIGKILL, that thread ends and the JVMs
get SIGTERM. `stop()` sends SIGTERM itself (both programs close their client in a shutdown hook,
which leaves the group), waits, then SIGKILLs what is left; it is idempotent and also runs at
interpreter exit.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path

from offsets_platform.broker.jvm import java_command

SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
WORDCOUNT = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
HEAP_MB = 128
STOP_TIMEOUT_S = 20.0

_PR_SET_PDEATHSIG = 1
try:  # loaded before any fork: the child only calls it
    _libc = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:  # not Linux/glibc: stop() and the exit hook remain
    _libc = None


def _term_with_starting_thread() -> None:
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class JvmProcess:
    """One Java program: its process, its stdout file and its log file."""

    def __init__(self, name: str, process: subprocess.Popen, stdout_path: Path, log_path: Path):
        self.name, self.process, self.stdout_path, self.log_path = name, process, stdout_path, log_path

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def output_lines(self) -> int:
        """Lines the program printed on stdout so far (records, for the console share consumer)."""
        try:
            with open(self.stdout_path, "rb") as out:
                return sum(chunk.count(b"\n") for chunk in iter(lambda: out.read(1 << 16), b""))
        except FileNotFoundError:
            return 0

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").rstrip().splitlines()[-lines:])
        except FileNotFoundError:
            return ""


class JvmMembers:
    """Starts Kafka's Java clients for the run and ends them (see the module docstring)."""

    def __init__(self, bootstrap_servers: str):
        self.bootstrap_servers = bootstrap_servers
        self.work_dir = Path(tempfile.mkdtemp(prefix="live-workload-jvm-"))
        self.processes: dict[str, JvmProcess] = {}
        self.errors: list[str] = []
        self._requests: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name="live-workload-jvms", daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    @property
    def running(self) -> bool:
        return any(p.running for p in self.processes.values())

    def _serve(self) -> None:
        while True:
            request = self._requests.get()
            if request is None:
                return
            name, command, future = request
            try:
                stdout_path, log_path = self.work_dir / f"{name}.out", self.work_dir / f"{name}.log"
                with open(stdout_path, "wb") as out, open(log_path, "wb") as log:
                    process = subprocess.Popen(command, stdout=out, stderr=log, stdin=subprocess.DEVNULL,
                                               start_new_session=True, preexec_fn=_term_with_starting_thread)
                future.set_result(JvmProcess(name, process, stdout_path, log_path))
            except BaseException as error:
                future.set_exception(error)

    def _start(self, name: str, main_class: str, args: list[str]) -> JvmProcess:
        with self._lock:
            if self._stopped:
                raise RuntimeError("JvmMembers is stopped")
            future: Future = Future()
            self._requests.put((name, java_command(main_class, args, heap_mb=HEAP_MB), future))
        process = future.result(timeout=30)
        self.processes[name] = process
        return process

    def start_share_consumer(self, group: str, topic: str) -> JvmProcess:
        """kafka-console-share-consumer --bootstrap-server B --topic T --group G."""
        return self._start(group, SHARE_CONSUMER, ["--bootstrap-server", self.bootstrap_servers, "--topic", topic,
                                                   "--group", group])

    def start_wordcount(self, application_id: str) -> JvmProcess:
        """WordCountDemo with group.protocol=streams; its state lives in this run's folder."""
        properties = self.work_dir / f"{application_id}.properties"
        properties.write_text("".join(f"{key}={value}\n" for key, value in {
            "bootstrap.servers": self.bootstrap_servers,
            "application.id": application_id,
            "group.protocol": "streams",
            "state.dir": self.work_dir / f"{application_id}-state",
            # offsets committed twice a second instead of every 30 s, so the run sees them
            "commit.interval.ms": 500,
        }.items()))
        return self._start(application_id, WORDCOUNT, [str(properties)])

    def stop(self) -> None:
        """SIGTERM every program, wait up to STOP_TIMEOUT_S, SIGKILL what is left; idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        for process in self.processes.values():
            _signal(process, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.errors.append(f"{process.name} ignored SIGTERM for {STOP_TIMEOUT_S:.0f} s; killed")
                _signal(process, signal.SIGKILL)
                process.process.wait(timeout=10)
        self._requests.put(None)
        self._thread.join(timeout=10)
        shutil.rmtree(self.work_dir, ignore_errors=True)
        atexit.unregister(self.stop)


def _signal(process: JvmProcess, signum: int) -> None:
    if process.process.poll() is not None:  # reaped: its id may belong to another process now
        return
    try:
        os.killpg(process.process.pid, signum)  # its own session: the JVM and nothing else
    except ProcessLookupError:
        pass
