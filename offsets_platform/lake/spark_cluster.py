"""A Spark standalone cluster on loopback: one master and its workers, from pyspark's own jars.

The path a team takes when one machine is not enough is a Spark cluster; this one lets the models
run on a real cluster (a master that schedules, workers whose executors run the tasks) on one
machine, so that path is tested and can be tried. Runs use it with
`OFFSETS_PLATFORM_SPARK_MASTER=spark://127.0.0.1:<port>`.

pyspark's pip package carries Spark's jars and `bin/spark-class` but not the `sbin/start-*.sh`
scripts, so the master and each worker are started as `spark-class <main class>` in the
foreground, each a child process of this one (offsets_platform.processes), and stopped with it.

The workers read the lake's files by the paths the driver gives them, so they must see the same
folders (true on one machine; on several hosts, a shared file system or object storage).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

from offsets_platform.processes import free_loopback_port, start_child, stop_child

DEFAULT_MASTER_PORT = 7077  # Spark's own default
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class SparkClusterError(RuntimeError):
    """The cluster did not start; the message says which process and shows its log's last lines."""


class StandaloneCluster:
    """A master and `workers` workers on 127.0.0.1; use as a context manager.

    Args:
        folder: where the logs and the workers' scratch folders go.
        port: the master's port (default: a free one).
        workers: how many workers; each offers `cores_per_worker` cores and `memory_per_worker`.
        start_timeout_s: how long to wait for the master and every worker to be up.
    """

    def __init__(self, folder: str | Path, port: int | None = None, workers: int = 2, cores_per_worker: int = 1,
                 memory_per_worker: str = "2g", start_timeout_s: float = 90.0):
        self.folder = Path(folder).absolute()
        self.port = port or free_loopback_port()
        self.web_port = free_loopback_port()
        self.workers = workers
        self.cores_per_worker = cores_per_worker
        self.memory_per_worker = memory_per_worker
        self.start_timeout_s = start_timeout_s
        self._processes: dict[str, subprocess.Popen] = {}  # by name, in the order started

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self) -> "StandaloneCluster":
        """Start the master, then the workers, and wait until the master counts them all alive.

        Raises:
            SparkClusterError: a process exited or the cluster was not whole in time.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn("master", MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port),
                        "--webui-port", str(self.web_port))
            self._wait_for(lambda state: state is not None, "the master to answer")
            for number in range(1, self.workers + 1):
                self._spawn(f"worker-{number}", WORKER_CLASS, self.master_url, "--host", "127.0.0.1",
                            "--cores", str(self.cores_per_worker), "--memory", self.memory_per_worker,
                            "--webui-port", "0", "--work-dir", str(self.folder / f"worker-{number}"))
            self._wait_for(lambda state: state is not None and state.get("aliveworkers") == self.workers,
                           f"{self.workers} workers to register with the master")
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def running(self) -> bool:
        """Every process of the cluster is still running."""
        return bool(self._processes) and all(process.poll() is None for process in self._processes.values())

    def state(self) -> dict | None:
        """The master's own account of the cluster (its web UI's JSON), or None if it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=2) as answer:
                return json.load(answer)
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        """Stop the workers, then the master (SIGTERM; SIGKILL after 20 s)."""
        processes, self._processes = self._processes, {}
        for process in reversed(processes.values()):
            stop_child(process, grace_s=20)

    def _spawn(self, name: str, main_class: str, *args: str) -> None:
        import pyspark  # here: importing it loads much of Spark's Python side

        spark_home = Path(pyspark.__file__).parent
        env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_LOG_DIR": str(self.folder), "SPARK_NO_DAEMONIZE": "1"}
        self._processes[name] = start_child([str(spark_home / "bin" / "spark-class"), main_class, *args],
                                            self.folder / f"{name}.log", env)

    def _wait_for(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not ready(self.state()):
            for name, process in self._processes.items():
                if process.poll() is not None:
                    raise SparkClusterError(f"the Spark {name} exited (code {process.returncode}) while "
                                            f"waiting for {what}:\n{self._log_tail(name)}")
            if time.monotonic() > deadline:
                last = list(self._processes)[-1]
                raise SparkClusterError(f"waited {self.start_timeout_s:.0f} s for {what}; the logs are in "
                                        f"{self.folder}:\n{self._log_tail(last)}")
            time.sleep(0.5)

    def _log_tail(self, name: str, lines: int = 20) -> str:
        text = (self.folder / f"{name}.log").read_text(errors="replace")
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
