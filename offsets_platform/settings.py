"""The one place that turns the environment into settings.

Read at run time only (never at import time), so loading the Dagster definitions has no side
effects. Every setting has a default that works on a fresh machine: an empty bootstrap address
means "the embedded broker the project starts itself".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

ENV_PREFIX = "OFFSETS_PLATFORM_"
OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_HOME = Path(".offsets_platform")
# A service account or an SSO wrapper that runs commands for a person names that person here; it
# is the identity of approvals, plan authors and the audit instead of the OS user.
USER_ENV = ENV_PREFIX + "USER"
# Four-eyes is the default: a plan's author may approve it only where this is true (a demo, a
# single-operator lab).
ALLOW_SELF_APPROVAL_ENV = ENV_PREFIX + "ALLOW_SELF_APPROVAL"
_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off", ""}


@dataclass(frozen=True)
class KafkaConnection:
    """How to reach a Kafka cluster. `bootstrap_servers` empty means the embedded broker."""

    bootstrap_servers: str = ""
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    offsets_topic: str = OFFSETS_TOPIC
    """The log ingest reads: `__consumer_offsets`, or a regular topic of the same layout (a mirror
    of another cluster's, or generated coordinator history for tests and benchmarks)."""

    @property
    def is_embedded(self) -> bool:
        return not self.bootstrap_servers.strip()

    def with_bootstrap(self, bootstrap_servers: str) -> "KafkaConnection":
        return replace(self, bootstrap_servers=bootstrap_servers)

    def confluent_config(self) -> dict[str, str]:
        """librdkafka settings for confluent-kafka clients."""
        config = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
        }
        optional = {
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password,
            "ssl.ca.location": self.ssl_cafile,
            "ssl.certificate.location": self.ssl_certfile,
            "ssl.key.location": self.ssl_keyfile,
        }
        config.update({key: value for key, value in optional.items() if value})
        return config

    def kafka_python_config(self) -> dict[str, object]:
        """Keyword arguments for kafka-python clients."""
        config: dict[str, object] = {
            "bootstrap_servers": self.bootstrap_servers.split(","),
            "security_protocol": self.security_protocol,
        }
        optional = {
            "sasl_mechanism": self.sasl_mechanism,
            "sasl_plain_username": self.sasl_username,
            "sasl_plain_password": self.sasl_password,
            "ssl_cafile": self.ssl_cafile,
            "ssl_certfile": self.ssl_certfile,
            "ssl_keyfile": self.ssl_keyfile,
        }
        config.update({key: value for key, value in optional.items() if value})
        return config

    def describe(self) -> str:
        """A printable summary that never contains the password."""
        address = self.bootstrap_servers or "embedded broker"
        auth = f", SASL {self.sasl_mechanism} as {self.sasl_username}" if self.sasl_mechanism else ""
        return f"{address} ({self.security_protocol}{auth})"


@dataclass(frozen=True)
class Settings:
    """Everything a run needs to know about where things are."""

    kafka: KafkaConnection = KafkaConnection()
    home: Path = DEFAULT_HOME
    spark_master: str = "local[*]"
    spark_remote: str | None = None
    lake_uri: str | None = None
    """`OFFSETS_PLATFORM_LAKE_URI`: `s3://bucket/prefix` puts the lake on object storage
    (docs/object-storage.md); empty keeps it in `<home>/lake`."""

    @property
    def lake_root(self) -> Path | str:
        """The lake's folder (`<home>/lake`), or its object-storage URI."""
        return self.lake_uri or self.home / "lake"

    @property
    def broker_data_dir(self) -> Path:
        return self.home / "broker"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """Settings from `OFFSETS_PLATFORM_*` variables, defaults for the rest."""
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(ENV_PREFIX + name)
            return value if value else None

        kafka = KafkaConnection(
            bootstrap_servers=get("BOOTSTRAP_SERVERS") or "",
            security_protocol=get("SECURITY_PROTOCOL") or "PLAINTEXT",
            sasl_mechanism=get("SASL_MECHANISM"),
            sasl_username=get("SASL_USERNAME"),
            sasl_password=get("SASL_PASSWORD"),
            ssl_cafile=get("SSL_CAFILE"),
            ssl_certfile=get("SSL_CERTFILE"),
            ssl_keyfile=get("SSL_KEYFILE"),
            offsets_topic=get("OFFSETS_TOPIC") or OFFSETS_TOPIC,
        )
        return cls(
            kafka=kafka,
            home=Path(get("HOME") or DEFAULT_HOME),
            spark_master=get("SPARK_MASTER") or "local[*]",
            spark_remote=get("SPARK_REMOTE"),
            lake_uri=(get("LAKE_URI") or "").strip() or None,
        )


# A duration: "24h", "90m", "7d", "30s", or a bare number of hours.
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 3600}
DEFAULT_ALERT_WITHIN_HOURS = 24.0
DEFAULT_WEBHOOK_TIMEOUT_S = 10.0
# The alerts' watched groups; the metrics exporter reads it too, to mark them for Prometheus's rules.
WATCHED_GROUPS_ENV = ENV_PREFIX + "ALERT_WATCHED_GROUPS"


def group_names(*values: str) -> tuple[str, ...]:
    """The group names or patterns of comma-separated values ("orders, pay-*"), each once, sorted."""
    return tuple(sorted({part.strip() for value in values for part in value.split(",") if part.strip()}))


def duration_hours(text: str) -> float:
    """"24h", "90m", "7d", "30s" or a number of hours, in hours; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip().lower())
    if not match:
        raise ValueError(f"expected a duration such as 24h, 90m or 7d, got {text!r}")
    return float(match.group(1)) * _SECONDS[match.group(2)] / 3600


@dataclass(frozen=True)
class AlertSettings:
    """What the alerts watch and where they go (docs/alerts.md).

    Kept apart from `Settings`, which every command reads: a mistyped alert variable then stops
    the alerts, with its name in the error, and not the ingest or the models."""

    webhook_url: str | None = field(default=None, repr=False)
    """Where alerts are POSTed as JSON; None: the Dagster sensor raises them as a failed run."""
    loss_within_hours: float = DEFAULT_ALERT_WITHIN_HOURS
    """Unread messages whose deletion by retention is due within this horizon alert."""
    expiry_within_hours: float = DEFAULT_ALERT_WITHIN_HOURS
    """Committed offsets of a watched group that Kafka expires within this horizon alert."""
    watched_groups: tuple[str, ...] = ()
    """Groups (names or shell-style patterns) whose offset expiry alerts."""
    ignored_groups: tuple[str, ...] = ()
    """Groups (names or patterns) that never alert, whatever the condition."""
    webhook_timeout_s: float = DEFAULT_WEBHOOK_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "AlertSettings":
        """From `OFFSETS_PLATFORM_ALERT_*`; ValueError naming the variable for a value that is not one."""
        env = os.environ if env is None else env

        def get(name: str) -> str:
            return (env.get(ENV_PREFIX + name) or "").strip()

        def hours(name: str, default: float) -> float:
            value = get(name)
            if not value:
                return default
            try:
                result = duration_hours(value)
            except ValueError as error:
                raise ValueError(f"{ENV_PREFIX}{name}: {error}") from None
            return result

        def names(name: str) -> tuple[str, ...]:
            return group_names(get(name))

        timeout = get("ALERT_WEBHOOK_TIMEOUT_SECONDS")
        try:
            timeout_s = float(timeout) if timeout else DEFAULT_WEBHOOK_TIMEOUT_S
        except ValueError:
            timeout_s = 0
        if timeout_s <= 0:
            raise ValueError(f"{ENV_PREFIX}ALERT_WEBHOOK_TIMEOUT_SECONDS={timeout!r} must be a positive number")
        url = get("ALERT_WEBHOOK_URL")
        if url and not url.lower().startswith(("http://", "https://")):  # the URL itself is not repeated: a secret
            raise ValueError(f"{ENV_PREFIX}ALERT_WEBHOOK_URL must start with http:// or https://")
        within = hours("ALERT_WITHIN", DEFAULT_ALERT_WITHIN_HOURS)
        return cls(
            webhook_url=url or None,
            loss_within_hours=hours("ALERT_LOSS_WITHIN", within),
            expiry_within_hours=hours("ALERT_EXPIRY_WITHIN", within),
            watched_groups=names(WATCHED_GROUPS_ENV.removeprefix(ENV_PREFIX)),
            ignored_groups=names("ALERT_IGNORED_GROUPS"),
            webhook_timeout_s=timeout_s,
        )

    def with_horizon(self, hours: float) -> "AlertSettings":
        """Both horizons set to `hours` (the command line's --within)."""
        return replace(self, loss_within_hours=hours, expiry_within_hours=hours)

    def webhook_target(self) -> str:
        """The webhook's scheme and host, for logs: the path of a chat webhook URL is its secret."""
        if not self.webhook_url:
            return "no webhook"
        from urllib.parse import urlsplit

        parts = urlsplit(self.webhook_url)
        host = f"{parts.hostname}:{parts.port}" if parts.port else f"{parts.hostname}"  # no user:password@
        return f"{parts.scheme}://{host}" + ("/..." if parts.path not in ("", "/") else "")


def os_user() -> str:
    """Who runs this process, for the audit: the login name, else the numeric user id."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return f"uid:{os.getuid()}"


def acting_user(env: Mapping[str, str] | None = None) -> str:
    """Who acts, for approvals, plan authors and the audit: $OFFSETS_PLATFORM_USER when set, else
    the OS user. Never a name typed on the command line: anyone can type any name."""
    env = os.environ if env is None else env
    return (env.get(USER_ENV) or "").strip() or os_user()


def self_approval_allowed(env: Mapping[str, str] | None = None) -> bool:
    """Whether $OFFSETS_PLATFORM_ALLOW_SELF_APPROVAL lets a plan's author approve it (default: no).

    Raises:
        ValueError: the variable is set to something that is neither true nor false; guessing
            either way would either weaken four-eyes or refuse without saying why.
    """
    env = os.environ if env is None else env
    value = (env.get(ALLOW_SELF_APPROVAL_ENV) or "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{ALLOW_SELF_APPROVAL_ENV}={env.get(ALLOW_SELF_APPROVAL_ENV)!r}: use true or false")


def same_person(one: str, other: str) -> bool:
    """Whether two recorded identities name the same person ("Alice" and "alice " do)."""
    return one.strip().casefold() == other.strip().casefold()
