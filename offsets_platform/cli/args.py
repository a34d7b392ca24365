"""What the `offsets-platform` commands share: where the lake is, which cluster, and who asks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from offsets_platform.lake import Lake, NoLake
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import USER_ENV, KafkaConnection, Settings, acting_user, same_person


class NotWhoRuns(ValueError):
    """--by named someone other than who runs the command."""


def add_home_option(parser: argparse.ArgumentParser) -> None:
    """--home, the folder holding the lake, which `lake_of` reads."""
    parser.add_argument("--home", help="folder holding the lake (default: $OFFSETS_PLATFORM_HOME or .offsets_platform)")


def lake_of(args: argparse.Namespace, settings: Settings, must_exist: bool = False) -> Lake:
    """The lake under --home, else the configured one, knowing the shipped models' tables (the
    commands read or write them).

    Raises:
        NoLake: `must_exist` and there is no lake there. A command that only reads would
            otherwise answer "nothing to do" about a lake that is not there (a false all-clear),
            and leave an empty one behind.
    """
    lake = lake_for_models(Path(args.home) / "lake" if args.home else settings.lake_root)
    if must_exist and not lake.is_present():
        raise NoLake(f"there is no lake in {lake.root}: give the --home of an existing lake (or set "
                     "OFFSETS_PLATFORM_HOME), or fill this one first with `offsets-platform ingest`")
    return lake


def cluster_and_lake(args: argparse.Namespace, settings: Settings,
                     must_exist: bool = False) -> tuple[KafkaConnection, Lake] | None:
    """The connection and lake a command works on, or None (after saying so) when no address was given.

    Raises:
        NoLake: `must_exist` and there is no lake there.
    """
    connection = settings.kafka
    if args.bootstrap_server:
        connection = connection.with_bootstrap(args.bootstrap_server)
    if connection.is_embedded:
        print("error: give --bootstrap-server or set OFFSETS_PLATFORM_BOOTSTRAP_SERVERS", file=sys.stderr)
        return None
    return connection, lake_of(args, settings, must_exist)


def requester(args: argparse.Namespace) -> str:
    """Who runs the command: $OFFSETS_PLATFORM_USER, else the OS user.

    --by is no identity: a typed name would let anyone approve as anyone, and let a plan's author
    approve their own plan under another name. Scripts written when it was one may still pass it:
    it is accepted when it names who runs the command, and refused otherwise.

    Raises:
        NotWhoRuns: --by names someone else.
    """
    identity = acting_user()
    by = getattr(args, "by", None)
    if by and not same_person(by, identity):
        raise NotWhoRuns(f"--by {by} is not who runs this command ({identity}); --by no longer names anyone: "
                         f"drop it, or where a service account or SSO wrapper acts for a person, it sets {USER_ENV}")
    return identity
