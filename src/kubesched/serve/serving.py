"""``/metrics``, ``/healthz``, ``/livez`` and ``/readyz`` on a stdlib ThreadingHTTPServer."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubesched.serve.metrics import CONTENT_TYPE

log = logging.getLogger("kubesched.kube.serving")


class _QuietServer(ThreadingHTTPServer):
    """A probe client that resets its connection is no error of ours: logged at debug level, not
    printed as a traceback on stderr (socketserver's default)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("probe connection from %s failed", client_address, exc_info=True)


class HealthServer:
    def __init__(self, host: str, port: int, *, metrics: Callable[[], str], healthy: Callable[[], bool],
                 ready: Callable[[], bool]) -> None:
        routes: dict[str, Callable[[], tuple[int, str, str]]] = {
            "/metrics": lambda: (200, CONTENT_TYPE, metrics()),
            "/healthz": lambda: _probe(healthy()),
            "/livez": lambda: _probe(healthy()),
            "/readyz": lambda: _probe(ready()),
        }

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as Go's net/http: no 40 ms delayed-ACK stalls

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                route = routes.get(self.path.split("?", 1)[0])
                status, content_type, text = route() if route else (404, "text/plain", "404 page not found\n")
                payload = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("http " + format, *args)

        self.server = _QuietServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self.server.serve_forever, name="health-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _probe(ok: bool) -> tuple[int, str, str]:
    return (200, "text/plain; charset=utf-8", "ok\n") if ok else (500, "text/plain; charset=utf-8", "not ok\n")
