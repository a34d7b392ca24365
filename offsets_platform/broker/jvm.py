"""Apache Kafka's jars, as the project's install step put them, and the `java` that runs them.

`offsets-platform install-jars` (which `make` runs) fetches the Maven dependencies of
`offsets_platform/jars/kafka.pom.xml` (Kafka's broker, its command-line tools and Kafka Streams'
examples, one release) into the environment's `share/offsets-platform/jars`.
`OFFSETS_PLATFORM_JARS` points elsewhere.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

JARS_ENV = "OFFSETS_PLATFORM_JARS"
TOOLS_LOG4J = files("offsets_platform.broker").joinpath("log4j2-tools.properties")


class KafkaNotInstalled(RuntimeError):
    """Java or Kafka's jars are missing; the message says what to run."""


def jars_dir() -> Path:
    """Where Kafka's jars are: $OFFSETS_PLATFORM_JARS, else the virtual environment's share folder."""
    configured = os.environ.get(JARS_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "share" / "offsets-platform" / "jars"


def kafka_version() -> str:
    """The version of the installed Kafka broker jar (for example 4.3.1)."""
    return _broker_jar().name.removeprefix("kafka_2.13-").removesuffix(".jar")


def _broker_jar() -> Path:
    folder = jars_dir()
    found = sorted(folder.glob("kafka_2.13-*.jar"))
    if not found:
        raise KafkaNotInstalled(
            f"Apache Kafka's jars are not in {folder}. Run `offsets-platform install-jars kafka` (in a checkout, "
            f"any `make` target that installs does); set {JARS_ENV} if they are elsewhere.")
    return found[-1]


def classpath() -> str:
    """The Java class path of every installed jar."""
    _broker_jar()
    return str(jars_dir() / "*")


def java() -> str:
    """The `java` to run: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    if candidate is not None and candidate.exists():
        return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise KafkaNotInstalled("java was not found (JAVA_HOME unset and no java on PATH): install a Java 17+ "
                                "runtime (Debian: apt-get install openjdk-17-jre-headless)")
    return found


def java_command(main_class: str, args: list[str], *, heap_mb: int = 256,
                 log4j_config: str | Path = TOOLS_LOG4J, jvm_options: list[str] = ()) -> list[str]:
    """The command line that runs `main_class` of Kafka's jars."""
    return [java(), f"-Xmx{heap_mb}m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j_config}", *jvm_options,
            "-cp", classpath(), main_class, *args]


# A JVM that lives a second or two (Kafka's tools, a broker's storage format) runs on the JIT's
# first tier only: its compiles are quick, and the second tier's would not pay back.
SHORT_LIVED = ("-XX:TieredStopAtLevel=1",)
# Extra JVM options of the embedded broker, as a shell would split them. The test suite runs its
# many short-lived brokers on the JIT's first tier this way (`make test`); a broker that serves a
# workload for long is better off with both tiers, Java's default.
BROKER_JVM_OPTIONS_ENV = "OFFSETS_PLATFORM_BROKER_JVM_OPTIONS"


def broker_jvm_options() -> list[str]:
    """The embedded broker's extra JVM options from $OFFSETS_PLATFORM_BROKER_JVM_OPTIONS (none by default)."""
    return shlex.split(os.environ.get(BROKER_JVM_OPTIONS_ENV, ""))


def run_tool(main_class: str, args: list[str], *, timeout_s: float = 120.0,
             input_text: str | None = None) -> subprocess.CompletedProcess:
    """Run one of Kafka's command-line tools (for example
    `org.apache.kafka.tools.consumer.group.ConsumerGroupCommand`) and return what it printed.

    A tool is SHORT_LIVED (about 0.13 s less per run of kafka-consumer-groups --list, medians of 6
    side by side)."""
    return subprocess.run(java_command(main_class, args, jvm_options=list(SHORT_LIVED)),
                          capture_output=True, text=True,
                          timeout=timeout_s, input=input_text, stdin=None if input_text else subprocess.DEVNULL)
