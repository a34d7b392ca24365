"""`alerts`: the alerts open now, read from the models' tables (docs/alerts.md).

The same conditions the Dagster sensor tells (`offsets_platform.views.alerts`), all of them rather
than what changed. Exit code 0 when none is open, 3 when some are: 1 is already every command's
"could not tell" (no lake, a bad setting), and a cron job or a health check must not take that
for alerts, nor alerts for an error.
"""

from __future__ import annotations

import sys

from offsets_platform.cli.args import add_home_option, lake_of
from offsets_platform.cli.output import as_json
from offsets_platform.cli.views import hours
from offsets_platform.settings import Settings

EXIT_ALERTS_OPEN = 3


def add_alerts_command(commands) -> None:
    alerts = commands.add_parser(
        "alerts", help="the alerts open now: messages at risk, a watched group's expiring offsets, STOP/STALL/REWIND "
        f"(exit {EXIT_ALERTS_OPEN} when any is open)")
    alerts.add_argument("--within", type=hours, metavar="DURATION",
                        help="the horizon of both messages at risk and expiring offsets, e.g. 24h, 90m, 7d "
                        "(default $OFFSETS_PLATFORM_ALERT_LOSS_WITHIN / _EXPIRY_WITHIN / _WITHIN, else 24h)")
    alerts.add_argument("--watch", action="append", default=[], metavar="GROUP",
                        help="a group whose expiring offsets alert, a name or a pattern like 'pay-*' (repeatable, "
                        "or comma-separated); default $OFFSETS_PLATFORM_ALERT_WATCHED_GROUPS")
    add_home_option(alerts)
    alerts.add_argument("--output", choices=("table", "json"), default="table",
                        help="lines for people (default), json for scripts")
    alerts.set_defaults(run=_alerts)


def _alerts(args, settings: Settings) -> int:
    from dataclasses import replace

    from offsets_platform.views.alerts import evaluate
    from offsets_platform.settings import AlertSettings, group_names
    from offsets_platform.views.from_lake import freshness, last_refresh

    try:
        alert_settings = AlertSettings.from_env()
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.within is not None:
        alert_settings = alert_settings.with_horizon(args.within)
    watched = group_names(*args.watch)
    if watched:
        alert_settings = replace(alert_settings, watched_groups=watched)
    lake = lake_of(args, settings, must_exist=True)
    alerts = evaluate(lake, alert_settings)
    if args.output == "json":
        print(as_json({"alerts": [alert.as_dict() for alert in alerts],
                       "loss_within_hours": alert_settings.loss_within_hours,
                       "expiry_within_hours": alert_settings.expiry_within_hours,
                       "watched_groups": list(alert_settings.watched_groups),
                       "ignored_groups": list(alert_settings.ignored_groups),
                       "models_refreshed_at": last_refresh(lake)}))
    else:
        for alert in alerts:
            print(f"{alert.kind:<17} {alert.summary}")
        if not alerts:
            print("no alerts")
        if not alert_settings.watched_groups:
            print("(no watched groups: expiring offsets alert for none; --watch or "
                  "OFFSETS_PLATFORM_ALERT_WATCHED_GROUPS)", file=sys.stderr)
        print(f"(from {freshness(lake)})", file=sys.stderr)
    return EXIT_ALERTS_OPEN if alerts else 0
