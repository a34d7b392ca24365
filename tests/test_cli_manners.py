"""The command line's manners: `--version`, invalid choices refused with the valid ones (exit 2),
a closed pipe (`| head`) ends a command quietly, a refused connection fails at once."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from offsets_platform.cli import main
from offsets_platform.views.from_lake import GROUP_STATES
from offsets_platform.models import default_project
from tests.test_summary import full_rows

pytestmark = pytest.mark.fast


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    name, version = capsys.readouterr().out.split()
    assert name == "offsets-platform" and version[0].isdigit()


def test_an_unknown_group_state_is_refused_with_the_states_there_are(lake, capsys):
    home = str(lake.root.parent)
    with pytest.raises(SystemExit) as done:
        main(["groups", "--home", home, "--state", "Stable,Foo"])
    assert done.value.code == 2
    error = capsys.readouterr().err
    assert "no group state 'Foo'" in error and ", ".join(GROUP_STATES) in error
    # any case, as Kafka's tool takes them
    lake.append("group_state", full_rows(lake, "group_state", [{"group_id": "g", "state": "Empty"}]))
    assert main(["groups", "--home", home, "--state", "stable", "--state", "EMPTY"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:2] == ["g", "Empty"]


def test_the_states_are_those_group_state_can_hold():
    state = next(column for column in default_project().model("group_state").columns if column.name == "state")
    accepted = next(test["accepted_values"]["values"] for test in state.tests if isinstance(test, dict))
    assert set(GROUP_STATES) == set(accepted)


def test_a_reader_that_stops_early_ends_the_command_quietly(lake):
    # enough groups that the table outgrows the pipe's buffer, read one line of it, close the pipe
    groups = [{"group_id": f"group-{n:05d}", "state": "Empty"} for n in range(5_000)]
    lake.append("group_state", full_rows(lake, "group_state", groups))
    child = subprocess.Popen([sys.executable, "-m", "offsets_platform.cli", "groups", "--home", str(lake.root.parent)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().split()[0] == "GROUP"
    child.stdout.close()
    error = child.stderr.read()
    assert child.wait(timeout=60) == 0, error
    assert "Traceback" not in error and "BrokenPipe" not in error


def test_a_refused_connection_fails_at_once_and_says_so(tmp_path, capsys):
    with socket.socket() as placeholder:  # a loopback port nothing listens on once it is closed
        placeholder.bind(("127.0.0.1", 0))
        address = "127.0.0.1:%d" % placeholder.getsockname()[1]
    started = time.monotonic()
    assert main(["describe", "g", "--live", "--bootstrap-server", address, "--home", str(tmp_path)]) == 1
    assert time.monotonic() - started < 5, "the client retried a refused connection until its timeout"
    error = capsys.readouterr().err
    assert error.startswith(f"error: Kafka at {address} did not answer") and "refused" in error
