"""Shared setup of the notebooks: find the demo's lake, or make one.

The notebooks explore the lake that `make demo` leaves under `$OFFSETS_PLATFORM_HOME/demo/lake`
(default `.offsets_platform/demo/lake`). When there is none yet, `demo_lake()` runs a small demo
first (about two minutes, on a fresh embedded broker that it stops afterwards) and says so.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection, Settings

# A small demo: enough live traffic for every table to have rows.
SMALL_DEMO = {"seed": 3, "live_scale": 0.2}


def demo_home() -> Path:
    """The folder whose `demo` subfolder holds the latest demo (`Settings.home`).

    A relative home (the default, `.offsets_platform`) is looked for in the working folder and
    then in its parents, because Jupyter runs a notebook in `notebooks/` while `make demo` writes
    the demo at the repository root. Without a demo anywhere, it is the working folder's.
    """
    home = Settings.from_env().home
    if home.is_absolute():
        return home
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / home / "demo" / "lake").is_dir():
            return folder / home
    return here / home


def demo_lake() -> Lake:
    """The lake of the latest demo, after running a small demo if there is none."""
    home = demo_home()
    lake = lake_for_models(home / "demo" / "lake")
    # The gold tables the notebooks read exist only once a demo's models have run.
    if lake.exists("expirable_offsets") and lake.exists("coordinator_metrics"):
        print(f"using the demo lake in {lake.root}")
        return lake
    print(f"no finished demo under {home / 'demo'}: running a small demo first "
          "(real groups on a fresh embedded broker, about 2 minutes)")
    # Imported here, not at the top: the demo loads Dagster, which a notebook that finds a demo
    # does not need.
    from proving_ground.demo import run_demo

    return run_demo(home, **SMALL_DEMO)


@contextmanager
def demo_broker(lake: Lake) -> Iterator[KafkaConnection]:
    """The demo's embedded broker, started again on the demo's data (`<lake root>/../broker`)
    for the duration of the block, and stopped after it.

    The demo stops its broker when it ends; its data stays, so a broker on the same folder sees
    the same topics and groups. The cleanup notebook dry-runs a plan against it: the plan comes
    from this lake, so it is the cluster the plan is about (a real cluster is never touched).
    """
    from offsets_platform.broker.embedded import EmbeddedBroker

    data_dir = lake.root.parent / "broker"
    print(f"starting the demo's embedded broker again on {data_dir}")
    with EmbeddedBroker(data_dir) as broker:
        yield KafkaConnection(bootstrap_servers=broker.bootstrap_servers)
    print("the embedded broker is stopped")
