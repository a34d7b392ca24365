"""`offsets-platform alerts`: the alerts open now, and an exit code a script can tell from an error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from offsets_platform.cli import main
from tests.alerts.test_conditions import expirable, forecast, status, write

pytestmark = pytest.mark.fast  # make test-fast


@pytest.fixture
def home(lake, monkeypatch):
    for name in ("WEBHOOK_URL", "WITHIN", "LOSS_WITHIN", "EXPIRY_WITHIN", "WATCHED_GROUPS", "IGNORED_GROUPS"):
        monkeypatch.delenv(f"OFFSETS_PLATFORM_ALERT_{name}", raising=False)
    write(lake, "retention_forecast", [forecast("g", 0, 10, 30.0)])
    write(lake, "expirable_offsets", [expirable("orders", 0, 3.0)])
    return str(lake.root.parent)


def test_exit_3_with_alerts_0_without_and_1_when_it_cannot_tell(home, lake, capsys, monkeypatch):
    assert main(["alerts", "--home", home]) == 0  # 30 h away, and no group is watched
    out, err = capsys.readouterr()
    assert out == "no alerts\n" and "no watched groups" in err

    assert main(["alerts", "--home", home, "--within", "2d", "--watch", "orders", "--output", "json"]) == 3
    listed = json.loads(capsys.readouterr().out)
    assert [a["key"] for a in listed["alerts"]] == ["messages_at_risk/g/t", "offsets_expiring/orders/t/empty_group"]
    assert listed["loss_within_hours"] == listed["expiry_within_hours"] == 48

    monkeypatch.setenv("OFFSETS_PLATFORM_ALERT_WATCHED_GROUPS", "ord*")
    write(lake, "consumer_status", [status("g", 0, "STALL")])
    assert main(["alerts", "--home", home]) == 3
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["consumer_status", "offsets_expiring"]

    monkeypatch.setenv("OFFSETS_PLATFORM_ALERT_WITHIN", "soon")
    assert main(["alerts", "--home", home]) == 1
    assert "OFFSETS_PLATFORM_ALERT_WITHIN" in capsys.readouterr().err
    assert main(["alerts", "--home", home + "/nowhere"]) == 1  # no lake: an error, not "no alerts"


def test_the_command_line_loads_the_alerts_only_when_asked():
    script = "import sys, offsets_platform.cli; print('offsets_platform.views.alerts' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr
