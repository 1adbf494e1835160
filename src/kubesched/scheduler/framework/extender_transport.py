"""How an extender's calls travel (upstream ``makeTransport`` and the HTTP client of
``pkg/scheduler/extender.go``): POSTed over HTTP(S), or handed to a Python function in this process.

The error texts follow Go's ``net/http`` client where a user would compare them (``Post "<url>":
... connection refused``, the client timeout, ``failed <verb> with extender at URL <url>, code
<n>``).
"""

from __future__ import annotations

import errno
import http.client
import importlib
import importlib.util
import json
import os
import ssl
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubesched.k8s.http import ConnectionPool
from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.extender import ExtenderConfig, ExtenderError, TLSSettings, Transport

DEFAULT_TIMEOUT_SECONDS = 5.0
#: the ``urlPrefix`` of an extender that is a Python function in this process
PYTHON_SCHEME = "python:"


class HTTPTransport:
    """POST a JSON document and decode the answer, with the configured timeout, over keep-alive
    connections to the extender (as Go's HTTP client keeps them); ``https`` with the extender's
    TLS settings."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.timeout = config.http_timeout or DEFAULT_TIMEOUT_SECONDS
        parsed = urllib.parse.urlsplit(config.url_prefix)
        context: ssl.SSLContext | None = None
        server_name = ""
        if parsed.scheme == "https":
            context = _ssl_context(config.tls or TLSSettings(), config.enable_https)
            server_name = (config.tls.server_name if config.tls else "") or ""
        self._server = f"{parsed.scheme}://{parsed.netloc}"  # every verb's URL is on it
        self._context, self._server_name = context, server_name
        self._pool: ConnectionPool | None = None
        self._pool_lock = threading.Lock()  # binding threads call the bind verb too

    def __call__(self, verb: str, url: str, args: Obj) -> Any:
        body = json.dumps(args, separators=(",", ":")).encode()
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        try:
            status, _, data = self._connections().request(
                "POST", path, body, {"Content-Type": "application/json"}, self.timeout)
        except TimeoutError as err:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
            ) from err
        except ConnectionRefusedError as err:
            raise ExtenderError(f'Post "{url}": dial tcp {host}:{port}: connect: connection refused') from err
        except ssl.SSLError as err:
            raise ExtenderError(f'Post "{url}": tls: {err.reason or err}') from err
        except OSError as err:
            if err.errno == errno.ECONNREFUSED:
                raise ExtenderError(f'Post "{url}": dial tcp {host}:{port}: connect: connection refused') from err
            raise ExtenderError(f'Post "{url}": {err.strerror or err}') from err
        except http.client.HTTPException as err:
            raise ExtenderError(f'Post "{url}": {type(err).__name__}: {err}') from err
        except ValueError as err:  # not an http(s) URL
            raise ExtenderError(f'Post "{url}": {err}') from err
        if status != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {status}")
        try:
            return json.loads(data)
        except ValueError as err:
            raise ExtenderError(f"extender {url}: the answer is not JSON: {err}") from err

    def close(self) -> None:
        """Close the kept-alive connections; a later call opens a new one."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _connections(self) -> ConnectionPool:
        """The kept-alive connections to the extender, made on first use (a URL without a host
        raises ValueError then, which the call reports as its error)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ConnectionPool(self._server, self._context, server_name=self._server_name,
                                            connect_timeout=self.timeout)
            return self._pool


def _ssl_context(tls: TLSSettings, enable_https: bool) -> ssl.SSLContext:
    """Upstream ``makeTransport``: ``enableHTTPS`` without a CA skips verification; otherwise the
    CA (file or data) verifies the server, ``insecure`` turns verification off, a client
    certificate is presented when given."""
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (enable_https and not has_ca)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificate and host name
    if has_ca:  # that CA alone, as Go's RootCAs; data takes precedence over the file, as in client-go
        if tls.ca_data:
            context.load_verify_locations(cadata=tls.ca_data.decode())
        else:
            context.load_verify_locations(cafile=tls.ca_file)
    else:
        context.load_default_certs()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if tls.cert_file or tls.cert_data:
        _load_client_certificate(context, tls)
    return context


def _load_client_certificate(context: ssl.SSLContext, tls: TLSSettings) -> None:
    """``ssl`` reads a client certificate only from files: inline data goes through a private
    temporary file, removed at once."""
    paths: list[str] = []
    try:
        def path_of(file: str, data: bytes) -> str:
            if not data:  # data takes precedence over the file, as in client-go
                return file
            fd, path = tempfile.mkstemp(suffix=".pem")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            paths.append(path)
            return path

        cert = path_of(tls.cert_file, tls.cert_data)
        key = path_of(tls.key_file, tls.key_data) if (tls.key_file or tls.key_data) else None
        context.load_cert_chain(cert, key)
    finally:
        for path in paths:
            os.unlink(path)


class PythonTransport:
    """Call ``function(verb, args)`` in this process. The document goes through JSON both ways, as
    on the wire, so the function sees exactly what an HTTP extender would and cannot change the
    scheduler's objects; an exception is the call's error."""

    def __init__(self, function: Callable[[str, Obj], Any]) -> None:
        self._function = function

    def __call__(self, verb: str, url: str, args: Obj) -> Any:
        document = json.loads(json.dumps(args))
        try:
            answer = self._function(verb, document)
        except Exception as err:  # noqa: BLE001 - the extender's failure is the call's error
            raise ExtenderError(f"extender {url}: {type(err).__name__}: {err}") from err
        try:
            return json.loads(json.dumps(answer))
        except (TypeError, ValueError) as err:
            raise ExtenderError(f"extender {url}: the answer is not JSON: {err}") from err


def load_python_extender(target: str, base_dir: Path | None) -> Callable[[str, Obj], Any]:
    """The function named by ``<module or file.py>:<function>`` (a relative file path is taken
    from ``base_dir``, the directory of the configuration's file, else the working directory)."""
    location, sep, attribute = target.rpartition(":")
    if not sep or not location or not attribute:
        raise ValueError(f"expected python:<module or file.py>:<function>, got {PYTHON_SCHEME}{target}")
    if location.endswith(".py"):
        path = Path(location)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise ValueError(f"{path}: no such file")
        name = f"kubesched_extender_{abs(hash(str(path.resolve())))}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ValueError(f"{path}: cannot be loaded as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except Exception:
                del sys.modules[name]
                raise
    else:
        module = importlib.import_module(location)
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ValueError(f"{location} has no function {attribute!r}")
    return function  # type: ignore[no-any-return]


def make_transport(config: ExtenderConfig, base_dir: Path | None) -> Transport:
    if config.url_prefix.startswith(PYTHON_SCHEME):
        return PythonTransport(load_python_extender(config.url_prefix[len(PYTHON_SCHEME):], base_dir))
    return HTTPTransport(config)
