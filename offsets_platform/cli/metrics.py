"""`metrics-server` and `metrics`: the lake's gold tables as Prometheus metrics, and the alerting
rules for them (docs/metrics.md).

Both read the lake with delta-rs only; like the quick views, they refuse a lake that is not there
rather than report an empty one as all clear. `metrics --alerting-rules` reads no lake: the rules
are the package's.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from offsets_platform.views.attention import DEFAULT_WITHIN_HOURS
from offsets_platform.cli.args import add_home_option, lake_of
from offsets_platform.cli.views import hours
from offsets_platform.settings import WATCHED_GROUPS_ENV, Settings, group_names

DEFAULT_METRICS_PORT = 9308


def add_metrics_commands(commands) -> None:
    server = commands.add_parser("metrics-server", help="serve the lake's metrics on /metrics for Prometheus, "
                                 "read anew on each scrape")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    server.add_argument("--port", type=int, default=DEFAULT_METRICS_PORT,
                        help=f"port to listen on (default {DEFAULT_METRICS_PORT})")
    _common(server)
    server.set_defaults(run=_metrics_server)

    once = commands.add_parser("metrics", help="print the lake's metrics once, or write them to a file for "
                               "node_exporter's textfile collector")
    once.add_argument("--textfile", metavar="PATH",
                      help="write to PATH (replaced in one rename) instead of printing; for node_exporter, "
                      "a .prom file in its --collector.textfile.directory")
    once.add_argument("--format", choices=("prometheus", "openmetrics"), default="prometheus",
                      help="Prometheus's text format 0.0.4, which node_exporter reads (default), or OpenMetrics 1.0.0")
    once.add_argument("--alerting-rules", action="store_true",
                      help="print Prometheus alerting rules for these metrics instead (a file for Prometheus's "
                      "rule_files; reads no lake)")
    _common(once)
    once.set_defaults(run=_metrics)


def _common(parser) -> None:
    add_home_option(parser)
    parser.add_argument("--within", type=hours, default=float(DEFAULT_WITHIN_HOURS), metavar="DURATION",
                        help="horizon of offsets_platform_offsets_expiring and _messages_at_risk, e.g. 24h, 90m, 7d "
                        f"(default {DEFAULT_WITHIN_HOURS}h)")
    parser.add_argument("--watch", action="append", default=[], metavar="GROUP",
                        help="a group whose expiring offsets alert (offsets_platform_watched_group), a name or a "
                        f"pattern like 'pay-*' (repeatable, or comma-separated); default ${WATCHED_GROUPS_ENV}")


def _watched(args) -> tuple[str, ...]:
    """--watch, else the alerts' own setting, so that both kinds of alerts watch the same groups."""
    return group_names(*args.watch) if args.watch else group_names(os.environ.get(WATCHED_GROUPS_ENV, ""))


def _metrics_server(args, settings: Settings) -> int:
    from offsets_platform.views.metrics.serve import serve_metrics

    lake = lake_of(args, settings, must_exist=True)

    def ready(server) -> None:
        print(f"serving the metrics of the lake in {lake.root} on http://{args.host}:{server.server_port}/metrics; "
              "Ctrl-C or SIGTERM stops it", flush=True)
        # Ctrl-C and SIGTERM stop the server between requests: the socket is closed and the exit code
        # is 0. An exception raised by the signal would land inside a scrape in progress instead, where
        # the WSGI handler answers it with a 500 and serves on. `shutdown` waits for the serving loop,
        # which runs in this (the signal's) thread, so it is called from another.
        def stop(signum, frame) -> None:
            threading.Thread(target=server.shutdown, daemon=True).start()

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)

    try:
        serve_metrics(lake, args.host, args.port, args.within, _watched(args), on_ready=ready)
    except OSError as error:  # the port is taken, or the address is not this machine's
        print(f"error: cannot listen on {args.host}:{args.port}: {error.strerror or error}", file=sys.stderr)
        return 1
    print("metrics server stopped", flush=True)
    return 0


def _metrics(args, settings: Settings) -> int:
    if args.alerting_rules:
        return _alerting_rules(args)
    from offsets_platform.views.metrics import exposition

    lake = lake_of(args, settings, must_exist=True)
    text = exposition(lake, args.within, openmetrics=args.format == "openmetrics", watched_groups=_watched(args))
    if args.textfile is None:
        sys.stdout.write(text)
        return 0
    from offsets_platform.views.metrics.serve import write_textfile

    path = Path(args.textfile)
    if not path.parent.is_dir():
        print(f"error: the folder of {path} does not exist", file=sys.stderr)
        return 1
    write_textfile(path, text)
    print(f"wrote the metrics of the lake in {lake.root} to {path}", file=sys.stderr)
    return 0


def _alerting_rules(args) -> int:
    from offsets_platform.views.metrics.rules import alerting_rules

    if args.textfile is not None:  # the rules are no metrics: node_exporter would reject the file
        print("error: --alerting-rules prints the rules; redirect them to a file of Prometheus's rule_files "
              "rather than --textfile", file=sys.stderr)
        return 1
    sys.stdout.write(alerting_rules())
    return 0
