"""Two ingests of one lake at the same moment, on the real broker: every record lands once.

Each run is made to pause once it has read the lake's resume positions, until the other has read
them too (tests/at_once.py). Without the lake's "ingest" lease both
read the same positions and both append everything; with it, the second run reads the positions
only after the first finished, so the barrier gives up and the second run finds nothing new.
"""

from __future__ import annotations

import pytest

from offsets_platform.cli import main
from offsets_platform.ingest import offsets_topic
from offsets_platform.ingest.offsets_topic import ingest_offsets_topic
from offsets_platform.lake import Lake
from offsets_platform.lake.lease import LeaseBusy, hold_lease
from tests.at_once import Meeting, run_at_once
from tests.ingest.conftest import produce
from tests.ingest.test_offsets_topic_ingest import keys_of, many_records

pytestmark = pytest.mark.integration


def test_two_ingests_at_once_write_each_record_once(mirror_connection, tmp_path, monkeypatch):
    records = many_records(3_000)
    produce(mirror_connection, records)
    root = tmp_path / "lake"

    meet = Meeting()
    monkeypatch.setattr(offsets_topic, "resume_positions", meet.after(offsets_topic.resume_positions))
    waiting: list[str] = []
    results = run_at_once(lambda: ingest_offsets_topic(mirror_connection, Lake(root), batch_records=500,
                                                       emit=waiting.append))

    assert len(results) == 2
    assert sorted(result.records_read for result in results) == [0, len(records)]
    rows = keys_of(Lake(root), "offset_commit_records")
    assert len(rows) == len(set(rows)) == len(records)
    assert any(line.startswith("waiting up to 600 s for the lake's 'ingest' lease, held by ingest of "
                               f"{mirror_connection.offsets_topic} from {mirror_connection.bootstrap_servers} (pid ")
               for line in waiting), waiting


def test_an_ingest_that_will_not_wait_names_the_run_it_found_and_writes_nothing(mirror_connection, tmp_path):
    produce(mirror_connection, many_records(10))
    root = tmp_path / "lake"
    with hold_lease(root, "ingest", "ingest of __consumer_offsets from the nightly job"):
        with pytest.raises(LeaseBusy, match="held by ingest of __consumer_offsets from the nightly job"):
            ingest_offsets_topic(mirror_connection, Lake(root), lease_wait_s=0, emit=lambda line: None)
    assert not (root / "bronze").exists()


def test_the_command_line_says_which_ingest_holds_the_lake_and_exits_1(mirror_connection, tmp_path, capsys):
    home = tmp_path / "home"
    with hold_lease(home / "lake", "ingest", "ingest of __consumer_offsets from the nightly job"):
        code = main(["ingest", "--bootstrap-server", mirror_connection.bootstrap_servers, "--home", str(home),
                     "--offsets-topic", mirror_connection.offsets_topic, "--wait", "0"])
    assert code == 1
    error = capsys.readouterr().err
    assert error.startswith("error: the lake's 'ingest' lease is held by ingest of __consumer_offsets from the "
                            "nightly job (pid "), error
