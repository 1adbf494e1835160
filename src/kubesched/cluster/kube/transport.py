"""HTTP to the API server; the official ``kubernetes`` client reads the kubeconfig and provides auth.

Requests (everything but watches) go straight over keep-alive connections of the standard library
(:class:`~kubesched.k8s.http.ConnectionPool`), with the TLS settings and the ``Authorization`` header
the client's configuration gives: its generated API methods, ``param_serialize`` and urllib3 cost
about three times the CPU per request, and a scheduler sends a binding and an event per pod. The
header is asked of the configuration (which runs its token refresh hooks: exec plugins, expiring
tokens) at most every :data:`AUTH_REFRESH_SECONDS`, and again at once when the server answers 401.
Watches, and every request when the configuration routes through a proxy, go through
``ApiClient.param_serialize`` / ``call_api``, which hands back the raw urllib3 response unread. Either
way we decode the JSON into plain dicts ourselves (writes whose answer nobody needs — binding,
status patches, deletes, events — are not decoded at all), so

- the binding-response bug (a ``Status`` body decoded as ``V1Binding``, kubernetes-client/python#547) cannot
  happen, and
- no pydantic model is ever built (decoding JSON ourselves is about 24x cheaper than the client's models).

This module (with :func:`load_api_client`) is the only place that imports ``kubernetes``.

Flow control and retries are ours: a client-side token bucket (QPS/burst, as client-go's) on every
request, and retries with jittered exponential backoff for 429 (honouring ``Retry-After``), 5xx and
connection errors; a 429 with ``Retry-After`` is retried up to 10 times on top of the other
retries, as client-go's requests are. Other statuses raise :class:`~kubesched.k8s.objects.ApiError` at once.
"""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import ssl
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.cluster.kube.ratelimit import Backoff, TokenBucket
from kubesched.k8s.http import ConnectionPool
from kubesched.k8s.objects import ApiError
from kubesched.scheduler.metrics import Histogram

#: client-go's ``rest_client_request_duration_seconds`` buckets
REST_CLIENT_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)

log = logging.getLogger("kubesched.kube.transport")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
#: how long the Authorization header from the client's configuration is reused before it is asked
#: again (which runs the configuration's token refresh hooks); a 401 answer asks again at once
AUTH_REFRESH_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """Client flow control. ``qps``/``burst`` default to kube-scheduler's clientConnection (50/100)."""

    qps: float = 50.0
    burst: int = 100
    max_attempts: int = 5
    #: 429 answers with ``Retry-After`` retried on top of ``max_attempts`` (client-go's maxRetries, 10):
    #: the server said the request was not processed and when to come back
    max_throttled_retries: int = 10
    retry_initial: float = 0.2
    retry_cap: float = 5.0
    retry_after_cap: float = 30.0
    connect_timeout: float = 10.0
    request_timeout: float = 30.0


class ConnectionFailure(Exception):
    """The request never produced an HTTP status (refused, reset, timed out, TLS)."""


def load_api_client(kubeconfig: str | None, context: str | None = None, pool_size: int = 32) -> Any:
    """An ``ApiClient`` from a kubeconfig file, else the in-cluster service account, else the
    default kubeconfig (``$KUBECONFIG`` / ``~/.kube/config``). urllib3's own retries are switched
    off: :class:`Transport` decides what to retry."""
    from kubernetes import client, config

    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg,
                                persist_config=False)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except config.ConfigException:
            config.load_kube_config(context=context, client_configuration=cfg, persist_config=False)
    cfg.retries = False
    cfg.connection_pool_maxsize = pool_size
    return client.ApiClient(cfg)


def kubeconfig_context(kubeconfig: str, context: str | None) -> str:
    """The name of the context a client of the ``kubeconfig`` file uses: ``context``, else the file's
    current-context (which :func:`load_api_client` has then required)."""
    if context is not None:
        return context
    from kubernetes import config

    _contexts, current = config.list_kube_config_contexts(kubeconfig)
    return str(current["name"])


def _connection_errors() -> tuple[type[BaseException], ...]:
    import urllib3
    from kubernetes.client.exceptions import ApiException

    return (urllib3.exceptions.HTTPError, OSError, ApiException)


def direct_pool(api_client: Any, connect_timeout: float) -> ConnectionPool | None:
    """Keep-alive connections to the client's server with its TLS settings; None when the client
    reaches the server through a proxy (its pool manager is then a proxy manager) or is not an
    ``ApiClient``."""
    import urllib3

    cfg = getattr(api_client, "configuration", None)
    manager = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if cfg is None or type(manager) is not urllib3.PoolManager:
        return None
    host = str(cfg.host or "")
    context = tls_context(cfg) if host.startswith("https:") else None
    assert_hostname = getattr(cfg, "assert_hostname", None)
    server_name = getattr(cfg, "tls_server_name", None) or (assert_hostname if isinstance(assert_hostname, str) else "")
    return ConnectionPool(host, context, server_name=server_name, connect_timeout=connect_timeout,
                          max_idle=int(getattr(cfg, "connection_pool_maxsize", 0) or 32))


def tls_context(cfg: Any) -> ssl.SSLContext:
    """The TLS settings the kubernetes client hands to urllib3, as an ``SSLContext``: the
    configured CA (file and/or data) alone, else the system's; no verification when
    ``verify_ssl`` is off; the client certificate when one is configured."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cfg.verify_ssl:
        ca_file, ca_data = cfg.ssl_ca_cert or None, getattr(cfg, "ca_cert_data", None) or None
        if ca_file or ca_data:
            context.load_verify_locations(cafile=ca_file, cadata=ca_data)
        else:
            context.load_default_certs()
        if getattr(cfg, "assert_hostname", None) is False:
            context.check_hostname = False
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    return context


def query_string(query: Mapping[str, Any]) -> str:
    """Query parameters as the kubernetes client writes them (booleans as ``true``/``false``)."""
    return urllib.parse.urlencode(
        [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in query.items()],
        quote_via=urllib.parse.quote,
    )


def api_error(status: int, data: bytes) -> ApiError:
    """The ApiError for a non-2xx answer, from its ``Status`` body when it has one."""
    try:
        body = json.loads(data) if data else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("message") or data[:200].decode("utf-8", "replace") or f"HTTP {status}")
    return ApiError(int(body.get("code") or status), str(body.get("reason") or _reason(status)), message)


def _reason(status: int) -> str:
    return {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
            410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable", 504: "Timeout"}.get(status, "Unknown")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class WatchStream:
    """One open watch: iterates the decoded events (``{"type", "object"}`` dicts) of a chunked
    NDJSON body. :meth:`close` may be called from another thread to end the iteration."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        for chunk in self._raw.stream(65536, decode_content=True):
            if self._closed:
                return
            buffer += chunk
            while True:
                newline = buffer.find(b"\n")
                if newline < 0:
                    break
                line, buffer = buffer[:newline], buffer[newline + 1:]
                if line.strip():
                    yield json.loads(line)
        if buffer.strip() and not self._closed:
            yield json.loads(buffer)

    def close(self) -> None:
        self._closed = True
        try:
            self._raw.shutdown()
        except Exception:  # noqa: BLE001 - best effort from another thread
            pass
        try:
            self._raw.release_conn()
        except Exception:  # noqa: BLE001
            pass


class Transport:
    """Requests to one API server with one rate limiter. Several transports may share an ApiClient
    (its connection pool) while keeping separate limiters, like kube-scheduler's separate clients
    for scheduling, events and leader election."""

    def __init__(self, api_client: Any, options: ClientOptions, *, user_agent: str = "kubesched",
                 limiter: TokenBucket | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.api_client = api_client
        self.options = options
        self.user_agent = user_agent
        self.limiter = limiter or TokenBucket(options.qps, options.burst)
        self._sleep = sleep
        self._errors = _connection_errors()
        self.requests = 0
        self.retries = 0
        #: ``rest_client_requests_total`` (``(code, method)``; ``<error>`` for no answer) and
        #: ``rest_client_request_duration_seconds`` per verb, as client-go counts them
        self.responses: Counter[tuple[str, str]] = Counter()
        self.latency: dict[str, Histogram] = {}
        self.host = urllib.parse.urlsplit(str(getattr(getattr(api_client, "configuration", None), "host", "") or "")
                                          ).netloc
        self.in_flight = 0  # requests under way (waiting on the API server is not being stuck)
        self._count_lock = threading.Lock()
        self._pool = direct_pool(api_client, options.connect_timeout)
        self._auth: dict[str, str] = {}
        self._auth_at = float("-inf")
        self._auth_lock = threading.Lock()

    # -- one HTTP exchange -------------------------------------------------------------------
    def _open(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
              content_type: str | None, read_timeout: float) -> Any:
        """Through the kubernetes client: the raw urllib3 response, unread (watches; every
        request when there is no direct pool)."""
        headers: dict[str, str] = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type or JSON
        m, url, hdrs, payload, post = self.api_client.param_serialize(
            method, path, query_params=list((query or {}).items()) or None, header_params=headers,
            body=body, auth_settings=["BearerToken"],
        )
        hdrs["User-Agent"] = self.user_agent
        self._admit()
        try:
            response = self.api_client.call_api(
                m, url, hdrs, payload, post, _request_timeout=(self.options.connect_timeout, read_timeout)
            )
        except self._errors as exc:
            raise ConnectionFailure(f"{method} {path}: {exc}") from exc
        return response.response

    def _admit(self) -> None:
        self.limiter.acquire()
        with self._count_lock:
            self.requests += 1

    def _auth_headers(self, refresh: bool) -> dict[str, str]:
        with self._auth_lock:
            now = time.monotonic()
            if refresh or now - self._auth_at >= AUTH_REFRESH_SECONDS:
                settings = self.api_client.configuration.auth_settings() or {}
                self._auth = {str(v["key"]): str(v["value"]) for v in settings.values()
                              if v.get("in") == "header" and v.get("value")}
                self._auth_at = now
            return self._auth

    def _direct(self, pool: ConnectionPool, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
                content_type: str | None) -> tuple[int, http.client.HTTPMessage, bytes]:
        target = f"{path}?{query_string(query)}" if query else path
        payload = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = {"Accept": JSON, "User-Agent": self.user_agent}
        if payload is not None:
            headers["Content-Type"] = content_type or JSON
        for refresh in (False, True):  # a 401 may mean an expired credential: ask for it again once
            headers.update(self._auth_headers(refresh))
            self._admit()
            try:
                status, answer_headers, data = pool.request(method, target, payload, headers,
                                                            self.options.request_timeout)
            except (OSError, http.client.HTTPException) as exc:
                raise ConnectionFailure(f"{method} {path}: {exc}") from exc
            if status != 401:
                break
        return status, answer_headers, data

    def _exchange(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
                  content_type: str | None) -> tuple[int, Any, bytes]:  # headers: anything with .get
        started = time.monotonic()
        code = "<error>"
        try:
            if self._pool is not None:
                status, headers, data = self._direct(self._pool, method, path, query, body, content_type)
            else:
                raw = self._open(method, path, query, body, content_type, self.options.request_timeout)
                try:
                    data = raw.data
                except self._errors as exc:
                    raw.close()
                    raise ConnectionFailure(f"{method} {path}: {exc}") from exc
                finally:
                    raw.release_conn()
                status, headers = int(raw.status), raw.headers
            code = str(status)
        finally:
            self._count(code, method, time.monotonic() - started)
        return status, headers, data

    def _count(self, code: str, method: str, seconds: float) -> None:
        with self._count_lock:
            self.responses[code, method] += 1
            histogram = self.latency.get(method)
            if histogram is None:
                histogram = self.latency[method] = Histogram(REST_CLIENT_LATENCY_BUCKETS)
            histogram.observe(seconds)

    # -- requests with retries ---------------------------------------------------------------
    def call(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
             content_type: str | None = None, retry: bool = True,
             guard: Callable[[], None] | None = None, decode: bool = True) -> Any:
        """Send a request and return its decoded JSON body (None when empty, or when ``decode`` is
        False: writes whose answer nobody needs skip the decoding).

        Retries 5xx, connection failures and a 429 without ``Retry-After`` up to ``max_attempts``
        tries, and a 429 with ``Retry-After`` (after that many seconds) up to
        ``max_throttled_retries`` times besides, then raises the last error as ApiError (connection
        failures as 503). ``guard`` runs
        before each try and may raise ApiError to stop (e.g. leadership lost)."""
        with self._count_lock:
            self.in_flight += 1
        try:
            return self._call(method, path, query, body, content_type, retry, guard, decode)
        finally:
            with self._count_lock:
                self.in_flight -= 1

    def _call(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any, content_type: str | None,
              retry: bool, guard: Callable[[], None] | None, decode: bool) -> Any:
        attempts = self.options.max_attempts if retry else 1
        throttled_retries = self.options.max_throttled_retries if retry else 0
        backoff = Backoff(self.options.retry_initial, self.options.retry_cap, jitter=0.5)
        last: ApiError | None = None
        cause = ""
        failures = throttled = 0  # answers counted against max_attempts / max_throttled_retries
        for attempt in itertools.count(1):
            if guard is not None:
                guard()
            wait: float | None = None
            counted = True  # against max_attempts
            try:
                status, headers, data = self._exchange(method, path, query, body, content_type)
            except ConnectionFailure as exc:
                last = ApiError(503, "ServiceUnavailable", f"connection to the API server failed: {exc}")
                cause = f"connection failed: {exc}"
            else:
                if 200 <= status < 300:
                    if not decode or not data:
                        return None
                    try:
                        return json.loads(data)
                    except ValueError as exc:
                        raise ApiError(500, "InternalError", f"{method} {path}: invalid JSON answer: {exc}") from exc
                last = api_error(status, data)
                cause = f"HTTP {status} {last.reason}: {last.message}"
                if status not in RETRYABLE_STATUSES:
                    raise last
                wait = retry_after_seconds(headers)
                if status == 429 and wait is not None:
                    # "not processed, come back after Retry-After": client-go's requests retry
                    # this up to maxRetries (10) times (rest.Request, checkWait); not counted
                    # against max_attempts, which the other failures use
                    throttled += 1
                    if throttled > throttled_retries:
                        break
                    counted = False
                elif status == 429:
                    wait = 1.0
            failures += counted
            if failures >= attempts:
                break
            delay = min(wait, self.options.retry_after_cap) if wait is not None else backoff.next()
            with self._count_lock:
                self.retries += 1
            log.warning("retrying %s %s in %.1fs (attempt %d): %s", method, path, delay, attempt, cause,
                        extra={"method": method, "path": path, "code": last.code, "reason": last.reason,
                               "attempt": attempt, "delay": round(delay, 3), "cause": cause})
            self._sleep(delay)
        assert last is not None
        raise last

    def watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> WatchStream:
        """Open a watch (one try). Raises ApiError for an HTTP error status (410 included) and
        ConnectionFailure when the server cannot be reached."""
        raw = self._open("GET", path, query, None, None, read_timeout)
        status = int(raw.status)
        if not 200 <= status < 300:
            try:
                data = raw.data
            except self._errors:
                data = b""
            finally:
                raw.release_conn()
            raise api_error(status, data)
        return WatchStream(raw)

    @property
    def connection_errors(self) -> tuple[type[BaseException], ...]:
        """Exceptions a watch stream may raise when its connection breaks."""
        return (*self._errors, ConnectionFailure, ValueError)
