"""A scheduler extender for tests (kubesched's and users'): a real HTTP(S) server on loopback whose
answers each test sets, recording every call it gets."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: an answer: the decoded request -> (HTTP status, JSON body)
Answer = Callable[[dict[str, Any]], tuple[int, Any]]


def node_names(args: dict[str, Any]) -> list[str]:
    """The node names an ExtenderArgs carries (NodeNames, else the Nodes list)."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or []]


def keep_nodes(keep: Callable[[str], bool], *, failed: str = "", unresolvable: Callable[[str], bool] | None = None
               ) -> Answer:
    """A filter answering in the request's own form: the nodes ``keep`` accepts pass; the others fail
    with ``failed`` (unresolvable when ``unresolvable`` says so)."""
    def answer(args: dict[str, Any]) -> tuple[int, Any]:
        names = node_names(args)
        passed = [n for n in names if keep(n)]
        rejected = [n for n in names if not keep(n)]
        hard = {n: failed for n in rejected if unresolvable is not None and unresolvable(n)}
        soft = {n: failed for n in rejected if n not in hard}
        body: dict[str, Any] = {"FailedNodes": soft, "FailedAndUnresolvableNodes": hard, "Error": ""}
        if args.get("NodeNames") is not None:
            body.update(NodeNames=passed, Nodes=None)
        else:
            items = [n for n in args["Nodes"]["items"] if n["metadata"]["name"] in passed]
            body.update(Nodes={"metadata": {}, "items": items}, NodeNames=None)
        return 200, body
    return answer


class ExtenderServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.answers: dict[str, Answer] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.connections: list[tuple[str, int]] = []  # the client end of every connection, in order
        self.finished = 0  # connections the client closed (or the server did)
        self.close_after: int | None = None  # answer "Connection: close" once this many calls were made
        self.delay = 0.0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as Go's servers

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server.connections.append(self.client_address)

            def finish(self) -> None:
                super().finish()
                with server._lock:
                    server.finished += 1

            def do_POST(self) -> None:
                verb = self.path.rstrip("/").rsplit("/", 1)[-1]
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with server._lock:
                    server.calls.append((verb, body))
                    close = server.close_after is not None and len(server.calls) >= server.close_after
                if server.delay:
                    time.sleep(server.delay)
                answer = server.answers.get(verb)
                status, payload = answer(body) if answer is not None else (404, {})
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if close:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the scheduler gave up waiting (a timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}/ext"

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]


@contextmanager
def extender_server(tls: ssl.SSLContext | None = None) -> Iterator[ExtenderServer]:
    server = ExtenderServer(tls)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join()
