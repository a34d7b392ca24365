"""Values pasted into SQL are quoted by offsets_platform.lake.sql_literals: a single quote, a
backslash or a double quote in a plan id or a group name neither breaks a query nor changes what
it selects, on delta-rs's engine (`Lake.query`) and on Spark (the models' `sql_string`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from offsets_platform.cleanup.approvals import approve, approved_actions
from offsets_platform.cleanup.plans import DELETE_GROUPS, CleanupPlan, PlanError, PlannedAction, load_plan, save_plan
from offsets_platform.lake.spark import lazy_sql
from offsets_platform.lake.sql_literals import lake_string
from offsets_platform.models.render import render

TRICKY = 'it\'s a \\ "name"'
# Values a wrong quoting would confuse with TRICKY (or with everything): the backslash doubled or
# dropped, the quote doubled, the text before the quote, an injected condition.
NAMES = [TRICKY, 'it\'s a \\\\ "name"', 'it\'s a  "name"', 'it\'\'s a \\ "name"', "it", "x' or '1'='1"]


def _plan(plan_id: str) -> CleanupPlan:
    created = datetime.now(timezone.utc).replace(microsecond=0)
    action = PlannedAction(DELETE_GROUPS, group=plan_id, topic=None, partition=None, reason="test", facts={})
    return CleanupPlan(plan_id, created, created + timedelta(hours=1), "test", (action,))


def test_plan_ids_and_group_names_with_quotes_select_exactly_their_rows(lake):
    for name in NAMES:
        save_plan(lake, _plan(name))  # its "already stored?" query must not match another plan
    for name in NAMES:
        plan = load_plan(lake, name)
        assert plan.plan_id == name and [a.group for a in plan.actions] == [name]
        with pytest.raises(PlanError, match="already stored"):
            save_plan(lake, _plan(name))
        rows = lake.query(f'select plan_id from cleanup_plans where "group" = {lake_string(name)}', "cleanup_plans")
        assert rows["plan_id"].to_pylist() == [name]
    approve(lake, TRICKY, "alice")
    assert [row["plan_id"] for row in approved_actions(lake, load_plan(lake, TRICKY)).values()] == [TRICKY]
    assert approved_actions(lake, load_plan(lake, NAMES[1])) == {}


def test_spark_sql_string_selects_exactly_the_group_named(spark):
    spark.createDataFrame([(name,) for name in NAMES], "`group` string").createOrReplaceTempView("sql_literal_groups")
    for name in NAMES:
        sql = render("m", "select `group` from sql_literal_groups where `group` = {{ var('group') | sql_string }}",
                     {"group": name}).sql
        assert lazy_sql(spark, sql).toArrow()["group"].to_pylist() == [name]
