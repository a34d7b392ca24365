"""offsets_platform.notebooks: the notebooks read the configured lake and never make one."""

import pytest

from offsets_platform.lake import NoLake
from offsets_platform.models.project import lake_for_models
from offsets_platform.notebooks import configured_cluster, configured_home, configured_lake


def test_a_relative_home_is_found_in_a_parent_folder(tmp_path, monkeypatch):
    (tmp_path / ".offsets_platform" / "lake").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # where Jupyter runs a notebook
    monkeypatch.delenv("OFFSETS_PLATFORM_HOME", raising=False)
    assert configured_home() == tmp_path / ".offsets_platform"


def test_without_the_models_tables_the_error_names_the_lake_and_nothing_is_created(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(tmp_path / "home"))
    with pytest.raises(NoLake, match=f"no models' tables in {tmp_path / 'home' / 'lake'}.*OFFSETS_PLATFORM_HOME"):
        configured_lake()
    assert not (tmp_path / "home").exists()


def test_the_demo_lake_is_read_when_configured(demo_run, monkeypatch, capsys):
    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(demo_run.home / "demo"))
    assert configured_lake().root == demo_run.lake.root
    assert f"reading the lake in {demo_run.lake.root}" in capsys.readouterr().out


def test_a_configured_cluster_is_used_as_it_is(tmp_path):
    with configured_cluster(lake_for_models(tmp_path / "lake"),
                            env={"OFFSETS_PLATFORM_BOOTSTRAP_SERVERS": "kafka-1:9092"}) as connection:
        assert connection.bootstrap_servers == "kafka-1:9092"


def test_no_cluster_and_no_embedded_data_names_the_setting(tmp_path):
    with pytest.raises(NoLake, match="OFFSETS_PLATFORM_BOOTSTRAP_SERVERS"):
        with configured_cluster(lake_for_models(tmp_path / "lake"), env={}):
            pass
