"""The metrics over HTTP for Prometheus, and in a file for node_exporter's textfile collector."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Sequence
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

from offsets_platform.lake import Lake
from offsets_platform.views.metrics.collector import lake_registry

METRICS_PATH = "/metrics"


def metrics_app(lake: Lake, within_hours: float, watched_groups: Sequence[str] = ()) -> Callable:
    """A WSGI app answering GET /metrics with the lake read anew: prometheus_client's, which picks
    OpenMetrics or the 0.0.4 format by the Accept header (Prometheus asks for OpenMetrics; curl and
    older scrapers get the format every scraper reads). Around it, what prometheus_client's app
    does not do: other paths are not found, and a lake that cannot be read is answered 500 with the
    reason, so that the scraper records a failed scrape (up 0) rather than an all-clear."""
    exporter = make_wsgi_app(lake_registry(lake, within_hours, watched_groups))

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != METRICS_PATH:
            return _plain(start_response, "404 Not Found", f"only {METRICS_PATH} is served here\n")
        if not lake.is_present():  # moved or deleted since: its tables would read as empty, an all-clear
            return _plain(start_response, "500 Internal Server Error", f"there is no lake in {lake.root} any more\n")
        try:
            return exporter(environ, start_response)
        except Exception as error:  # the log says why; prometheus_client has not answered yet
            environ["wsgi.errors"].write(f"reading the lake failed: {type(error).__name__}: {error}\n")
            return _plain(start_response, "500 Internal Server Error",
                          f"reading the lake in {lake.root} failed: {error}\n")

    return app


def metrics_server(lake: Lake, host: str, port: int, within_hours: float,
                   watched_groups: Sequence[str] = ()) -> WSGIServer:
    """A server of `metrics_app`. One request at a time (wsgiref's server, not prometheus_client's
    threading one): a scrape reads a few small tables, and serving them in turn keeps the tables'
    handles (`Lake` catches them up between reads) out of reach of two threads at once."""
    return make_server(host, port, metrics_app(lake, within_hours, watched_groups), server_class=WSGIServer,
                       handler_class=_QuietOnSuccess)


class _QuietOnSuccess(WSGIRequestHandler):
    timeout = 30  # a client that opens a connection and sends nothing does not hold the server

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # successful scrapes every few seconds would bury the failures
        if str(code) != "200":
            super().log_request(code, size)


def _plain(start_response: Callable, status: str, body: str) -> list[bytes]:
    data = body.encode("utf-8")
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))])
    return [data]


def serve_metrics(lake: Lake, host: str, port: int, within_hours: float, watched_groups: Sequence[str] = (),
                  on_ready: Callable[[WSGIServer], None] = lambda server: None) -> None:
    """Serve until interrupted (KeyboardInterrupt, which the caller also raises on SIGTERM)."""
    server = metrics_server(lake, host, port, within_hours, watched_groups)
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
