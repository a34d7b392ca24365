"""Offset resets of streams and share groups beside Kafka's `kafka-streams-groups` and `kafka-share-groups`.

On one broker: a streams group (Kafka Streams' WordCountDemo with group.protocol=streams, which
committed offsets on its input topic and its repartition topic, and kept one on `before-streams`
that a consumer committed before the application first ran) and a share group (Kafka's console share
consumer, which read and acknowledged every alert), both stopped, so Empty. Each reset is run
through Kafka's tool of the group's kind with --dry-run and through `plan-reset`, and the new
offsets must be the same; then the plan is applied and the broker must hold exactly them.
"""

from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient

from offsets_platform.broker.jvm import run_tool
from offsets_platform.kafka import group_calls
from offsets_platform.cli import main
from offsets_platform.kafka.admin_calls import open_admin
from offsets_platform.settings import ALLOW_SELF_APPROVAL_ENV, USER_ENV
from proving_ground.workload.live.clients import set_group_config
from proving_ground.workload.live.jvm_members import JvmMembers
from tests.cleanup.direct_helpers import create_topics, produce_counts, standalone_commit
from tests.cleanup.test_group_types import _wait_live
from tests.cleanup.test_reset_beside_kafka import kafka_dry_run, plan_reset

STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_INPUT, STREAMS_OUTPUT = "streams-plaintext-input", "streams-wordcount-output"
OTHER = "before-streams"  # committed to by the group before it ran as a streams application
ALERTS = "alerts"
STREAMS, SHARE = "wordcount-reset", "alerts-reset"


@pytest.fixture(scope="module")
def groups(broker, connection):
    """The two groups, Empty once their one member stopped: (bootstrap, streams group, share group)."""
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, {STREAMS_INPUT: (2, {}), STREAMS_OUTPUT: (1, {}), OTHER: (1, {}), ALERTS: (2, {})})
    produce_counts(bootstrap, STREAMS_INPUT, [6, 4])
    produce_counts(bootstrap, OTHER, [3])
    produce_counts(bootstrap, ALERTS, [5, 3])
    standalone_commit(bootstrap, STREAMS, {(OTHER, 0): 1})
    set_group_config(AdminClient({"bootstrap.servers": bootstrap}), SHARE, {"share.auto.offset.reset": "earliest"})
    members = JvmMembers(bootstrap)
    try:
        streams = members.start_wordcount(STREAMS)
        share = members.start_share_consumer(SHARE, ALERTS)
        with open_admin(connection, 10, 10) as admin:
            _wait_live(admin, STREAMS, lambda g: g.committed_offsets.get((STREAMS_INPUT, 0)) == 6
                       and g.committed_offsets.get((STREAMS_INPUT, 1)) == 4)
            # it printed (and acknowledged) every alert; the share coordinator keeps state on both partitions
            _wait_live(admin, SHARE, lambda g: share.output_lines() == 8 and len(g.share_start_offsets) == 2)
            for member in (streams, share):  # their shutdown hooks close the clients, which leave
                member.process.terminate()
                member.process.wait(timeout=60)
            for group in (STREAMS, SHARE):
                _wait_live(admin, group, lambda g: g.state == "Empty")
    finally:
        members.stop()
    return bootstrap


@pytest.mark.parametrize(("kafka_args", "our_args"), [
    # --all-input-topics: the topology's source topics, not its repartition topic nor OTHER
    (["--all-input-topics", "--to-earliest"], ["--all-topics", "--to-earliest"]),
    (["--input-topic", f"{STREAMS_INPUT}:1", "--shift-by", "-3"], ["--topic", f"{STREAMS_INPUT}:1", "--shift-by", "-3"]),
    (["--input-topic", f"{STREAMS_INPUT}", "--to-offset", "5"], ["--topic", STREAMS_INPUT, "--to-offset", "5"]),
    # a topic the group has an offset on, outside its topology: Kafka's tool resets it too
    (["--input-topic", f"{OTHER}", "--to-latest"], ["--topic", OTHER, "--to-latest"]),
], ids=["all-input-topics", "shift-by", "to-offset", "other-topic"])
def test_a_streams_group_resets_as_kafka_streams_groups_resets_it(groups, tmp_path, capsys, kafka_args, our_args):
    bootstrap = groups
    _, kafka_rows, kafka_output = kafka_dry_run(bootstrap, STREAMS, *kafka_args, command=STREAMS_GROUP_COMMAND)
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, STREAMS, *our_args)
    assert status == 0 and rows == kafka_rows and rows, (kafka_output, output)


def test_a_streams_topic_the_group_has_no_offset_on_is_refused_in_kafkas_words(groups, tmp_path, capsys):
    bootstrap = groups
    _, kafka_rows, kafka_output = kafka_dry_run(bootstrap, STREAMS, "--input-topic", ALERTS, "--to-earliest",
                                                command=STREAMS_GROUP_COMMAND)
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, STREAMS, "--topic", ALERTS, "--to-earliest")
    refusal = f"One or more topics are not part of the group '{STREAMS}'."
    assert refusal in kafka_output and not kafka_rows
    assert status == 2 and refusal in output and not rows


@pytest.mark.parametrize("args", [["--topic", ALERTS, "--to-earliest"], ["--all-topics", "--to-latest"],
                                  ["--topic", f"{ALERTS}:1", "--to-datetime", "2020-01-01T00:00:00.000"]],
                         ids=["to-earliest", "to-latest", "to-datetime"])
def test_a_share_group_resets_as_kafka_share_groups_resets_it(groups, tmp_path, capsys, args):
    bootstrap = groups
    _, kafka_rows, kafka_output = kafka_dry_run(bootstrap, SHARE, *args, command=SHARE_GROUP_COMMAND)
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, SHARE, *args)
    assert status == 0 and rows == kafka_rows and rows, (kafka_output, output)


@pytest.mark.parametrize("specifier", [["--to-offset", "2"], ["--to-current"]], ids=["to-offset", "to-current"])
def test_a_share_group_refuses_the_specifiers_kafka_share_groups_lacks(groups, tmp_path, capsys, specifier):
    bootstrap = groups
    result = run_tool(SHARE_GROUP_COMMAND, ["--bootstrap-server", bootstrap, "--reset-offsets", "--group", SHARE,
                                            "--topic", ALERTS, *specifier, "--dry-run"], timeout_s=120)
    assert f"{specifier[0][2:]} is not a recognized option" in result.stdout + result.stderr
    status, rows, output = plan_reset(bootstrap, tmp_path, capsys, SHARE, "--topic", ALERTS, *specifier)
    assert status == 1 and f"kafka-share-groups --reset-offsets has no {specifier[0]}" in output and not rows


@pytest.mark.parametrize(("group", "resets"), [
    (STREAMS, [(["--all-topics", "--to-earliest"], {(STREAMS_INPUT, 0): 0, (STREAMS_INPUT, 1): 0})]),
    # to the log end, then back to its start: whatever the start offset was, one of them moves it
    (SHARE, [(["--topic", f"{ALERTS}:0", "--to-latest"], {(ALERTS, 0): 5}),
             (["--topic", f"{ALERTS}:0", "--to-earliest"], {(ALERTS, 0): 0})]),
], ids=["streams", "share"])
def test_apply_sets_exactly_the_planned_offsets(groups, admin, tmp_path, capsys, monkeypatch, group, resets):
    bootstrap = groups
    monkeypatch.delenv(ALLOW_SELF_APPROVAL_ENV, raising=False)
    for specifier, expected in resets:
        monkeypatch.setenv(USER_ENV, "ops")
        status, _, output = plan_reset(bootstrap, tmp_path, capsys, group, *specifier)
        assert status == 0, output
        plan_id = re.search(r"^plan (\w+):", output, re.M).group(1)
        monkeypatch.setenv(USER_ENV, "alice")
        assert main(["approve", plan_id, "--home", str(tmp_path)]) == 0
        capsys.readouterr()
        assert main(["apply", plan_id, "--bootstrap-server", bootstrap, "--home", str(tmp_path)]) == 0
        assert f"{len(expected)} committed (offset resets), 0 skipped, 0 failed" in capsys.readouterr().out
        live = group_calls.live_group(admin, group)
        now = live.share_start_offsets if group == SHARE else live.committed_offsets
        assert {tp: now[tp] for tp in expected} == expected
