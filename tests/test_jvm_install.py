"""The install step's Java part: a missing `java` or `mvn` stops it with a message that says what
is missing and what to run, before anything is written."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

INSTALL = Path(__file__).resolve().parents[1] / "jvm" / "install"


def run_with_only(tmp_path, commands: list[str]) -> subprocess.CompletedProcess:
    """jvm/install with a PATH that holds only `commands` (bash itself is run by its full path)."""
    only = tmp_path / "bin"
    only.mkdir()
    for command in commands:
        (only / command).symlink_to(shutil.which(command))
    return subprocess.run([shutil.which("bash"), str(INSTALL), str(tmp_path / "jars")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PATH": str(only)})


@pytest.mark.parametrize("present,missing,advice", [
    ([], "java", "apt-get install openjdk-17-jre-headless"),
    (["java"], "mvn", "apt-get install maven"),
])
def test_a_missing_tool_is_named_with_what_to_run(tmp_path, present, missing, advice):
    result = run_with_only(tmp_path, present)
    assert result.returncode == 1
    assert f"error: {missing} was not found on PATH" in result.stderr and advice in result.stderr
    assert not (tmp_path / "jars").exists(), "nothing is written before the tools are there"
