"""`offsets-platform install-jars`: a missing `java` or `mvn` stops it with a message that says what
is missing and what to run, before anything is written; a set already fetched from the same pom is
left alone, without running Maven. Spark's class-data archive is used only while it fits this Java
and pyspark, left alone while it does, and a failed build leaves none behind. (The fetch and the
build themselves run in every fresh install: `make`, and the wheel's test in tests/test_wheel.py;
tests/lake/test_class_archive.py checks that a session maps the archive.)"""

import os
import shutil
import subprocess
import sys

import pytest

from offsets_platform.jars import JAR_SETS, STAMP, _digest
from offsets_platform.lake.class_archive import CLASS_ARCHIVE_ENV, java_options, key_path, runtime_key

pytestmark = pytest.mark.fast


def install_jars(tmp_path, commands: list[str], *sets: str) -> subprocess.CompletedProcess:
    """`offsets-platform install-jars` with a PATH that holds only `commands` (Python is run by its
    full path), every set's folder under tmp_path."""
    only = tmp_path / "bin"
    only.mkdir(exist_ok=True)
    for command in commands:
        (only / command).symlink_to(shutil.which(command))
    folders = {jar_set.folder_env: str(tmp_path / jar_set.name) for jar_set in JAR_SETS}
    folders[CLASS_ARCHIVE_ENV] = str(tmp_path / "archive" / "spark-classes.jsa")
    return subprocess.run([sys.executable, "-m", "offsets_platform.cli", "install-jars", *sets], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **folders, "PATH": str(only)})


@pytest.mark.parametrize("present,missing,advice", [
    ([], "java", "apt-get install openjdk-17-jre-headless"),
    (["java"], "mvn", "apt-get install maven"),
])
def test_a_missing_tool_is_named_with_what_to_run(tmp_path, present, missing, advice):
    result = install_jars(tmp_path, present)
    assert result.returncode == 1
    assert f"error: {missing} was not found on PATH" in result.stderr and advice in result.stderr
    assert not any((tmp_path / jar_set.name).exists() for jar_set in JAR_SETS), "nothing is written"


def stamped(tmp_path, jar_set, pom_text: str) -> None:
    folder = tmp_path / jar_set.name
    folder.mkdir()
    (folder / "some.jar").write_bytes(b"")
    (folder / STAMP).write_text(_digest(pom_text) + "\n")


def test_a_set_fetched_from_the_same_pom_is_left_alone_without_maven(tmp_path):
    kafka = JAR_SETS[0]
    stamped(tmp_path, kafka, kafka.pom_text())
    result = install_jars(tmp_path, [], kafka.name)  # no java, no mvn: they are not needed
    assert result.returncode == 0, result.stderr
    assert f"kafka: 1 jars already in {tmp_path / 'kafka'}" in result.stdout


def test_a_set_fetched_from_another_pom_is_fetched_again(tmp_path):
    kafka = JAR_SETS[0]
    stamped(tmp_path, kafka, "<project>an older pom</project>")
    result = install_jars(tmp_path, ["java"], kafka.name)  # no mvn: the fetch it needs stops there
    assert result.returncode == 1 and "error: mvn was not found on PATH" in result.stderr
    assert (tmp_path / "kafka" / "some.jar").exists(), "the old set stays until a new one is complete"


def test_a_session_maps_the_class_archive_only_while_it_fits_this_java_and_pyspark(tmp_path, monkeypatch):
    archive = tmp_path / "spark-classes.jsa"
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, str(archive))
    assert java_options() == ""  # none built
    archive.write_bytes(b"classes")
    assert java_options() == ""  # no key: a build did not finish
    key_path(archive).write_text("the key of another java or pyspark\n")
    assert java_options() == ""
    key_path(archive).write_text(runtime_key() + "\n")
    assert java_options().startswith(f"-XX:SharedArchiveFile={archive} ")


def test_a_class_archive_that_fits_is_left_alone_without_running_spark(tmp_path):
    archive = tmp_path / "archive" / "spark-classes.jsa"
    archive.parent.mkdir()
    archive.write_bytes(b"classes")
    # the key as the command will compute it: the same java (the PATH below holds only it) and pyspark
    key = subprocess.run([sys.executable, "-c", "from offsets_platform.lake.class_archive import runtime_key; "
                          "print(runtime_key())"], capture_output=True, text=True, check=True,
                         env={**os.environ, "PATH": os.path.dirname(shutil.which("java"))}).stdout
    key_path(archive).write_text(key)
    result = install_jars(tmp_path, ["java"], "spark-classes")
    assert result.returncode == 0, result.stderr
    assert f"spark-classes: Spark's class-data archive already in {archive}" in result.stdout
    assert archive.read_bytes() == b"classes"


def test_a_failed_class_archive_build_says_why_and_leaves_nothing_behind(tmp_path):
    # the Delta jars' folder is empty here, so the training refresh cannot start Spark
    result = install_jars(tmp_path, ["java"], "spark-classes")
    assert result.returncode == 1
    assert "error: the training refresh that builds Spark's class-data archive failed" in result.stderr
    assert "Delta Lake's Spark jars" in result.stderr, "its last output says what stopped it"
    assert list((tmp_path / "archive").iterdir()) == [], "no archive, no key, no half-written file"
