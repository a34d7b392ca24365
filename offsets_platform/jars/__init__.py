"""The product's Java dependencies: `offsets-platform install-jars` fetches them with Maven.

Three sets, each described by a pom shipped in this package and kept in a folder of its own under
the environment's `share/offsets-platform/` (or where its environment variable points), so that
Kafka's jars and Spark's never share a class path:
- `kafka`: Apache Kafka's broker and command-line tools (the embedded broker, Kafka's own tools);
- `delta`: Delta Lake's Spark jars, which every Spark session of the product carries;
- `s3`: Spark's s3a connector, needed only for a lake on object storage.

After the sets, `spark-classes` builds Spark's class-data archive from them (class_archive.py):
every Spark the product starts then maps Spark's classes instead of loading them.

Maven keeps its own cache (`~/.m2`), so fetching a set again downloads nothing. A set whose folder
was filled from the same pom is left alone (a stamp in the folder holds the pom's digest), and a
fetch fills a `.partial` folder that replaces the old one only once complete: an interrupted fetch
never leaves half a set.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Callable

from offsets_platform.broker.jvm import JARS_ENV, jars_dir
from offsets_platform.jars import class_archive
from offsets_platform.lake.spark import DELTA_JARS_ENV, S3_JARS_ENV, delta_jars_dir, s3_jars_dir

STAMP = ".installed-from-pom"


class JarsNotInstalled(RuntimeError):
    """Java or Maven is missing, or Maven failed; the message says what to do."""


@dataclass(frozen=True)
class JarSet:
    name: str
    pom: str
    folder: Callable[[], Path]
    folder_env: str
    purpose: str

    def pom_text(self) -> str:
        return files(__name__).joinpath(self.pom).read_text()


JAR_SETS = (
    JarSet("kafka", "kafka.pom.xml", jars_dir, JARS_ENV, "Apache Kafka's broker and tools"),
    JarSet("delta", "delta.pom.xml", delta_jars_dir, DELTA_JARS_ENV, "Delta Lake for Spark"),
    JarSet("s3", "s3.pom.xml", s3_jars_dir, S3_JARS_ENV, "Spark's s3a connector, for a lake on object storage"),
)
JAR_SET_NAMES = tuple(jar_set.name for jar_set in JAR_SETS)
# what install-jars installs by default, in this order: the archive is built from Delta's set
INSTALL_STEPS = (*JAR_SET_NAMES, class_archive.NAME)


def install_jars(names: tuple[str, ...] = INSTALL_STEPS, force: bool = False,
                 say: Callable[[str], None] = print) -> list[Path]:
    """Fetch the named sets (default: all) that are missing or were filled from another pom, then
    build Spark's class-data archive if asked; return their folders and the archive's path.
    `force` fetches and builds them again anyway."""
    chosen = [jar_set for jar_set in JAR_SETS if jar_set.name in names]
    if any(not _up_to_date(jar_set) for jar_set in chosen) or force:
        _check_tools()
    folders = []
    for jar_set in chosen:
        folder = jar_set.folder()
        if _up_to_date(jar_set) and not force:
            say(f"{jar_set.name}: {_jar_count(folder)} jars already in {folder} ({jar_set.purpose})")
        else:
            say(f"{jar_set.name}: fetching {jar_set.purpose} with Maven into {folder}")
            _fetch(jar_set, folder)
            say(f"{jar_set.name}: {_jar_count(folder)} jars in {folder}")
        folders.append(folder)
    if class_archive.NAME in names:
        folders.append(class_archive.build_class_archive(force=force, say=say))
    return folders


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _up_to_date(jar_set: JarSet) -> bool:
    stamp = jar_set.folder() / STAMP
    return stamp.is_file() and stamp.read_text().strip() == _digest(jar_set.pom_text())


def _jar_count(folder: Path) -> int:
    return len(list(folder.glob("*.jar")))


def _check_tools() -> None:
    """Name the missing tool and how to install it, before anything is written."""
    if shutil.which("java") is None:
        raise JarsNotInstalled("java was not found on PATH. Install a Java 17+ runtime (Debian: apt-get install "
                               "openjdk-17-jre-headless) or put its bin/ on PATH, then run install-jars again.")
    if shutil.which("mvn") is None:
        raise JarsNotInstalled("mvn was not found on PATH. Install Apache Maven (Debian: apt-get install maven), "
                               "then run install-jars again.")


def _fetch(jar_set: JarSet, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    # Maven resolves a pom's paths from its folder and may write beside it: run it on a copy, so
    # that an installed package's own files are never written to.
    with tempfile.TemporaryDirectory() as scratch:
        pom = Path(scratch) / "pom.xml"
        pom.write_text(jar_set.pom_text())
        run = subprocess.run(["mvn", "--batch-mode", "--quiet", "--file", str(pom), "dependency:copy-dependencies",
                              f"-DoutputDirectory={partial}", "-DincludeScope=runtime"],
                             capture_output=True, text=True)
    if run.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        output = "\n".join((run.stdout + run.stderr).strip().splitlines()[-30:])
        raise JarsNotInstalled(f"Maven could not fetch the jars of {jar_set.name} ({jar_set.purpose}); its last "
                               f"output:\n{output}\nCheck that this machine reaches Maven Central (or the mirror "
                               "in ~/.m2/settings.xml), then run install-jars again.")
    (partial / STAMP).write_text(_digest(jar_set.pom_text()) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
