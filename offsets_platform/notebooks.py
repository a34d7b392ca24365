"""What a notebook opens: the configured lake, and the cluster that lake describes.

Notebooks are a front end like the command line: they read the lake of `OFFSETS_PLATFORM_HOME`
(`<home>/lake`) and never build one. After `make demo`, point them at the demo with
`OFFSETS_PLATFORM_HOME=.offsets_platform/demo`, as `make ui` is pointed at it.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

import plotly.io as pio

from offsets_platform.lake import Lake, NoLake
from offsets_platform.lake.storage import local_leases_folder
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection, Settings

# Each figure a notebook shows carries its HTML (with plotly.js, once per notebook, so it draws
# offline) beside Plotly's own JSON: Jupyter draws the JSON, while an export to HTML (jupyter
# nbconvert --to html) and other viewers keep only the HTML, where the JSON alone left a gap.
pio.renderers.default = "plotly_mimetype+notebook"

# The notebooks read these; both exist once the models have run over the lake.
GOLD_TABLES = ("expirable_offsets", "coordinator_metrics")


def configured_home(env: Mapping[str, str] | None = None) -> Path:
    """`OFFSETS_PLATFORM_HOME`, resolved.

    A relative home (the default is `.offsets_platform`) is looked for in the working folder and
    then in its parents, because Jupyter runs a notebook in `notebooks/` while the commands were
    run at the repository root. When no folder has a lake there, it is the working folder's.
    """
    home = Settings.from_env(env).home
    if home.is_absolute():
        return home
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / home / "lake").is_dir():
            return folder / home
    return here / home


def configured_lake(env: Mapping[str, str] | None = None) -> Lake:
    """The configured lake, once the models have run over it.

    Raises:
        NoLake: the lake or its gold tables are not there. Nothing is created: an empty lake
            would show empty tables, which read as "all is well".
    """
    settings = Settings.from_env(env)
    home = configured_home(env)
    # a lake on object storage (OFFSETS_PLATFORM_LAKE_URI) keeps its leases under the home, where
    # the command line and Dagster take them too
    leases = local_leases_folder(home, settings.lake_uri) if settings.lake_uri else None
    lake = lake_for_models(settings.lake_uri or home / "lake", leases=leases)
    missing = [name for name in GOLD_TABLES if not lake.exists(name)]
    if missing:
        raise NoLake(f"no models' tables in {lake.root} (missing: {', '.join(missing)}). Set OFFSETS_PLATFORM_HOME "
                     "to the home of a lake the models ran over (after `make demo`: .offsets_platform/demo), "
                     "or fill this one with `offsets-platform ingest` and `offsets-platform models`")
    print(f"reading the lake in {lake.root}")
    return lake


@contextmanager
def configured_cluster(lake: Lake, env: Mapping[str, str] | None = None) -> Iterator[KafkaConnection]:
    """The cluster the lake describes, for the length of the block.

    That is `OFFSETS_PLATFORM_BOOTSTRAP_SERVERS` when set. A lake the embedded broker filled (the
    demo's) has the broker's data beside it, `<home>/broker`: the embedded broker is started
    again on that data, so it holds the same topics and groups, and stopped after the block.

    Raises:
        NoLake: no cluster is configured and the lake has no embedded broker's data beside it.
    """
    connection = Settings.from_env(env).kafka
    if not connection.is_embedded:
        yield connection
        return
    data_dir = None if lake.remote else lake.root.parent / "broker"
    if data_dir is None or not data_dir.is_dir():
        where = f"in {data_dir}" if data_dir else f"beside a lake on object storage ({lake.root})"
        raise NoLake(f"no cluster configured and no embedded broker's data {where}: set "
                     "OFFSETS_PLATFORM_BOOTSTRAP_SERVERS to the cluster this lake was built from")
    from offsets_platform.broker.embedded import EmbeddedBroker  # starts a JVM: only when asked

    print(f"starting the embedded broker again on its data in {data_dir}")
    with EmbeddedBroker(data_dir) as broker:
        yield connection.with_bootstrap(broker.bootstrap_servers)
    print("the embedded broker is stopped")
