"""proving_ground.notebooks: which lake the notebooks open, and the small demo when there is none."""

import proving_ground.demo
from offsets_platform.models.project import lake_for_models
from proving_ground.notebooks import SMALL_DEMO, demo_home, demo_lake


def test_a_relative_home_is_found_in_a_parent_folder(tmp_path, monkeypatch):
    (tmp_path / ".offsets_platform" / "demo" / "lake").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # where Jupyter runs a notebook
    monkeypatch.delenv("OFFSETS_PLATFORM_HOME", raising=False)
    assert demo_home() == tmp_path / ".offsets_platform"


def test_without_a_demo_a_small_one_runs_first_and_says_so(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_run_demo(home, **options):
        calls.append((home, options))
        return lake_for_models(home / "demo" / "lake")

    monkeypatch.setattr(proving_ground.demo, "run_demo", fake_run_demo)
    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(tmp_path))
    lake = demo_lake()
    assert calls == [(tmp_path, SMALL_DEMO)]
    assert lake.root == tmp_path / "demo" / "lake"
    assert "running a small demo first" in capsys.readouterr().out


def test_an_existing_demo_is_used_as_it_is(demo_run, monkeypatch, capsys):
    def must_not_run(*args, **kwargs):
        raise AssertionError("a demo ran although one exists")

    monkeypatch.setattr(proving_ground.demo, "run_demo", must_not_run)
    monkeypatch.setenv("OFFSETS_PLATFORM_HOME", str(demo_run.home))
    assert demo_lake().root == demo_run.lake.root
    assert f"using the demo lake in {demo_run.lake.root}" in capsys.readouterr().out
