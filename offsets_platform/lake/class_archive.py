"""Spark's class-data archive: where it is, and whether a JVM this product starts may map it.

A refresh in a fresh process (the demo, a scheduled Dagster run, every command that runs models)
starts a JVM that loads and verifies some seventeen thousand classes before and while it runs
its first queries. Java's application class-data sharing (JDK 13+, `-XX:ArchiveClassesAtExit`, then
`-XX:SharedArchiveFile`) writes the classes a JVM loaded to an archive once; a later JVM with the
same Java and class path maps them from it. `offsets-platform install-jars spark-classes` builds it
(offsets_platform.jars.class_archive).

The archive fits one Java and one pyspark: a key file beside it records both, and a session uses
the archive only while the key matches (the JVM would otherwise refuse it with a warning on the
console).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

CLASS_ARCHIVE_ENV = "OFFSETS_PLATFORM_SPARK_CLASS_ARCHIVE"

# The JVM's own messages about an archive it cannot use go to the console, where they would land
# in a command's output; a stale archive is left out before that (`java_options`).
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_path() -> Path:
    """Where the archive is: $OFFSETS_PLATFORM_SPARK_CLASS_ARCHIVE, else the virtual environment's
    share folder, beside the jars."""
    configured = os.environ.get(CLASS_ARCHIVE_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "share" / "offsets-platform" / "spark-classes.jsa"


def key_path(archive: Path) -> Path:
    return archive.with_suffix(".key")


def _java() -> Path | None:
    """The java Spark's launcher runs: $JAVA_HOME's, else the first on PATH (resolved)."""
    java_home = os.environ.get("JAVA_HOME")
    on_path = shutil.which("java")
    found = Path(java_home) / "bin" / "java" if java_home else Path(on_path) if on_path else None
    return found.resolve() if found and found.is_file() else None


def runtime_key() -> str:
    """What the archive depends on: the Java runtime (its binary and its JVM library) and pyspark's
    jars, the driver's class path, each by path, size and modification time, as the JVM checks
    them."""
    import pyspark  # its location only: importing it starts no JVM

    java = _java()
    files = [java, java.parent.parent / "lib" / "server" / "libjvm.so"] if java else []
    files += sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    parts = [f"pyspark {version('pyspark')}", f"java {java}"]
    parts += [f"{file} {file.stat().st_size} {file.stat().st_mtime_ns}" for file in files if file.is_file()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def is_up_to_date(archive: Path | None = None) -> bool:
    archive = archive or archive_path()
    key = key_path(archive)
    return archive.is_file() and key.is_file() and key.read_text().strip() == runtime_key()


def java_options() -> str:
    """The driver JVM's options to map the archive, or "" when there is none for this Java and
    pyspark."""
    archive = archive_path()
    return f"-XX:SharedArchiveFile={archive} {_QUIET}" if is_up_to_date(archive) else ""


def dump_options(archive: Path) -> str:
    """The driver JVM's options to write its classes to `archive` when it exits."""
    return f"-XX:ArchiveClassesAtExit={archive} {_QUIET}"
