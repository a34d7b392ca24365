"""Loading the dbt-like project: run order, code versions, and clear errors for broken projects."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsets_platform.models import ProjectError, default_project, load_project
from offsets_platform.models.render import RenderError, render

pytestmark = pytest.mark.fast  # make test-fast


def write_project(root: Path, models: dict[str, str], layer: str = "silver", yml: str | None = None) -> Path:
    """models: name -> SQL, all in one layer, each declared with one column `x`."""
    folder = root / layer
    folder.mkdir(parents=True, exist_ok=True)
    for name, sql in models.items():
        (folder / f"{name}.sql").write_text(sql)
    if yml is None:
        yml = "models:\n" + "".join(f"  - name: {name}\n    columns: [{{name: x, data_type: int}}]\n"
                                    for name in models)
    (folder / f"{layer}.yml").write_text(yml)
    (root / "sources.yml").write_text("sources:\n  - name: bronze\n    tables:\n      - name: offset_commit_records\n")
    return root


def test_the_shipped_project_runs_every_model_after_the_models_it_refs():
    project = default_project()
    position = {model.name: index for index, model in enumerate(project.models)}
    for model in project.models:
        assert model.description and model.grain and model.in_kafka and model.columns, model.name
        for ref in model.refs:
            assert position[ref] < position[model.name], (ref, model.name)
    assert {"committed_offsets", "group_state", "group_state_history", "group_members", "group_subscriptions",
            "expirable_offsets", "consumer_lag", "unconsumed_messages", "coordinator_metrics"} <= set(position)


def test_every_column_of_every_shipped_model_has_a_description():
    project = default_project()
    undescribed = [f"{model.name}.{column.name}" for model in [*project.models, *project.ephemeral.values()]
                   for column in model.columns if not column.description.strip()]
    assert not undescribed, f"columns without a description in the layer YAMLs: {undescribed}"


def test_silver_and_gold_models_read_bronze_only_through_the_staging_models():
    project = default_project()
    direct = [f"{model.layer}/{model.sql_path.name}" for model in project.models if "source(" in model.sql]
    assert not direct, f"models that read a source directly, not through a staging model: {direct}"
    assert {model.layer for model in project.ephemeral.values()} == {"staging"}
    assert all(name.startswith("stg_") for name in project.ephemeral)


def test_run_order_follows_refs_in_a_small_project(tmp_path):
    project = load_project(write_project(tmp_path, {
        "c": "select x from {{ ref('b') }}",
        "a": "select x from {{ source('bronze', 'offset_commit_records') }}",
        "b": "select x from {{ ref('a') }}",
    }))
    assert [m.name for m in project.models] == ["a", "b", "c"]
    assert project.model("c").refs == ("b",)
    assert project.model("a").sources == (("bronze", "offset_commit_records"),)
    assert [m.name for m in project.downstream({"b"})] == ["b", "c"]
    assert [m.name for m in project.upstream({"b"})] == ["a", "b"]
    assert [m.name for m in project.upstream({"c"})] == ["a", "b", "c"]


def test_code_version_changes_with_the_sql(tmp_path):
    first = load_project(write_project(tmp_path / "one", {"a": "select 1 as x"})).model("a")
    same = load_project(write_project(tmp_path / "two", {"a": "select 1 as x"})).model("a")
    changed = load_project(write_project(tmp_path / "three", {"a": "select 2 as x"})).model("a")
    assert first.code_version == same.code_version != changed.code_version


def test_a_ref_to_a_missing_model_names_both(tmp_path):
    with pytest.raises(ProjectError, match=r"model 'a' \(silver/a.sql\) refs 'nope', which is not a model"):
        load_project(write_project(tmp_path, {"a": "select x from {{ ref('nope') }}"}))


def test_duplicate_model_names_across_layers_are_an_error(tmp_path):
    write_project(tmp_path, {"a": "select 1 as x"}, layer="silver")
    write_project(tmp_path, {"a": "select 2 as x"}, layer="gold")
    with pytest.raises(ProjectError, match=r"duplicate model name 'a': gold/a.sql and silver/a.sql"):
        load_project(tmp_path)


def test_duplicate_names_in_one_yaml_are_an_error(tmp_path):
    yml = "models:\n" + "  - name: a\n    columns: [{name: x, data_type: int}]\n" * 2
    with pytest.raises(ProjectError, match=r"declares duplicate model names: \['a'\]"):
        load_project(write_project(tmp_path, {"a": "select 1 as x"}, yml=yml))


def test_a_cycle_is_an_error(tmp_path):
    with pytest.raises(ProjectError, match="cycle"):
        load_project(write_project(tmp_path, {"a": "select x from {{ ref('b') }}",
                                              "b": "select x from {{ ref('a') }}"}))


def test_sql_and_yaml_must_match(tmp_path):
    with pytest.raises(ProjectError, match=r"SQL without an entry in silver.yml: \['b'\]"):
        load_project(write_project(tmp_path / "one", {"a": "select 1 as x", "b": "select 1 as x"},
                                   yml="models:\n  - name: a\n    columns: [{name: x, data_type: int}]\n"))
    folder = write_project(tmp_path / "two", {"a": "select 1 as x"},
                           yml="models:\n  - name: a\n    columns: [{name: x, data_type: int}]\n"
                               "  - name: ghost\n    columns: [{name: x, data_type: int}]\n")
    with pytest.raises(ProjectError, match=r"declares model 'ghost' but silver/ghost.sql is missing"):
        load_project(folder)


def test_an_undeclared_source_and_an_unknown_type_are_errors(tmp_path):
    with pytest.raises(ProjectError, match=r"source\('bronze', 'group_snapshots'\), which sources.yml does not declare"):
        load_project(write_project(tmp_path / "one", {"a": "select x from {{ source('bronze', 'group_snapshots') }}"}))
    with pytest.raises(ValueError, match=r"model a: unsupported column type 'decimalish'"):
        load_project(write_project(tmp_path / "two", {"a": "select 1 as x"},
                                   yml="models:\n  - name: a\n    columns: [{name: x, data_type: decimalish}]\n")
                     ).model("a").table_spec()


def test_incremental_models_need_a_unique_key(tmp_path):
    yml = "models:\n  - name: a\n    materialized: incremental\n    columns: [{name: x, data_type: int}]\n"
    with pytest.raises(ProjectError, match="an incremental model needs a unique_key"):
        load_project(write_project(tmp_path, {"a": "select 1 as x"}, yml=yml))


def test_rendering_new_only_sources_and_variables():
    sql = "select * from {{ source('bronze', 't', new_only=true) }} where n < {{ var('limit') }}"
    assert render("m", sql, {"limit": 3}).sql == "select * from t where n < 3"
    assert render("m", sql, {"limit": 3}, incremental=True).sql == "select * from m__t__new where n < 3"
    with pytest.raises(RenderError, match=r"model m: var\('limit'\) is not set"):
        render("m", sql)
    assert render("m", """{{ "it's" | sql_string }}""").sql == "'it\\'s'"


def _incremental_yml(*names: str) -> str:
    return "models:\n" + "".join(f"  - name: {name}\n    materialized: incremental\n    unique_key: [x]\n"
                                 f"    columns: [{{name: x, data_type: int}}]\n" for name in names)


def test_delete_when_names_a_result_column_of_an_incremental_model(tmp_path):
    # it deletes rows merged in earlier runs; it is the result's flag, not a column of the table
    flagged = "select 1 as x, false as is_pruned"
    yml = _incremental_yml("a") + "    delete_when: is_pruned\n"
    assert load_project(write_project(tmp_path / "ok", {"a": flagged}, yml=yml)).model("a").delete_when == "is_pruned"
    with pytest.raises(ProjectError, match="only an incremental model"):
        load_project(write_project(tmp_path / "table", {"a": flagged}, yml=yml.replace("incremental", "table")))
    with pytest.raises(ProjectError, match="must not be a declared column"):
        load_project(write_project(tmp_path / "declared", {"a": flagged},
                                   yml=yml.replace("delete_when: is_pruned", "delete_when: x")))


def test_an_incremental_strategy_is_merge_rewrite_or_replace_and_only_for_an_incremental_model(tmp_path):
    sql = "select 1 as x"
    assert load_project(write_project(tmp_path / "default", {"a": sql}, yml=_incremental_yml("a"))) \
        .model("a").incremental_strategy == "merge"
    yml = _incremental_yml("a") + "    incremental_strategy: rewrite\n"
    assert load_project(write_project(tmp_path / "ok", {"a": sql}, yml=yml)).model("a").incremental_strategy == "rewrite"
    assert load_project(write_project(tmp_path / "replace", {"a": sql}, yml=yml.replace("rewrite", "replace"))) \
        .model("a").incremental_strategy == "replace"
    with pytest.raises(ProjectError, match="incremental_strategy must be one of"):
        load_project(write_project(tmp_path / "unknown", {"a": sql}, yml=yml.replace("rewrite", "append")))
    with pytest.raises(ProjectError, match="only an incremental model has one"):
        load_project(write_project(tmp_path / "table", {"a": sql}, yml=yml.replace("incremental\n", "table\n", 1)))


@pytest.mark.parametrize("key", ["full_when_small", "full_when_mostly_new"])
def test_a_rule_for_a_full_run_is_a_boolean_of_an_incremental_model(tmp_path, key):
    sql = "select 1 as x"
    assert not getattr(load_project(write_project(tmp_path / "default", {"a": sql}, yml=_incremental_yml("a")))
                       .model("a"), key)
    yml = _incremental_yml("a") + f"    {key}: true\n"
    assert getattr(load_project(write_project(tmp_path / "ok", {"a": sql}, yml=yml)).model("a"), key)
    with pytest.raises(ProjectError, match=f"{key} must be true or false"):
        load_project(write_project(tmp_path / "text", {"a": sql}, yml=yml.replace("true", "'yes'")))
    with pytest.raises(ProjectError, match="only an incremental model has both"):
        load_project(write_project(tmp_path / "table", {"a": sql}, yml=yml.replace("incremental\n", "table\n", 1)))


def test_a_ref_at_last_run_needs_an_incremental_model_and_an_incremental_run(tmp_path):
    sql = ("select 1 as x {% if is_incremental() %} union all "
           "select x from {{ ref('b', at_last_run=true) }} {% endif %}")
    project = load_project(write_project(tmp_path / "ok", {"a": sql, "b": "select 1 as x"},
                                         yml=_incremental_yml("a", "b")))
    assert project.model("a").refs == ("b",) and project.model("a").refs_at_last_run == ("b",)
    assert "a__b__at_last_run" in render("a", sql, incremental=True).sql
    yml = ("models:\n  - name: a\n    columns: [{name: x, data_type: int}]\n"
           "  - name: b\n    columns: [{name: x, data_type: int}]\n")
    with pytest.raises(ProjectError, match=r"at_last_run=true\) needs an incremental model"):
        load_project(write_project(tmp_path / "table", {"a": sql, "b": "select 1 as x"}, yml=yml))
    with pytest.raises(RenderError, match=r"only defined in an incremental run"):
        render("a", "select x from {{ ref('b', at_last_run=true) }}")
