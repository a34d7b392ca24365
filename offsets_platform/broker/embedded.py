"""The embedded broker: Apache Kafka in KRaft mode, formatted, started and stopped by the project.

One JVM is a combined broker and controller on loopback ports, with its data under `data_dir`
and a bounded heap, so that it fits beside Spark on a small machine. It runs from the jars the
install step fetched (offsets_platform.broker.jvm). The broker is stopped by its own process id;
it also receives SIGTERM if the process that started it dies, so nothing is left running. With
`security` it authenticates and authorizes as a production cluster does
(offsets_platform.broker.security).
"""

from __future__ import annotations

import base64
import socket
import subprocess
import time
import uuid
from importlib.resources import files
from pathlib import Path
from typing import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from offsets_platform.broker.jvm import SHORT_LIVED, broker_jvm_options, java_command
from offsets_platform.broker.security import BrokerSecurity
from offsets_platform.processes import free_loopback_port, start_child, stop_child
from offsets_platform.settings import KafkaConnection

BROKER_LOG4J = files("offsets_platform.broker").joinpath("log4j2-broker.properties")
DEFAULT_HEAP_MB = 512

# Kafka's defaults, except where one node on loopback needs otherwise or where a default would make
# the demo and the tests wait minutes for something they show.
BROKER_DEFAULTS: dict[str, str] = {
    # one node holds every replica of the internal topics
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # a group's first rebalance completes at once instead of waiting 3 s for more members
    "group.initial.rebalance.delay.ms": "0",
    # retention.ms acts within a second (Kafka checks every 5 minutes by default), from the start
    # (the log manager's tasks, retention among them, first run 30 s after start by default)
    "log.retention.check.interval.ms": "1000",
    "log.initial.task.delay.ms": "0",
    "num.partitions": "1",
}


# a start that lost its controller port to another process is tried again, on a new port
_START_ATTEMPTS = 3
_ADDRESS_IN_USE = b"Address already in use"  # in the broker's log


class BrokerStartFailed(RuntimeError):
    """The embedded broker did not come up; the message ends with the last lines of its log."""

    def __init__(self, bootstrap_servers: str, detail: str):
        self.bootstrap_servers = bootstrap_servers
        super().__init__(f"the embedded broker (Apache Kafka) on {bootstrap_servers} did not start: {detail}")


class PortInUse(RuntimeError):
    """The port asked for is taken."""

    def __init__(self, port: int):
        self.port = port
        super().__init__(f"port {port} on 127.0.0.1 is already in use: stop what listens there "
                         "or choose another port")


def _refuse_if_taken(port: int) -> None:
    with socket.socket() as probe:
        # As Kafka binds its listener: connections of a broker just stopped on this port linger
        # in TIME_WAIT for a minute, which does not stop a restart; a socket listening there does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise PortInUse(port) from error


def _random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes in URL-safe base64 without padding, not starting with
    '-' (Kafka's Uuid.randomUuid avoids those, as a command line would read them as options)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class EmbeddedBroker:
    """Apache Kafka (KRaft, one combined broker and controller) on a loopback port.

    Use as a context manager; `stop()` ends it by its own process id. Data persists in
    `data_dir`, so a later broker on the same folder sees the same topics and groups.

    Args:
        data_dir: the broker's folder: `server.properties`, `server.log` and the log dirs.
        port: the client port (default: a free one). A port in use raises PortInUse.
        overrides: broker configs on top of BROKER_DEFAULTS (for example
            `offsets.retention.minutes`).
        heap_mb: the JVM's maximum heap.
        start_timeout_s: how long to wait for clients to be able to use the broker.
        jmx_port: serve the broker's JMX metrics (for example the group coordinator's meters)
            on this loopback port, without authentication; None serves none.
        security: the secured mode (offsets_platform.broker.security): SASL/SCRAM logins for
            these users and StandardAuthorizer; None: plaintext, no authorizer.
    """

    def __init__(self, data_dir: str | Path, port: int | None = None, overrides: Mapping[str, str] | None = None,
                 heap_mb: int = DEFAULT_HEAP_MB, start_timeout_s: float = 120.0, jmx_port: int | None = None,
                 security: BrokerSecurity | None = None):
        self.data_dir = Path(data_dir).absolute()
        self.port = port or free_loopback_port()
        self.overrides = dict(overrides or {})
        self.heap_mb = heap_mb
        self.start_timeout_s = start_timeout_s
        self.jmx_port = jmx_port
        self.security = security
        self._process: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def connection_as(self, user: str | None = None) -> KafkaConnection:
        """A client's settings for this broker: in the secured mode, logged in as `user` (the admin
        when None); otherwise plaintext, and `user` must be None."""
        if self.security is not None:
            return self.security.connection(self.bootstrap_servers, user)
        if user is not None:
            raise ValueError(f"the broker on {self.bootstrap_servers} has no users: it was started without security")
        return KafkaConnection(bootstrap_servers=self.bootstrap_servers)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def log_file(self) -> Path:
        return self.data_dir / "server.log"

    def start(self) -> "EmbeddedBroker":
        """Format the data folder on first use, start the broker and wait until clients can use
        it (`__consumer_offsets` exists and its group coordinator answers).

        Raises:
            PortInUse: the client port is taken.
            BrokerStartFailed: the broker exited or did not get ready; the log's last lines say why.
            KafkaNotInstalled: java or Kafka's jars are missing.
        """
        if self._process is not None:
            return self
        _refuse_if_taken(self.port)
        for _ in range(_START_ATTEMPTS - 1):
            log_from = self.log_file.stat().st_size if self.log_file.exists() else 0
            try:
                return self._start_once()
            except BrokerStartFailed:
                # Another process may bind the controller port (free when chosen at each start)
                # before the broker does; a new port is all it takes. Any other failure stands.
                if not self._could_not_bind(log_from):
                    raise
        return self._start_once()

    def _could_not_bind(self, log_from: int) -> bool:
        """Whether the broker's log, from byte `log_from` on, says a port it needed was taken."""
        if not self.log_file.exists():
            return False
        with self.log_file.open("rb") as log:
            log.seek(log_from)
            return _ADDRESS_IN_USE in log.read()

    def _start_once(self) -> "EmbeddedBroker":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        if not (self.data_dir / "logs" / "meta.properties").exists():
            self._format(config)
        self._process = start_child(
            java_command("kafka.Kafka", [str(config)], heap_mb=self.heap_mb, log4j_config=BROKER_LOG4J,
                         jvm_options=[f"-Xms{min(128, self.heap_mb)}m", f"-Dkafka.logs.dir={self.data_dir}",
                                      *self._jmx_options(), *broker_jvm_options()]),
            self.data_dir / "jvm.out")
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def jmx_url(self) -> str | None:
        """The JMX service URL (for Kafka's JmxTool or jconsole), when a JMX port was given."""
        if self.jmx_port is None:
            return None
        return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{self.jmx_port}/jmxrmi"

    def _jmx_options(self) -> list[str]:
        if self.jmx_port is None:
            return []
        # the options of Kafka's own start script (KAFKA_JMX_OPTS), bound to loopback
        return ["-Dcom.sun.management.jmxremote", "-Dcom.sun.management.jmxremote.authenticate=false",
                "-Dcom.sun.management.jmxremote.ssl=false", "-Dcom.sun.management.jmxremote.host=127.0.0.1",
                f"-Dcom.sun.management.jmxremote.port={self.jmx_port}",
                f"-Dcom.sun.management.jmxremote.rmi.port={self.jmx_port}", "-Djava.rmi.server.hostname=127.0.0.1"]

    def _write_config(self) -> Path:
        controller_port = free_loopback_port()
        while controller_port == self.port:  # the OS may hand out a just-closed probe port again
            controller_port = free_loopback_port()
        config = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            **BROKER_DEFAULTS,
            **self.overrides,
        }
        if self.security is not None:
            config = {**self.security.broker_config(config), **self.overrides}
        path = self.data_dir / "server.properties"
        path.write_text("# written by offsets-platform at each start of the embedded broker\n"
                        + "".join(f"{key}={value}\n" for key, value in config.items()))
        return path

    def _format(self, config: Path) -> None:
        """`kafka-storage format`: a new cluster id and the metadata log of a fresh cluster."""
        result = subprocess.run(
            java_command("kafka.tools.StorageTool", ["format", "--cluster-id", _random_cluster_id(),
                                                     "--config", str(config), *self._format_security()],
                         jvm_options=list(SHORT_LIVED)),
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise BrokerStartFailed(self.bootstrap_servers, "formatting its data folder failed:\n"
                                    + _last_lines(result.stdout + result.stderr))

    def _format_security(self) -> list[str]:
        # the users' SCRAM credentials go into the metadata log before the first start
        return self.security.format_arguments() if self.security is not None else []

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        admin = None
        probe_group = "offsets-platform-readiness-probe"
        while True:
            if self._process.poll() is not None:
                self._fail(f"the broker exited with status {self._process.returncode}")
            if time.monotonic() > deadline:
                self._fail(f"the broker did not get ready within {self.start_timeout_s:.0f} s")
            if admin is None:
                # librdkafka's admin calls are only made once the port accepts connections: a call
                # that times out while connecting can abort the process (a librdkafka assertion).
                if _accepts_connections(self.port):
                    admin = AdminClient({**self.connection_as().confluent_config(), "log_level": 3})
            else:
                try:
                    # Describing a group makes the broker create __consumer_offsets, as a first
                    # consumer would; once that answers without a coordinator error, groups work.
                    admin.describe_consumer_groups([probe_group], request_timeout=10)[probe_group].result()
                    return
                except KafkaException as error:
                    if not _coordinator_not_ready(error):
                        return
            time.sleep(0.3)

    def _fail(self, why: str) -> None:
        logs = [path for path in (self.log_file, self.data_dir / "jvm.out") if path.exists()]
        tail = "\n".join(f"--- last lines of {path} ---\n{_last_lines(path.read_text(errors='replace'))}"
                         for path in logs)
        raise BrokerStartFailed(self.bootstrap_servers, f"{why}\n{tail}")

    def stop(self) -> None:
        """Stop the broker (SIGTERM, a controlled shutdown; SIGKILL after 30 s) and reap it."""
        process, self._process = self._process, None
        stop_child(process, grace_s=30)

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _coordinator_not_ready(error: KafkaException) -> bool:
    name = error.args[0].name() if error.args and hasattr(error.args[0], "name") else str(error)
    return any(word in name for word in ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS",
                                         "NOT_COORDINATOR", "TIMED_OUT", "TRANSPORT"))


def _last_lines(text: str, count: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-count:])



# Internal topics replicated on every broker of an EmbeddedCluster (their minimum ISR stays 1, as
# BROKER_DEFAULTS sets, so that one broker can take over alone).
CLUSTER_REPLICATED_TOPICS = ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                             "share.coordinator.state.topic.replication.factor")


class EmbeddedCluster:
    """Apache Kafka (KRaft) with several brokers on loopback ports, each a JVM with a bounded heap.

    Node 1 is a combined broker and controller (the cluster's only controller), nodes 2.. are
    brokers only. The internal topics have one replica on every broker, so each partition of
    `__consumer_offsets` has a follower that can become its leader: a group's coordinator moves
    to another broker when its partition's leader does (a reassignment, a leader election, a
    broker that stops). The nodes run with the embedded broker's defaults (BROKER_DEFAULTS).

    Use as a context manager; `stop()` stops the brokers, then the controller, each by its own
    process id. Data persists under `data_dir/node-<id>`.

    Args:
        data_dir: the cluster's folder, one sub-folder per node.
        brokers: how many brokers (2 or more).
        overrides: broker configs of every node, on top of the defaults.
        heap_mb: each JVM's maximum heap.
        start_timeout_s: how long to wait for clients to be able to use the cluster.
    """

    def __init__(self, data_dir: str | Path, brokers: int = 2, overrides: Mapping[str, str] | None = None,
                 heap_mb: int = DEFAULT_HEAP_MB, start_timeout_s: float = 120.0):
        if brokers < 2:
            raise ValueError(f"a cluster has 2 or more brokers, not {brokers}: use EmbeddedBroker for one")
        self.data_dir = Path(data_dir).absolute()
        self.start_timeout_s = start_timeout_s
        self._cluster_id: str | None = None
        *ports, self.controller_port = _distinct_free_ports(brokers + 1)
        configs = {**{name: str(brokers) for name in CLUSTER_REPLICATED_TOPICS}, **(overrides or {})}
        self.nodes = [_ClusterNode(self, node_id, port, configs, heap_mb)
                      for node_id, port in enumerate(ports, start=1)]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.bootstrap_servers for node in self.nodes)

    def node(self, node_id: int) -> "EmbeddedBroker":
        """The node with this broker id (1 is also the controller)."""
        return self.nodes[node_id - 1]

    @property
    def cluster_id(self) -> str:
        """The id the nodes are formatted with: the controller's, once its folder is formatted."""
        if self._cluster_id is None:
            self._cluster_id = _formatted_cluster_id(self.nodes[0].data_dir) or _random_cluster_id()
        return self._cluster_id

    def start(self) -> "EmbeddedCluster":
        """Format each node's folder on first use, start every node at once and wait until clients
        can use the cluster (a group coordinator answers, and every replica of `__consumer_offsets`
        is in sync).

        Raises:
            PortInUse: a node's port or the controller's is taken.
            BrokerStartFailed: a node exited or the cluster did not get ready; the log's last lines say why.
        """
        _refuse_if_taken(self.controller_port)
        try:
            for node in self.nodes:
                node.start()  # launches the JVM only; the nodes boot side by side
            deadline = time.monotonic() + self.start_timeout_s
            for node in self.nodes:
                node.wait_until_listening(deadline)
            # creating __consumer_offsets needs every broker registered (its replication factor)
            self._wait_until_groups_work(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_groups_work(self, deadline: float) -> None:
        while not self._groups_work():
            for node in self.nodes:
                if node._process.poll() is not None:
                    node._fail(f"node {node.node_id} exited with status {node._process.returncode}")
            if time.monotonic() > deadline:
                self.nodes[0]._fail(f"the cluster did not get ready within {self.start_timeout_s:.0f} s")
            time.sleep(0.3)

    def _groups_work(self) -> bool:
        """Whether a group's coordinator answers without a coordinator error and every replica of
        `__consumer_offsets` is in sync (so that its leader can move at once).

        Asked with kafka-python, not librdkafka as EmbeddedBroker does: librdkafka's describe of a
        group can abort the process when a request to the coordinator times out (an assertion in
        its admin code), which a busy machine starting several brokers meets. Any Kafka error
        means "not yet"; the caller's deadline bounds the wait.
        """
        # imported here: the single broker does without kafka-python
        import kafka.errors as Errors

        from offsets_platform.kafka.admin_calls import COORDINATOR_ERRORS, SnapshotAdminClient

        probe, brokers = "offsets-platform-readiness-probe", {node.node_id for node in self.nodes}
        try:
            with SnapshotAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=10000,
                                     bootstrap_timeout_ms=10000, call_deadline_s=30, coordinator_retry_s=0) as admin:
                # Describing a group makes the broker create __consumer_offsets, as a first consumer would.
                if admin.describe_groups([probe])[probe].error_code in {error.errno for error in COORDINATOR_ERRORS}:
                    return False
                (topic,) = admin.describe_topics(["__consumer_offsets"])
                return (topic["error_code"] == 0 and bool(topic["partitions"])
                        and all(set(partition["isr_nodes"]) == brokers for partition in topic["partitions"]))
        except Errors.KafkaError:
            return False

    def stop(self) -> None:
        """Stop the brokers, then the controller (each a controlled shutdown, see EmbeddedBroker.stop)."""
        for node in reversed(self.nodes):
            node.stop()

    def __enter__(self) -> "EmbeddedCluster":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


class _ClusterNode(EmbeddedBroker):
    """One node of an EmbeddedCluster: its own role and id, the cluster's controller and id.
    `start()` only launches the JVM; the cluster waits for its nodes together."""

    def __init__(self, cluster: EmbeddedCluster, node_id: int, port: int, overrides: Mapping[str, str],
                 heap_mb: int):
        super().__init__(cluster.data_dir / f"node-{node_id}", port, overrides, heap_mb, cluster.start_timeout_s)
        self.cluster = cluster
        self.node_id = node_id

    @property
    def is_controller(self) -> bool:
        return self.node_id == 1

    def _write_config(self) -> Path:
        controller = f"127.0.0.1:{self.cluster.controller_port}"
        listeners = f"PLAINTEXT://127.0.0.1:{self.port}" + (f",CONTROLLER://{controller}" if self.is_controller else "")
        config = {
            "process.roles": "broker,controller" if self.is_controller else "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"1@{controller}",
            "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            **BROKER_DEFAULTS,
            **self.overrides,
        }
        path = self.data_dir / "server.properties"
        path.write_text(f"# written by offsets-platform at each start of node {self.node_id} of an embedded cluster\n"
                        + "".join(f"{key}={value}\n" for key, value in config.items()))
        return path

    def _format(self, config: Path) -> None:
        """`kafka-storage format` with the cluster's id (every node of a cluster has the same)."""
        result = subprocess.run(
            java_command("kafka.tools.StorageTool", ["format", "--cluster-id", self.cluster.cluster_id,
                                                     "--config", str(config)], jvm_options=list(SHORT_LIVED)),
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise BrokerStartFailed(self.bootstrap_servers, "formatting its data folder failed:\n"
                                    + _last_lines(result.stdout + result.stderr))

    def _wait_until_ready(self) -> None:
        pass  # EmbeddedCluster.start waits, once every node is launched

    def wait_until_listening(self, deadline: float) -> None:
        while not _accepts_connections(self.port):
            if self._process.poll() is not None:
                self._fail(f"node {self.node_id} exited with status {self._process.returncode}")
            if time.monotonic() > deadline:
                self._fail(f"node {self.node_id} did not listen within {self.start_timeout_s:.0f} s")
            time.sleep(0.3)


def _distinct_free_ports(count: int) -> list[int]:
    """`count` different free loopback ports (the OS may hand out a just-closed probe port again)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_loopback_port()
        if port not in ports:
            ports.append(port)
    return ports


def _formatted_cluster_id(data_dir: Path) -> str | None:
    """The cluster id in a formatted node folder's `meta.properties`, None if not formatted."""
    meta = data_dir / "logs" / "meta.properties"
    if not meta.exists():
        return None
    for line in meta.read_text().splitlines():
        if line.startswith("cluster.id="):
            return line.removeprefix("cluster.id=").strip()
    return None
