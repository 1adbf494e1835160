"""Plain HTTP(S) connections from the standard library, for clients that send many small requests.

:class:`TLSConnection` checks the server's certificate against a configured server name (Go's
``tls.Config.ServerName``) instead of the host it dials. :class:`ConnectionPool` keeps connections
to one server open between requests (HTTP/1.1 keep-alive), as Go's ``http.Transport`` does: a request
takes an idle connection (one the server has closed meanwhile is dropped first) or opens one, and
gives it back when the answer has been read.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Mapping


class TLSConnection(http.client.HTTPSConnection):
    """HTTPS whose certificate is checked against ``server_name`` when one is given (SNI and
    verification), else against the host."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, server_name: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._tls_context = context
        self._server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        # as http.client's own connect (and Go's dialer): headers and body are separate writes, which
        # Nagle's algorithm would hold back until the server's delayed ACK (tens of milliseconds)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._tls_context.wrap_socket(sock, server_hostname=self._server_name or self.host)


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """An idle keep-alive connection with something to read has been closed by the server (or
    sent data nobody asked for): either way it cannot carry the next request."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class ConnectionPool:
    """Keep-alive connections to the server of ``url`` (``http`` or ``https``; ``context`` is
    required for https). Thread-safe: each request has a connection of its own while it runs."""

    def __init__(self, url: str, context: ssl.SSLContext | None, *, server_name: str = "",
                 connect_timeout: float = 10.0, max_idle: int = 32) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        if parts.scheme == "https" and context is None:
            raise ValueError("an https URL needs a TLS context")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.base_path = parts.path.rstrip("/")
        self._context = context
        self._server_name = server_name
        self._connect_timeout = connect_timeout
        self._max_idle = max_idle
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def request(self, method: str, path: str, body: bytes | None, headers: Mapping[str, str], timeout: float,
                ) -> tuple[int, http.client.HTTPMessage, bytes]:
        """Send one request and read the whole answer: (status, headers, body). Raises OSError
        (``ssl.SSLError``, timeouts and refusals included) or ``http.client.HTTPException`` when no
        answer could be read; the connection is then discarded."""
        conn = self._take()
        try:
            if conn.sock is None:
                conn.connect()
            assert conn.sock is not None
            conn.sock.settimeout(timeout)
            conn.request(method, self.base_path + path, body=body, headers=dict(headers))
            response = conn.getresponse()
            data = response.read()
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            self._give(conn)
        return response.status, response.headers, data

    def _take(self) -> http.client.HTTPConnection:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not _closed_by_peer(conn):
                    return conn
                conn.close()
        if self.https:
            assert self._context is not None
            return TLSConnection(self.host, self.port, self._context, self._server_name, self._connect_timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=self._connect_timeout)

    def close(self) -> None:
        """Close the idle connections (those in use close when their request ends, or are kept
        for the next one: the pool stays usable)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()
