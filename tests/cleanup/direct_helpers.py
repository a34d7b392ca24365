"""Helpers for the direct-cleanup tests: groups made by real confluent-kafka clients, and the CLI.

Not a test module (no `test_` prefix); the topic and group helpers are the ones the admin
snapshot tests use.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from offsets_platform.cli.direct import add_direct_commands
from offsets_platform.lake import Lake
from offsets_platform.settings import Settings
from tests.ingest.test_snapshot_collect import commit, create_topics, join_group, produce_counts

__all__ = ["commit", "create_topics", "join_group", "produce_counts", "make_topics", "empty_group",
           "standalone_commit", "run_cli", "audit_rows", "ORDERS", "PAYMENTS"]

ORDERS, PAYMENTS = "orders", "payments"
PRODUCED = {ORDERS: [5, 7, 9], PAYMENTS: [4, 6]}  # messages per partition


def make_topics(bootstrap: str) -> None:
    """`orders` (3 partitions) and `payments` (2), with a few messages in each partition."""
    create_topics(bootstrap, {ORDERS: (3, {}), PAYMENTS: (2, {})})
    for topic, counts in PRODUCED.items():
        produce_counts(bootstrap, topic, counts)


def empty_group(bootstrap: str, group: str, topics: list[str], offsets: dict[tuple[str, int], int]) -> None:
    """A consumer-protocol group that joined (subscribed to `topics`), committed `offsets` and left: Empty."""
    partitions = sum(len(PRODUCED[topic]) for topic in topics)
    consumer = join_group(bootstrap, group, topics, partitions)
    commit(consumer, {tp: (offset, "") for tp, offset in offsets.items()})
    consumer.close()


def standalone_commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit without ever joining (a "simple" group: protocol type '', state Empty)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "session.timeout.ms": 6000})
    consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    consumer.close()


def run_cli(argv: list[str], capsys) -> tuple[int, list[str], str]:
    """Run one direct command as `offsets-platform` would; (exit status, stdout lines, stderr)."""
    parser = argparse.ArgumentParser(prog="offsets-platform")
    add_direct_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status = args.run(args, Settings.from_env())
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def audit_rows(home: Path, group: str | None = None, intents: bool = False) -> list[dict]:
    """The cleanup_audit rows under `home` (of one group), oldest first: the outcomes, or with
    `intents` the 'sending' rows written before each request.

    Every outcome of a request that was sent names an intent of the same group, topic and
    partition, written before it; checked here, so that every test of the audit checks it."""
    rows = Lake(home / "lake").read_arrow("cleanup_audit").to_pylist()
    rows = sorted((row for row in rows if group is None or row["group"] == group),
                  key=lambda row: (row["at"], row["topic"] or "", row["partition"] or -1))
    sent = {row["audit_id"]: row for row in rows if row["outcome"] == "sending"}
    for row in rows:
        if row["outcome"] in ("deleted", "failed"):
            intent = sent[row["intent_id"]]
            assert (intent["group"], intent["topic"], intent["partition"]) == \
                (row["group"], row["topic"], row["partition"]) and intent["at"] <= row["at"], row
    return [row for row in rows if (row["outcome"] == "sending") == intents]
