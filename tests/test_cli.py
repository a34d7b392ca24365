"""The `offsets-platform` command line against a real broker, and against a down one."""

import pytest

from offsets_platform.cli import main
from offsets_platform.codec import encode
from offsets_platform.broker.embedded import free_loopback_port
from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from tests.ingest.conftest import mirror_connection, produce  # noqa: F401  (fixture)


def test_ingest_command_fills_the_lake_and_reports(mirror_connection, tmp_path, capsys):
    # a hand-made record, so it goes to a topic of __consumer_offsets' layout that --offsets-topic names
    produce(mirror_connection, [(1, encode.offset_commit_key("cli-group", "t", 0),
                                 encode.offset_commit_value(42, 1_790_000_000_000), 1_790_000_000_000)])
    status = main(["ingest", "--bootstrap-server", mirror_connection.bootstrap_servers, "--home", str(tmp_path),
                   "--offsets-topic", mirror_connection.offsets_topic])
    output = capsys.readouterr().out
    assert status == 0
    assert f"ingesting {mirror_connection.offsets_topic} from" in output
    assert "read 1 records, rejected 0" in output
    assert [r["offset"] for r in Lake(tmp_path / "lake").read_arrow("offset_commit_records").to_pylist()] == [42]


def test_ingest_command_on_a_down_broker_names_it_and_fails(tmp_path, capsys):
    address = f"127.0.0.1:{free_loopback_port()}"
    status = main(["ingest", "--bootstrap-server", address, "--home", str(tmp_path)])
    error = capsys.readouterr().err
    assert status == 1
    assert address in error and "Check that the broker is running" in error
    assert not (tmp_path / "lake" / "bronze" / "offset_commit_records").exists(), "nothing half-written"


def test_ingest_command_without_an_address_says_how_to_give_one(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OFFSETS_PLATFORM_BOOTSTRAP_SERVERS", raising=False)
    assert main(["ingest", "--home", str(tmp_path)]) == 2
    assert "--bootstrap-server" in capsys.readouterr().err


def test_snapshot_command_appends_a_snapshot_and_summarises_it(broker, tmp_path, capsys):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "cli-standalone",
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("__consumer_offsets", 0, 0)], asynchronous=False)
    consumer.close()
    status = main(["snapshot", "--bootstrap-server", broker.bootstrap_servers, "--home", str(tmp_path)])
    output = capsys.readouterr().out
    assert status == 0
    assert "offsets.retention.minutes 10080" in output and "live groups by state" in output
    groups = Lake(tmp_path / "lake").read_arrow("group_snapshots").to_pylist()
    assert "cli-standalone" in {g["group"] for g in groups}


def test_models_command_runs_the_models_and_summarises(spark, tmp_path, capsys):
    from tests.models.bronze_builder import BronzeBuilder, at

    builder = BronzeBuilder()
    builder.group_record("cli-models", at(hours=1), members={"m1": ["kept"]})
    for minutes in range(0, 24, 2):  # twelve commits, each in a status-window interval of its own
        builder.commit("cli-models", "dropped", 0, 5 + minutes, at(hours=1, minutes=minutes - 30))
    builder.write(Lake(tmp_path / "lake"))
    status = main(["models", "--home", str(tmp_path), "--offsets-retention-minutes", "60"])
    output = capsys.readouterr().out
    assert status == 0
    assert "groups by state: Stable consumer 1" in output
    assert "OffsetDelete cli-models dropped-0 (offset 27)" in output
    expirable = lake_for_models(tmp_path / "lake").read_arrow("expirable_offsets").to_pylist()
    assert [(r["rule"], r["retention_minutes"]) for r in expirable] == [("unsubscribed_topic", 60)]

    # the two oldest commits are history only: the window holds the latest ten, the latest stays
    assert main(["prune", "--home", str(tmp_path), "--horizon", "0s", "--dry-run"]) == 0
    output = capsys.readouterr().out
    assert "would remove 2 of 12 offset commit records appended before " in output
    assert "kept of those: 1 latest of its key, 9 status window" in output
    assert main(["prune", "--home", str(tmp_path), "--horizon", "0s"]) == 0
    output = capsys.readouterr().out
    assert "removed 2 of 12 offset commit records" in output
    assert "log offset snapshots: nothing to prune: " in output  # this lake has no snapshots
    assert "committed offset snapshots: nothing to prune: " in output
    assert "group snapshots: nothing to prune: " in output
    assert lake_for_models(tmp_path / "lake").count("offset_commit_records") == 10


@pytest.mark.parametrize("command", [["models"], ["plan"], ["show", "p1"], ["approve", "p1"],
                                     ["apply", "p1", "--bootstrap-server", "127.0.0.1:9"], ["rebase"],
                                     ["prune"]])
def test_a_command_that_reads_a_lake_that_is_not_there_says_so_and_creates_nothing(command, tmp_path, capsys):
    home = tmp_path / "nowhere"
    assert main([*command, "--home", str(home)]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: there is no lake in {home / 'lake'}: give the --home of an existing lake"), error
    assert not home.exists()
