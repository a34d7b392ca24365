"""The lake resource hands every asset of a run the same Lake (and its open tables)."""

from dagster import asset, materialize

from offsets_platform_dagster.resources import LakeResource


def test_the_assets_of_one_run_share_one_lake_and_two_runs_do_not(tmp_path):
    seen = []

    @asset
    def first(lake: LakeResource) -> None:
        seen.append(lake.lake())

    @asset(deps=[first])
    def second(lake: LakeResource) -> None:
        seen.append(lake.lake())
        seen.append(lake.lake())

    resources = {"lake": LakeResource(root=str(tmp_path / "lake"))}
    assert materialize([first, second], resources=resources).success
    assert materialize([first, second], resources=resources).success

    run_1, run_2 = seen[:3], seen[3:]
    assert run_1[0] is run_1[1] is run_1[2] and run_2[0] is run_2[1] is run_2[2]
    assert run_1[0] is not run_2[0]
    assert run_1[0].root == tmp_path / "lake"
