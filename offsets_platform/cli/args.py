"""What the `offsets-platform` commands share: where the lake is, which cluster, and who asks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from offsets_platform.lake import Lake
from offsets_platform.models.project import lake_for_models
from offsets_platform.settings import KafkaConnection, Settings, os_user


def lake_of(args: argparse.Namespace, settings: Settings) -> Lake:
    """The lake under --home, else the configured one, knowing the shipped models' tables (the
    commands read or write them)."""
    return lake_for_models(Path(args.home) / "lake" if args.home else settings.lake_root)


def cluster_and_lake(args: argparse.Namespace, settings: Settings) -> tuple[KafkaConnection, Lake] | None:
    """The connection and lake a command works on, or None (after saying so) when no address was given."""
    connection = settings.kafka
    if args.bootstrap_server:
        connection = connection.with_bootstrap(args.bootstrap_server)
    if connection.is_embedded:
        print("error: give --bootstrap-server or set OFFSETS_PLATFORM_BOOTSTRAP_SERVERS", file=sys.stderr)
        return None
    return connection, lake_of(args, settings)


def requester(args: argparse.Namespace) -> str:
    """--by, else the OS user."""
    return args.by or os_user()
