"""A Spark Connect client for tests/lake/test_spark_connect.py, run as its own process: pyspark
refuses a Spark Connect session in a process that already runs a local Spark, as the test process
does. Reads the session's settings, runs every model over the server, then the checks of a few
models that use every kind of test, and a broken copy of group_state through its checks; prints
the outcomes as JSON.

    python -m tests.lake.connect_client sc://HOST:PORT LAKE_ROOT AS_OF
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import functions as F

from offsets_platform.lake.spark import get_spark, labelled_jobs
from offsets_platform.models import ModelRunner, default_project, lake_for_models
from offsets_platform.quality.expectations import validate
from offsets_platform.quality.specs import specs_for_model


def main(endpoint: str, lake_root: str, as_of: str) -> None:
    spark = get_spark(remote=endpoint)
    settings = {key: spark.conf.get(key) for key in ("spark.sql.shuffle.partitions", "spark.sql.session.timeZone")}
    lake = lake_for_models(lake_root)
    runs = ModelRunner(spark, lake, variables={"as_of": as_of}, emit=lambda line: None).run_all()
    project = default_project()
    # each table as the runner hands a small table to Spark (via Arrow): the checks run on the
    # server either way, and a delta-spark read of each would cost the server a job per table
    checks = {name: [outcome.success for outcome in
                     validate(lake.spark_read(spark, name, via_arrow=True), name,
                              specs_for_model(project.model(name))).outcomes]
              for name in tables_covering_every_test(project)}
    group_state = lake.spark_read(spark, "group_state")
    broken = group_state.unionByName(group_state.limit(1)) \
        .unionByName(group_state.limit(1).withColumn("state", F.lit(None).cast("string")))
    failed = [outcome.description for outcome in
              validate(broken, "group_state", specs_for_model(project.model("group_state"))).outcomes
              if not outcome.success]
    # Delta through the server: its reader, and its SQL (MERGE) on a table the lake wrote
    group_state_path = str(lake.path("group_state"))
    delta = {"extensions": spark.conf.get("spark.sql.extensions"),
             "read": spark.read.format("delta").load(group_state_path).count()}
    spark.sql(f"MERGE INTO delta.`{group_state_path}` AS t USING delta.`{group_state_path}` AS s "
              "ON t.group_id = s.group_id WHEN MATCHED THEN UPDATE SET *")
    delta["after_merge"] = spark.read.format("delta").load(group_state_path).count()
    # the label of a model's operations: a tag of this thread's while it runs, none after
    with labelled_jobs(spark, "model a,b"):
        tags = {"within": sorted(spark.getTags())}
    tags["after"] = sorted(spark.getTags())
    spark.stop()
    print(json.dumps({"settings": settings, "modes": {run.model: run.mode for run in runs}, "checks": checks,
                      "broken_failed": failed, "delta": delta, "tags": tags}))


def tables_covering_every_test(project) -> list[str]:
    """Few models whose checks use, together, every kind of test the project declares (chosen
    greedily): the tables the server wrote equal the local run's (the test compares them), so
    checking each kind of test once on the server shows the checks run there, at a fraction of
    the cost of all of them."""
    tests = {model.name: {spec.test for spec in specs_for_model(model)} for model in project.models}
    left, chosen = set().union(*tests.values()), []
    while left:
        best = max(tests, key=lambda name: len(tests[name] & left))
        chosen.append(best)
        left -= tests[best]
    return chosen


if __name__ == "__main__":
    main(*sys.argv[1:])
