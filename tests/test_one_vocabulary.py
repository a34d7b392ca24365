"""One vocabulary on every surface: the command line's JSON, the alerts and the metrics' labels name
a group and a partition as the model tables do, `group_id` and `partition_id` (hand-written gold
rows, no Spark, no broker). Only the headers printed for people keep Kafka's GROUP and PARTITION."""

from __future__ import annotations

import json
import re

import pytest

from offsets_platform.views.alerts import changes, evaluate, payload
from offsets_platform.cli import main
from offsets_platform.views.metrics import exposition
from offsets_platform.settings import AlertSettings
from tests.metrics.helpers import AWKWARD, fill, samples, write

pytestmark = pytest.mark.fast  # make test-fast

P = "offsets_platform_"
OLD_NAMES = {"group", "partition"}  # what these surfaces said before 0.2.0


@pytest.fixture
def filled(lake, monkeypatch):
    """tests/metrics/helpers.py's gold rows (`busy`, STALL on t-0, and the awkwardly named group),
    and the two groups' state and committed offsets."""
    for name in ("WEBHOOK_URL", "WITHIN", "LOSS_WITHIN", "EXPIRY_WITHIN", "WATCHED_GROUPS", "IGNORED_GROUPS"):
        monkeypatch.delenv(f"OFFSETS_PLATFORM_ALERT_{name}", raising=False)
    fill(lake)
    write(lake, "group_state", [{"group_id": "busy", "state": "Stable", "classification": "consumer",
                                 "count_members": 1},
                                {"group_id": AWKWARD, "state": "Empty", "classification": "standalone"}])
    write(lake, "committed_offsets", [{"group_id": "busy", "topic": "t", "partition_id": p, "committed_offset": 5}
                                      for p in (0, 1)])
    return lake


def keys(value) -> set[str]:
    """Every key of every object in a JSON value, however deep."""
    if isinstance(value, dict):
        return set(value).union(*map(keys, value.values()))
    if isinstance(value, list):
        return set().union(*map(keys, value))
    return set()


@pytest.mark.parametrize("openmetrics", [True, False])
def test_the_metrics_label_a_group_and_a_partition_as_the_tables_do(filled, openmetrics):
    text = exposition(filled, openmetrics=openmetrics)
    found = samples(text)
    labels = {name for _, pairs in found for name, _ in pairs}
    assert {"group_id", "topic", "partition_id"} <= labels and not labels & OLD_NAMES, labels
    assert not re.search(r'[{,](group|partition)="', text)
    per_partition = {frozenset(dict(pairs)) for name, pairs in found if name == P + "consumer_lag_messages"}
    assert per_partition == {frozenset({"group_id", "topic", "partition_id"})}
    per_group = {frozenset(dict(pairs)) for name, pairs in found if name == P + "consumer_group_status"}
    assert per_group == {frozenset({"group_id", "status"})}


def test_the_command_lines_json_names_group_id_and_partition_id(filled, capsys):
    home = str(filled.root.parent)

    def printed(*command: str):
        assert main([*command, "--home", home, "--output", "json"]) in (0, 3)  # alerts: 3, some are open
        answer = json.loads(capsys.readouterr().out)
        assert not keys(answer) & OLD_NAMES, (command, keys(answer) & OLD_NAMES)
        return answer

    assert [row["group_id"] for row in printed("groups")] == ["busy", AWKWARD]
    described = printed("describe", "busy")
    assert described["group_id"] == "busy"
    assert [(row["topic"], row["partition_id"], row["lag"]) for row in described["offsets"]] == [("t", 0, 3), ("t", 1, 0)]
    assert [(row["group_id"], row["partitions"]) for row in printed("expiring", "--within", "1d")] == [(AWKWARD, 2)]
    assert {row["group_id"] for row in printed("lost")} == {"busy", AWKWARD}
    (alert,) = printed("alerts")["alerts"]
    assert (alert["key"], alert["group_id"]) == ("consumer_status/busy/t/STALL", "busy")
    assert [partition["partition_id"] for partition in alert["partitions"]] == [0]

    assert main(["groups", "--home", home]) == 0  # the table for people keeps Kafka's header
    assert capsys.readouterr().out.split()[0] == "GROUP"


def test_an_alert_names_group_id_and_partition_id_and_keeps_the_key_it_had(filled):
    (alert,) = evaluate(filled, AlertSettings())
    told = alert.as_dict()
    assert (told["kind"], told["group_id"], told["topic"], told["qualifier"]) == ("consumer_status", "busy", "t", "STALL")
    assert [partition["partition_id"] for partition in told["partitions"]] == [0]
    assert not keys(told) & OLD_NAMES
    assert alert.group_id == "busy" and alert.key == "consumer_status/busy/t/STALL"  # as 0.1.0 built it


def test_alerts_open_before_the_rename_are_not_told_again_and_clear_with_group_id(filled):
    # the sensor's cursor as 0.1.0 kept it: the same keys, the group under `group`
    opened_at = "2026-01-01T00:00:00+00:00"
    kept = {key: {"key": key, "kind": kind, "group": group, "topic": "t", "qualifier": qualifier,
                  "summary": f"group {group}: ...", "opened_at": opened_at}
            for key, kind, group, qualifier in (("consumer_status/busy/t/STALL", "consumer_status", "busy", "STALL"),
                                                ("messages_at_risk/gone/t", "messages_at_risk", "gone", ""))}
    change = changes(kept, evaluate(filled, AlertSettings()))
    assert change.opened == []  # the STALL is still open: not told again
    still = change.open["consumer_status/busy/t/STALL"]
    assert (still["group_id"], still["opened_at"]) == ("busy", opened_at) and "group" not in still
    (cleared,) = change.cleared
    assert (cleared["key"], cleared["group_id"], cleared["opened_at"]) == ("messages_at_risk/gone/t", "gone", opened_at)
    assert not keys(payload(change, models_refreshed_at=None)) & OLD_NAMES
