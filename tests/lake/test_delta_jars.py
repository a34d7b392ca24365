"""Delta's Spark jars as `make` installs them (offsets_platform/jars/delta.pom.xml), and the sessions that carry them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from offsets_platform.lake.spark import DELTA_JARS_ENV, DeltaJarsMissing, delta_jars, get_spark


def artifact(jar: Path) -> str:
    """A jar's artifact without its version: `jackson-core-2.21.2.jar` -> `jackson-core`."""
    return re.sub(r"-\d[^-]*(-\d+)?\.jar$", "", jar.name)


def test_the_installed_delta_jars_are_the_ones_for_this_pyspark():
    spark_line = ".".join(pyspark.__version__.split(".")[:2])
    names = [jar.name for jar in delta_jars()]
    assert any(name.startswith(f"delta-spark_{spark_line}_2.13-") for name in names), names
    assert any(name.startswith("delta-storage-") for name in names), names


def test_no_delta_jar_repeats_a_library_pyspark_ships():
    """Spark puts these jars beside its own; a second copy of a library in another version would
    make which class loads a matter of order (offsets_platform/jars/delta.pom.xml's exclusions)."""
    pyspark_jars = {artifact(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    repeated = sorted(jar.name for jar in delta_jars() if artifact(jar) in pyspark_jars)
    assert not repeated


def test_missing_jars_say_what_to_run_and_start_no_session(tmp_path, monkeypatch):
    monkeypatch.setenv(DELTA_JARS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(DeltaJarsMissing, match=r"Run `offsets-platform install-jars delta`"):
        get_spark(master="local[1]", app_name="never-started")


def test_a_session_reads_and_writes_delta_with_sql(spark, tmp_path):
    path = tmp_path / "t"
    assert spark.conf.get("spark.sql.extensions") == "io.delta.sql.DeltaSparkSessionExtension"
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1), (2)")
    spark.sql(f"MERGE INTO delta.`{path}` AS t USING (SELECT 3L AS id) AS s ON t.id = s.id "
              "WHEN NOT MATCHED THEN INSERT *")
    assert sorted(row.id for row in spark.read.format("delta").load(str(path)).collect()) == [1, 2, 3]
    # time travel, which the models' incremental refresh will use
    assert spark.read.format("delta").option("versionAsOf", 1).load(str(path)).count() == 2


# A process of its own per session: the setting is fixed when Spark starts. `without` removes the
# project's setting first, to show the spark-defaults.conf below does turn deletion vectors on.
_CREATE_AND_DELETE = """
import sys
import pyarrow.fs as pafs
from deltalake import DeltaTable
from offsets_platform.lake import spark as lake_spark
path, variant = sys.argv[1], sys.argv[2]
if variant == "without":
    del lake_spark._DELTA_CONF["spark.databricks.delta.properties.defaults.enableDeletionVectors"]
spark = lake_spark.get_spark(master="local[1]")
spark.sql(f"CREATE OR REPLACE TABLE delta.`{path}` USING delta AS SELECT id FROM range(10)")
spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 3")
try:
    # with a filesystem of pyarrow's, as Lake.read_arrow reads: delta-rs's own can abort the
    # interpreter at exit ("terminate called without an active exception")
    filesystem = pafs.SubTreeFileSystem(path, pafs.LocalFileSystem())
    print("delta-rs reads", DeltaTable(path).to_pyarrow_table(filesystem=filesystem).num_rows, "rows")
except Exception as error:
    print("delta-rs fails:", error)
spark.stop()
"""


def test_tables_spark_creates_stay_readable_by_delta_rs_whatever_sparks_defaults_say(tmp_path):
    """A cluster's spark-defaults.conf may turn deletion vectors on for new tables; delta-rs 1.6.6
    cannot read a table that has them. The project's sessions keep them off."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "spark.databricks.delta.properties.defaults.enableDeletionVectors true\n")
    env = {**os.environ, "SPARK_CONF_DIR": str(conf), "SPARK_LOCAL_IP": "127.0.0.1"}
    outputs = {}
    for variant in ("with", "without"):
        result = subprocess.run([sys.executable, "-c", _CREATE_AND_DELETE, str(tmp_path / variant), variant],
                                capture_output=True, text=True, env=env, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        outputs[variant] = result.stdout.strip().splitlines()[-1]
    assert outputs["with"] == "delta-rs reads 7 rows"
    assert outputs["without"].startswith("delta-rs fails:") and "deletionVectors" in outputs["without"]
