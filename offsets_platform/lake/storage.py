"""Where the lake's tables live: a local folder (the default), or S3-compatible object storage.

`OFFSETS_PLATFORM_LAKE_URI=s3://bucket/prefix` puts every table under that prefix. The rest of
the connection comes from the standard AWS variables, read here and nowhere else:

- `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`): the credentials;
- `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT_URL_S3`): an S3-compatible server's address, `http://` or
  `https://` (empty: AWS itself); with one, requests address buckets by path, not host name;
- `AWS_REGION` (or `AWS_DEFAULT_REGION`): default `us-east-1`;
- `AWS_CONDITIONAL_PUT`: how delta-rs keeps two writers from committing the same version
  (default `etag`: the server refuses a second `PUT` with `If-None-Match: *`), or
  `AWS_S3_LOCKING_PROVIDER=dynamodb` for delta-rs's DynamoDB lock instead.

Three readers get the same settings: delta-rs (storage options), pyarrow (a filesystem, for
`Lake.read_arrow`) and Spark (the s3a connector, offsets_platform/jars/s3.pom.xml, for `s3://` paths). The secrets
go to delta-rs and pyarrow in memory, and to Spark not at all: its JVM reads them from the same
environment (s3a's environment-variable credentials provider). Nothing here prints them: the
settings' repr leaves them out, and the URI may not hold any (`s3://key:secret@bucket` is refused
without being repeated).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    from pyspark.sql import SparkSession

LAKE_URI_ENV = "OFFSETS_PLATFORM_LAKE_URI"
OBJECT_STORE_SCHEMES = ("s3", "s3a")
DEFAULT_REGION = "us-east-1"


def is_object_store(root: str | Path) -> bool:
    """Whether `root` names object storage (`s3://…`, `s3a://…`) rather than a local folder."""
    return isinstance(root, str) and urlsplit(root).scheme.lower() in OBJECT_STORE_SCHEMES


def local_leases_folder(home: Path, uri: str) -> Path:
    """Where a lake on object storage keeps its leases (flock needs a local file system):
    `<home>/leases/<bucket>/<prefix>`, one folder per lake, so every process of this host that
    uses the lake (the command line, Dagster, a notebook) takes the same lock files."""
    return Path(home) / "leases" / normalise_uri(uri).removeprefix("s3://")


def normalise_uri(uri: str) -> str:
    """`s3://bucket/prefix` without a trailing slash (`s3a://` spelled `s3://`).

    Raises:
        ValueError: no bucket, or credentials written into the URI (the message does not repeat
            it: they belong in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
    """
    parts = urlsplit(uri.strip())
    if "@" in parts.netloc:
        raise ValueError("the lake's URI must not hold credentials (user:secret@): set AWS_ACCESS_KEY_ID and "
                         "AWS_SECRET_ACCESS_KEY instead")
    if parts.scheme.lower() not in OBJECT_STORE_SCHEMES or not parts.netloc:
        raise ValueError(f"expected s3://bucket/prefix, got {uri.strip()!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"the lake's URI takes no ?query or #fragment: {parts.scheme}://{parts.netloc}{parts.path}")
    return f"s3://{parts.netloc}{parts.path.rstrip('/')}"


@dataclass(frozen=True)
class S3Access:
    """How to reach the object storage, from the environment (the module's docstring)."""

    endpoint: str | None = None
    region: str = DEFAULT_REGION
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    conditional_put: str | None = "etag"
    locking_provider: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "S3Access":
        env = os.environ if env is None else env

        def get(*names: str) -> str | None:
            for name in names:
                value = (env.get(name) or "").strip()
                if value:
                    return value
            return None

        endpoint = get("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        if endpoint and urlsplit(endpoint).scheme not in ("http", "https"):
            raise ValueError(f"AWS_ENDPOINT_URL must start with http:// or https://, got {endpoint!r}")
        locking = get("AWS_S3_LOCKING_PROVIDER")
        return cls(
            endpoint=endpoint.rstrip("/") if endpoint else None,
            region=get("AWS_REGION", "AWS_DEFAULT_REGION") or DEFAULT_REGION,
            access_key=get("AWS_ACCESS_KEY_ID"),
            secret_key=get("AWS_SECRET_ACCESS_KEY"),
            session_token=get("AWS_SESSION_TOKEN"),
            conditional_put=None if locking else (get("AWS_CONDITIONAL_PUT") or "etag"),
            locking_provider=locking,
        )

    @property
    def insecure(self) -> bool:
        """Plain HTTP to the endpoint (a server on loopback, or in a private network)."""
        return bool(self.endpoint) and self.endpoint.lower().startswith("http://")

    def where(self) -> str:
        """The endpoint, for messages (it holds no secret): the server's address, or AWS's."""
        return self.endpoint or f"AWS S3 ({self.region})"

    def delta_options(self) -> dict[str, str]:
        """delta-rs's storage options."""
        options = {"AWS_REGION": self.region}
        optional = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_SESSION_TOKEN": self.session_token,
            "conditional_put": self.conditional_put,
            "AWS_S3_LOCKING_PROVIDER": self.locking_provider,
        }
        options.update({key: value for key, value in optional.items() if value})
        if self.insecure:
            options["AWS_ALLOW_HTTP"] = "true"
        if self.endpoint:
            options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
        return options

    def arrow_filesystem(self) -> "pafs.S3FileSystem":
        """pyarrow's S3 filesystem with these settings (paths are `bucket/key`)."""
        import pyarrow.fs as pafs

        endpoint = urlsplit(self.endpoint) if self.endpoint else None
        return pafs.S3FileSystem(
            access_key=self.access_key, secret_key=self.secret_key, session_token=self.session_token,
            region=self.region, endpoint_override=endpoint.netloc if endpoint else None,
            scheme=endpoint.scheme if endpoint else "https", force_virtual_addressing=False,
            connect_timeout=5, request_timeout=30)

    def spark_conf(self) -> dict[str, str]:
        """s3a's settings for a session, none of them secret: the credentials come to the JVM from
        its environment. `s3://` paths (as delta-rs lists a table's files) go to s3a too."""
        conf = {
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.endpoint.region": self.region,
        }
        if self.endpoint:
            conf.update({
                "spark.hadoop.fs.s3a.endpoint": self.endpoint,
                "spark.hadoop.fs.s3a.path.style.access": "true",
                "spark.hadoop.fs.s3a.connection.ssl.enabled": str(not self.insecure).lower(),
            })
        return conf

    def configure_spark(self, spark: "SparkSession") -> None:
        """Set `spark_conf` on a running session (a Spark Connect client's too), for a session
        started before the lake's URI was set: Spark copies a session's settings into the Hadoop
        configuration of each read, as they are (so without the `spark.hadoop.` that the
        settings of a starting JVM carry)."""
        for key, value in self.spark_conf().items():
            key = key.removeprefix("spark.hadoop.")
            if spark.conf.get(key, None) != value:
                spark.conf.set(key, value)


def check_reachable(uri: str, access: S3Access, timeout_s: float = 5.0) -> None:
    """Raise ObjectStoreUnreachable unless the endpoint accepts a connection (an unreachable
    endpoint otherwise shows as retries for minutes, then a generic I/O error)."""
    import socket

    if not access.endpoint:
        return
    parts = urlsplit(access.endpoint)
    host, port = parts.hostname or "localhost", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as error:
        raise ObjectStoreUnreachable(
            f"the lake {uri} is on the S3 endpoint {access.endpoint}, which does not answer: "
            f"{error.strerror or error}. Check that the server runs and AWS_ENDPOINT_URL names it "
            f"(and {LAKE_URI_ENV} the right bucket).") from None


class ObjectStoreUnreachable(ConnectionError):
    """The lake's S3 endpoint does not accept connections; the message names it and what to check."""
