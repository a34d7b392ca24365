"""Spark's class-data archive on a real JVM: a session the product starts maps Spark's classes from
the archive `make` built (`offsets-platform install-jars spark-classes`), and still runs queries."""

import subprocess
import sys

from offsets_platform.lake.class_archive import archive_path, is_up_to_date

# A fresh JVM (the tests' own session started without the class log): it logs where each class came
# from, runs a query and prints its answer.
CHILD = """
import sys
from offsets_platform.lake.spark import get_spark
spark = get_spark(master="local[1]", extra_conf={
    "spark.driver.extraJavaOptions": f"-Xlog:class+load=info:file={sys.argv[1]}"})
print(spark.range(1000).selectExpr("sum(id) as total").collect()[0].total)
print(spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
spark.stop()
"""


def test_a_session_maps_spark_classes_from_the_archive(tmp_path):
    assert is_up_to_date(), (f"no class archive for this Java and pyspark at {archive_path()}: "
                             "`make` builds it (offsets-platform install-jars spark-classes)")
    class_log = tmp_path / "classes.log"
    done = subprocess.run([sys.executable, "-c", CHILD, str(class_log)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    total, java_options = done.stdout.strip().splitlines()[-2:]
    assert total == str(sum(range(1000)))
    # the project's options, the archive's and the ones asked for, together
    assert "-Duser.timezone=UTC" in java_options and f"-XX:SharedArchiveFile={archive_path()}" in java_options
    assert "-Xlog:class+load" in java_options
    from_archive = [line for line in class_log.read_text().splitlines() if "source: shared objects file (top)" in line]
    spark_classes = [line for line in from_archive if " org.apache.spark." in line]
    # thousands of Spark's classes mapped from the archive (the JVM's own base archive holds none)
    assert len(spark_classes) > 2000, (len(from_archive), len(spark_classes))
    assert any(" org.apache.spark.sql.SparkSession " in line for line in spark_classes)
