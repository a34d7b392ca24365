"""The lake on S3-compatible object storage, what needs no server: the s3a jars, the settings, the
URI, the secrets kept out of what is shown, a down endpoint (tests/object_storage has the rest)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pyspark
import pytest

from offsets_platform.lake import Lake
from offsets_platform.lake.spark import s3_jars
from offsets_platform.lake.storage import ObjectStoreUnreachable, S3Access, normalise_uri
from offsets_platform.settings import Settings

def artifact(jar: Path) -> str:
    return re.sub(r"-\d[^-]*(-\d+)?(\.Final)?\.jar$", "", jar.name)


def test_the_s3a_jars_are_installed_and_repeat_no_library_pyspark_ships():
    jars = s3_jars(required=True)
    pyspark_jars = {artifact(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    assert any(jar.name.startswith("hadoop-aws-") for jar in jars)
    assert not sorted(jar.name for jar in jars if artifact(jar) in pyspark_jars)


def test_a_lake_on_object_storage_keeps_its_leases_in_a_local_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OFFSETS_PLATFORM_LAKE_URI", "s3://bucket/some/prefix/")
    settings = Settings.from_env()
    assert settings.lake_root == "s3://bucket/some/prefix/"
    lake = Lake(settings.lake_root, access=S3Access.from_env({}))
    assert lake.remote and lake.root == "s3://bucket/some/prefix"
    assert lake.leases == tmp_path / "home" / "leases" / "bucket" / "some" / "prefix"


def test_the_default_lake_stays_a_local_folder(tmp_path):
    assert Settings.from_env({}).lake_root == Path(".offsets_platform") / "lake"
    assert Settings.from_env({"OFFSETS_PLATFORM_HOME": str(tmp_path)}).lake_root == tmp_path / "lake"
    lake = Lake(tmp_path / "lake")
    assert not lake.remote and lake.leases == lake.root == tmp_path / "lake"


def test_the_uri_is_checked_and_never_repeats_credentials():
    assert normalise_uri("s3a://bucket/a/prefix/") == "s3://bucket/a/prefix"
    with pytest.raises(ValueError) as refused:
        normalise_uri("s3://AKIDEXAMPLE:sup3r-s3cret@bucket/prefix")
    assert "sup3r-s3cret" not in str(refused.value) and "AKIDEXAMPLE" not in str(refused.value)
    with pytest.raises(ValueError, match="s3://bucket/prefix"):
        normalise_uri("s3:///prefix")


def test_the_secrets_stay_out_of_reprs_and_spark_settings():
    access = S3Access.from_env({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "sup3r-s3cret",
                                "AWS_SESSION_TOKEN": "t0ken", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"})
    shown = repr(access) + repr(access.spark_conf()) + access.where()
    assert not any(secret in shown for secret in ("AKIDEXAMPLE", "sup3r-s3cret", "t0ken"))
    assert access.delta_options()["AWS_ALLOW_HTTP"] == "true"
    assert access.spark_conf()["spark.hadoop.fs.s3a.path.style.access"] == "true"


def test_a_down_endpoint_names_the_address_and_what_to_check(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    access = S3Access.from_env({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_SECRET_ACCESS_KEY": "sup3r-s3cret"})
    lake = Lake("s3://lake/down", leases=tmp_path, access=access)
    with pytest.raises(ObjectStoreUnreachable) as down:
        lake.exists("offset_commit_records")
    message = str(down.value)
    assert f"127.0.0.1:{port}" in message and "AWS_ENDPOINT_URL" in message and "s3://lake/down" in message
    assert "sup3r-s3cret" not in message


def test_the_notebooks_follow_the_uri_and_look_for_no_broker_data_beside_it(tmp_path, monkeypatch):
    from offsets_platform.lake.delta import NoLake
    from offsets_platform.notebooks import configured_cluster

    lake = Lake("s3://bucket/prefix", leases=tmp_path, access=S3Access.from_env({}))
    with pytest.raises(NoLake, match=r"beside a lake on object storage \(s3://bucket/prefix\).*BOOTSTRAP_SERVERS"):
        with configured_cluster(lake, env={}):
            pass


def test_a_notebook_takes_the_same_leases_as_the_command_line_for_a_lake_on_s3(tmp_path, monkeypatch):
    """A notebook applying a plan must exclude a command-line apply of the same lake: both lock
    files in one folder."""
    import offsets_platform.notebooks as notebooks

    env = {"OFFSETS_PLATFORM_HOME": str(tmp_path / "home"), "OFFSETS_PLATFORM_LAKE_URI": "s3://bucket/some/prefix"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    opened = {}

    def opened_lake(root, leases=None):
        opened["lake"] = Lake(root, leases=leases, access=S3Access.from_env({}))
        raise NoLakeYet

    class NoLakeYet(Exception):
        pass

    monkeypatch.setattr(notebooks, "lake_for_models", opened_lake)
    with pytest.raises(NoLakeYet):
        notebooks.configured_lake(env)
    assert opened["lake"].leases == Lake(env["OFFSETS_PLATFORM_LAKE_URI"], access=S3Access.from_env({})).leases
