"""`offsets-platform rebase`: start a lake over for the log now at its address.

Ingest stops when the log is not the one the lake holds (offsets_platform.ingest.log_check); this
is the way on that it names. The tables move aside (offsets_platform.lake.archive) while the
command holds every lease of the lake, so no ingest, refresh, plan save or apply writes into a
table as it moves; those waiting go on afterwards on the empty lake.
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack

from offsets_platform.cli.args import lake_of
from offsets_platform.ingest.offsets_topic import DEFAULT_LEASE_WAIT_S, INGEST_LEASE
from offsets_platform.lake.archive import archive_tables
from offsets_platform.lake.lease import hold_lease
from offsets_platform.lake.storage import LAKE_URI_ENV
from offsets_platform.settings import Settings


class RebaseUnsupported(RuntimeError):
    """The lake is on object storage, where its folders cannot be renamed aside."""


def add_rebase_command(commands) -> None:
    rebase = commands.add_parser(
        "rebase", help="start the lake over: move every table aside (nothing is deleted); the next ingest "
                       "reads the log now at the address from its start")
    rebase.add_argument("--home", help="folder holding the lake")
    rebase.add_argument("--reason", default="the log the lake held is gone (rebased by an operator)",
                        help="why, kept in the archive folder")
    rebase.add_argument("--wait", type=float, default=DEFAULT_LEASE_WAIT_S, metavar="SECONDS",
                        help=f"how long to wait for runs on the lake to end (default {DEFAULT_LEASE_WAIT_S:.0f})")
    rebase.set_defaults(run=_rebase)


def _rebase(args: argparse.Namespace, settings: Settings) -> int:
    from offsets_platform.cleanup.apply import APPLY_LEASE
    from offsets_platform.cleanup.plans import PLANS_LEASE
    from offsets_platform.models import default_project
    from offsets_platform.models.runner import model_lease

    lake = lake_of(args, settings, must_exist=True)
    if lake.remote:
        raise RebaseUnsupported(
            f"rebase moves the lake's folders aside with renames, which object storage lacks: it works on a local "
            f"lake only. To start {lake.root} over, copy its objects to another prefix (kept as the archive) and "
            f"delete them, or point {LAKE_URI_ENV} at a new prefix.")
    leases = [INGEST_LEASE, PLANS_LEASE, APPLY_LEASE] + [model_lease(m.name) for m in default_project().models]
    with ExitStack() as held:
        for name in leases:
            held.enter_context(hold_lease(lake.leases, name, "rebase of the lake", wait_s=args.wait, emit=print))
        archive = archive_tables(lake.root, args.reason)
    if archive is None:
        print(f"the lake in {lake.root} has no tables: nothing to move")
        return 0
    print(f"moved every table of the lake in {lake.root} to {archive} (readable there as a lake of its own); "
          "the next ingest reads the log from its start")
    return 0
