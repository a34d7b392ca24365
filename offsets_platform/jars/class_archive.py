"""Building Spark's class-data archive (`offsets-platform install-jars spark-classes`).

A child process starts Spark as every command does, with one more JVM option that writes the
classes the JVM loaded to the archive when it exits, and runs a training refresh on an empty lake:
every model of the project through the small-table path (Arrow and delta-rs), which loads
Spark's planner and every operator the models' SQL uses, then the few models that
`committed_offsets` reads through delta-spark, as a large lake runs them, which loads Delta's
reader and writer. Those are the classes a refresh in a fresh JVM would otherwise load first.

The JVM writes the archive as it exits, so the child stops its JVM and waits for it. A truncated
archive crashes the JVM that maps it: the archive is written under a temporary name and renamed
into place only once the child ended well, and the key that lets sessions use it is written last
(offsets_platform.lake.class_archive). `benchmarks/cold_refresh_bench.py --compare class-archive`
measures what it saves.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from offsets_platform.lake.class_archive import (
    CLASS_ARCHIVE_ENV,
    archive_path,
    dump_options,
    is_up_to_date,
    key_path,
    runtime_key,
)

NAME = "spark-classes"
# The training runs this model and those it reads through delta-spark: an incremental model and
# two table models read and write Delta as every model does. All models that way took 30 s more to
# train and made a refresh through delta-spark in a fresh JVM no faster (benchmarks/README.md).
DELTA_SPARK_TRAINING = "committed_offsets"


class ClassArchiveNotBuilt(RuntimeError):
    """The training refresh failed; the message holds its last output."""


def build_class_archive(force: bool = False, say: Callable[[str], None] = print) -> Path:
    """Build the archive unless one for this Java and pyspark is there; returns its path."""
    archive = archive_path()
    if is_up_to_date(archive) and not force:
        say(f"{NAME}: Spark's class-data archive already in {archive}")
        return archive
    say(f"{NAME}: building Spark's class-data archive in {archive} (a training refresh: about a minute)")
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{NAME}-", dir=archive.parent) as scratch:
        partial = Path(scratch) / archive.name
        # The child's sessions look for an archive at the new path, where there is none yet: a JVM
        # cannot map one archive while it writes another.
        run = subprocess.run([sys.executable, "-m", __name__, str(partial)], capture_output=True, text=True,
                             env={**os.environ, CLASS_ARCHIVE_ENV: str(partial)})
        if run.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            output = "\n".join((run.stdout + run.stderr).strip().splitlines()[-30:])
            raise ClassArchiveNotBuilt(f"the training refresh that builds Spark's class-data archive failed "
                                       f"(exit {run.returncode}); its last output:\n{output}")
        key_path(archive).unlink(missing_ok=True)  # no session maps the archive while it is replaced
        partial.rename(archive)
    key_path(archive).write_text(runtime_key() + "\n")
    say(f"{NAME}: {archive.stat().st_size / 1e6:.0f} MB in {archive}")
    return archive


def _train(archive: Path) -> None:
    """The training refresh, in a JVM that writes its classes to `archive` as it exits."""
    from pyspark import SparkContext

    from offsets_platform.lake.spark import get_spark
    from offsets_platform.models import ModelRunner, lake_for_models

    spark = get_spark(master="local[2]", app_name="offsets_platform-class-archive",
                      extra_conf={"spark.driver.extraJavaOptions": dump_options(archive)})
    jvm = SparkContext._gateway.proc  # the JVM itself: Spark's launcher script replaces its shell with it
    with tempfile.TemporaryDirectory(prefix="class-archive-lake-") as scratch:
        lake = lake_for_models(Path(scratch) / "lake")
        ModelRunner(spark, lake, emit=lambda line: None).run_all()
        through_delta_spark = ModelRunner(spark, lake, emit=lambda line: None, arrow_max_bytes=-1,
                                          small_data_max_bytes=-1, arrow_result_max_rows=-1)
        needed = through_delta_spark.project.upstream({DELTA_SPARK_TRAINING})
        through_delta_spark.run_all(select=[model.name for model in needed], full_refresh=True)
    spark.stop()
    # The gateway's JVM exits once its standard input closes; it writes the archive as it does.
    SparkContext._gateway.shutdown()
    jvm.stdin.close()
    if jvm.wait(timeout=300) != 0:
        raise SystemExit(f"Spark's JVM ended with exit status {jvm.returncode} while writing {archive}")


if __name__ == "__main__":
    _train(Path(sys.argv[1]))
