"""`offsets-platform install-jars`: a missing `java` or `mvn` stops it with a message that says what
is missing and what to run, before anything is written; a set already fetched from the same pom is
left alone, without running Maven. (The fetch itself runs in every fresh install: `make`, and the
wheel's test in tests/test_wheel.py.)"""

import os
import shutil
import subprocess
import sys

import pytest

from offsets_platform.jars import JAR_SETS, STAMP, _digest

pytestmark = pytest.mark.fast


def install_jars(tmp_path, commands: list[str], *sets: str) -> subprocess.CompletedProcess:
    """`offsets-platform install-jars` with a PATH that holds only `commands` (Python is run by its
    full path), every set's folder under tmp_path."""
    only = tmp_path / "bin"
    only.mkdir(exist_ok=True)
    for command in commands:
        (only / command).symlink_to(shutil.which(command))
    folders = {jar_set.folder_env: str(tmp_path / jar_set.name) for jar_set in JAR_SETS}
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
