"""The `cluster_report` Dagster asset, materialized on the demo's lake."""

from dagster import AssetKey, Definitions, materialize

from offsets_platform_dagster.report import REPORT_INPUTS, cluster_report
from offsets_platform_dagster.resources import LakeResource
from offsets_platform.views.attention import lag_by_group
from offsets_platform.views.from_lake import lost


def test_cluster_report_writes_the_report_next_to_the_lake_with_the_key_numbers(demo_lake):
    result = materialize([cluster_report], resources={"lake": LakeResource(root=str(demo_lake.root))})
    assert result.success
    (materialization,) = result.asset_materializations_for_node("cluster_report")
    metadata = {key: value.value for key, value in materialization.metadata.items()}

    path = demo_lake.root.parent / "reports" / "cluster_report.html"
    assert metadata["path"] == str(path) and path.exists()
    assert metadata["size_bytes"] == path.stat().st_size
    # lag and losses as the command line counts them: the offsets a group abandoned left out
    assert metadata["lag_heatmap.total_lag_messages"] == sum(row["lag_messages"] for row in lag_by_group(demo_lake))
    assert metadata["retention.messages_lost"] == sum(row["messages_lost"] for row in lost(demo_lake)) > 0
    expiring = demo_lake.query("select count(*) as n from expirable_offsets where expires_at is not null",
                               "expirable_offsets")
    assert metadata["expiration_calendar.offsets_that_expire"] == expiring.column("n")[0].as_py()
    assert metadata["group_states.groups"] > 0 and metadata["coordinator_metrics.offset_commits"] > 0


def test_cluster_report_sits_in_reports_after_the_tables_it_reads():
    defs = Definitions(assets=[cluster_report], resources={"lake": LakeResource()})
    spec = defs.resolve_assets_def("cluster_report")
    assert spec.group_names_by_key[AssetKey("cluster_report")] == "reports"
    deps = {key.to_user_string() for key in spec.asset_deps[AssetKey("cluster_report")]}
    assert deps == set(REPORT_INPUTS)
    assert {"cleanup_plans", "consumer_lag", "expirable_offsets", "retention_forecast"} <= deps
