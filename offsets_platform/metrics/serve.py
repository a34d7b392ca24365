"""The metrics over HTTP for Prometheus, and in a file for node_exporter's textfile collector."""

from __future__ import annotations

import os
import sys
import tempfile
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Callable

from offsets_platform.lake import Lake
from offsets_platform.metrics import OPENMETRICS_CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE, exposition


def metrics_server(lake: Lake, host: str, port: int, within_hours: float) -> HTTPServer:
    """A server answering GET /metrics with the lake read anew. One request at a time: a scrape
    reads a few small tables, and serving them in turn keeps the tables' handles (`Lake` catches
    them up between reads) out of reach of two threads at once."""

    class Handler(BaseHTTPRequestHandler):
        timeout = 30  # a client that opens a connection and sends nothing does not hold the server

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self._answer(404, "text/plain; charset=utf-8", "only /metrics is served here\n")
                return
            # Prometheus asks for OpenMetrics; curl and older scrapers get the format every scraper reads.
            openmetrics = "application/openmetrics-text" in self.headers.get("Accept", "")
            if not lake.is_present():  # moved or deleted since: its tables would read as empty, an all-clear
                self._answer(500, "text/plain; charset=utf-8", f"there is no lake in {lake.root} any more\n")
                return
            try:
                text = exposition(lake, within_hours, openmetrics=openmetrics)
            except Exception as error:  # the scraper records a failed scrape (up 0); the log says why
                self.log_message("reading the lake failed: %s", f"{type(error).__name__}: {error}")
                self._answer(500, "text/plain; charset=utf-8", f"reading the lake in {lake.root} failed: {error}\n")
                return
            self._answer(200, OPENMETRICS_CONTENT_TYPE if openmetrics else PROMETHEUS_CONTENT_TYPE, text)

        def _answer(self, status: int, content_type: str, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:
            # successful scrapes every few seconds would bury the failures
            if not (len(args) >= 2 and str(args[1]) == "200"):
                sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    return HTTPServer((host, port), Handler)


def serve_metrics(lake: Lake, host: str, port: int, within_hours: float,
                  on_ready: Callable[[HTTPServer], None] = lambda server: None) -> None:
    """Serve until interrupted (KeyboardInterrupt, which the caller also raises on SIGTERM)."""
    server = metrics_server(lake, host, port, within_hours)
    try:
        on_ready(server)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def write_textfile(path: Path, text: str) -> None:
    """Write `text` to `path` in one rename, so node_exporter never reads half a file. The temporary
    file is beside it (a rename within one file system), and its name does not end in .prom, which
    the collector would read."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp makes it private to its owner; node_exporter usually runs as another user
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
