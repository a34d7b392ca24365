"""The embedded broker's secured mode: SASL/SCRAM logins and Kafka's StandardAuthorizer.

Production clusters authenticate every client and check every request against ACLs; this mode
makes the embedded broker one of them, on loopback:

- Clients log in with SASL/SCRAM-SHA-512 over SASL_PLAINTEXT (no TLS: the listeners are on
  loopback only). Each user's SCRAM credential is written into the metadata log when the data
  folder is formatted (`kafka-storage format --add-scram`), so every user exists before the first
  client connects; a later start on the same folder keeps the users of the first.
- `StandardAuthorizer`, which keeps the ACLs in the metadata log, checks every request. A resource
  no ACL names is for super users only (`allow.everyone.if.no.acl.found=false`, Kafka's default).
- The admin user is the one super user (`super.users`): it creates the other users' ACLs, and the
  broker logs in as admin to its own listener (inter-broker) and to its controller. The controller
  listener uses PLAIN with the admin's password in the broker's own config, as Kafka's own test
  clusters do (KafkaClusterTestKit), so that logging in to the controller does not depend on the
  credentials kept in the metadata log the controller serves.

The listener names of the plain config are kept; `listener.security.protocol.map` alone decides
a listener's protocol, so the same change secures whatever listeners a broker's config has.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Mapping

from offsets_platform.settings import KafkaConnection

SASL_PROTOCOL = "SASL_PLAINTEXT"
CLIENT_MECHANISM = "SCRAM-SHA-512"
CONTROLLER_MECHANISM = "PLAIN"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
DEFAULT_ADMIN = "admin"
# Names that need no quoting in a JAAS option nor escaping in SCRAM (RFC 5802 escapes ',' and '=').
_USER_NAME = re.compile(r"[A-Za-z0-9._-]+")
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@dataclass(frozen=True)
class BrokerSecurity:
    """The users of a secured embedded broker, each with a password, and which one is the admin.

    Use `for_users` for random passwords; `connection` gives a client's settings as one user.
    """

    passwords: Mapping[str, str] = field(repr=False)
    admin: str = DEFAULT_ADMIN

    def __post_init__(self) -> None:
        if self.admin not in self.passwords:
            raise ValueError(f"the admin user {self.admin!r} needs a password")
        for user, password in self.passwords.items():
            if not _USER_NAME.fullmatch(user) or not _USER_NAME.fullmatch(password):
                raise ValueError(f"user {user!r}: names and passwords are letters, digits, '.', '_' and '-'")

    @classmethod
    def for_users(cls, *users: str, admin: str = DEFAULT_ADMIN) -> "BrokerSecurity":
        """The admin and `users`, each with a new random password."""
        return cls({user: secrets.token_hex(16) for user in (admin, *users)}, admin)

    @property
    def users(self) -> tuple[str, ...]:
        return tuple(self.passwords)

    def connection(self, bootstrap_servers: str, user: str | None = None) -> KafkaConnection:
        """How a client logs in to the broker as `user` (the admin when None)."""
        user = user or self.admin
        if user not in self.passwords:
            raise KeyError(f"no user {user!r} on this broker (users: {', '.join(self.users)})")
        return KafkaConnection(bootstrap_servers=bootstrap_servers, security_protocol=SASL_PROTOCOL,
                               sasl_mechanism=CLIENT_MECHANISM, sasl_username=user,
                               sasl_password=self.passwords[user])

    def broker_config(self, config: Mapping[str, str]) -> dict[str, str]:
        """A broker's plain config (`listeners`, `controller.listener.names` and
        `listener.security.protocol.map` set) with every listener secured as the module says."""
        listeners = [entry.split(":", 1)[0] for entry in config["listener.security.protocol.map"].split(",")]
        controllers = set(config["controller.listener.names"].split(","))
        secured = {**config,
                   "listener.security.protocol.map": ",".join(f"{name}:{SASL_PROTOCOL}" for name in listeners),
                   "sasl.enabled.mechanisms": CLIENT_MECHANISM,
                   "sasl.mechanism.inter.broker.protocol": CLIENT_MECHANISM,
                   "sasl.mechanism.controller.protocol": CONTROLLER_MECHANISM,
                   "authorizer.class.name": STANDARD_AUTHORIZER,
                   "allow.everyone.if.no.acl.found": "false",
                   "super.users": f"User:{self.admin}"}
        for name in listeners:
            prefix = f"listener.name.{name.lower()}"
            if name in controllers:
                secured[f"{prefix}.sasl.enabled.mechanisms"] = CONTROLLER_MECHANISM
                secured[f"{prefix}.{CONTROLLER_MECHANISM.lower()}.sasl.jaas.config"] = self._plain_jaas()
            else:
                secured[f"{prefix}.{CLIENT_MECHANISM.lower()}.sasl.jaas.config"] = self._scram_jaas()
        return secured

    def format_arguments(self) -> list[str]:
        """`kafka-storage format` arguments that create every user's SCRAM credential."""
        arguments = []
        for user, password in self.passwords.items():
            arguments += ["--add-scram", f'{CLIENT_MECHANISM}=[name="{user}",password="{password}"]']
        return arguments

    def _scram_jaas(self) -> str:
        # what the broker logs in with as a client of its own listener (inter-broker)
        return f'{_SCRAM_LOGIN} required username="{self.admin}" password="{self.passwords[self.admin]}";'

    def _plain_jaas(self) -> str:
        # the controller's one user, the admin, and what the broker logs in to it with
        password = self.passwords[self.admin]
        return (f'{_PLAIN_LOGIN} required username="{self.admin}" password="{password}" '
                f'user_{self.admin}="{password}";')
