"""What keeps ``kubesched ui`` to the person who started it, installed on the app by :func:`protect`.

A browser will send requests to a server on 127.0.0.1 on behalf of any page it shows, so a server
that only listens on the loopback is not yet private:

* **Host.** A page of another site can make its own name resolve to 127.0.0.1 after it has loaded
  (DNS rebinding) and then read this server's answers as its own. Such requests name that site in
  their ``Host`` header, so every request must name this server: ``localhost``, ``127.0.0.1``,
  ``[::1]``, the address it was started on, or a name given with ``--allow-host`` (any port: a port
  forwarded to this one, ``ssh -L 9000:localhost:8750``, keeps working). Others get 400.
* **Writes from other sites.** A page of another site can submit a form to this server (a
  cross-site request forgery). Every POST, PUT, PATCH and DELETE from a browser must come from one
  of this server's own pages: ``Sec-Fetch-Site`` must say ``same-origin`` where the browser sends it,
  else ``Origin``, else the ``Referer``'s origin, must be this server's (``http://`` and the Host
  header). A request with none of the three does not come from a browser (``curl``, a script): no
  page can forge it, and it goes through. The HTML forms (``/edit``, ``/whatif``) carry, in
  addition, a token this server process drew at random when it started (:attr:`Safety.token`),
  which another site cannot read; a form without it, or with the token of an earlier process,
  is refused (403) and changes nothing.
* **Size.** Answers over :data:`GZIP_MIN` bytes are gzip-compressed for clients that accept it
  (the timeline of a large run is megabytes of JSON).

Every answer also says which version of the scenario it was made from (:data:`VERSION_HEADER`),
the number an edit sends back to be refused rather than overwrite another's (409, ``state.py``).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from fastapi import FastAPI
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: the names of the loopback every server answers to, as a Host header writes them
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: addresses that listen on every interface: no client names the server so
_ANY_ADDRESS = ("0.0.0.0", "[::]")
#: the form field of the token; the methods that change something
TOKEN_FIELD = "csrf_token"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: the header naming the scenario's version on every answer (send it back as If-Match to edit)
VERSION_HEADER = "Kubesched-Scenario-Version"
#: answers from this size on are compressed
GZIP_MIN = 1024


def _as_host(name: str) -> str:
    """``name`` as a Host header writes it, without a port: lower case, an IPv6 address in brackets."""
    name = name.strip().lower()
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return name
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def host_name(header: str) -> str:
    """The name a Host header names, without its port (``[::1]:8750`` -> ``[::1]``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return _as_host(header[:header.find("]") + 1] if "]" in header else header)
    return _as_host(header.rpartition(":")[0] if ":" in header else header)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL, the default port left out; "" for one without a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    netloc = parts.netloc.lower().rpartition("@")[2]
    default = ":80" if parts.scheme == "http" else ":443"
    return f"{parts.scheme}://{netloc.removesuffix(default)}"


@dataclass(frozen=True)
class Safety:
    """The names this server answers to and the forms' token (one per server process)."""

    hosts: frozenset[str]
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)

    @classmethod
    def serving(cls, host: str = "127.0.0.1", allow: Iterable[str] = ()) -> Safety:
        """A server listening on ``host`` that also answers to the names ``allow`` (host names or
        addresses, without a scheme, port or path: ValueError naming the one that is not)."""
        names = set(LOOPBACK_NAMES)
        if _as_host(host) not in _ANY_ADDRESS:
            names.add(_as_host(host))
        for name in allow:
            plain = _as_host(name)
            if not plain or any(c in plain for c in "/@ ") or (":" in plain and not plain.startswith("[")):
                raise ValueError(f"{name!r}: give a host name or an address, without a scheme, port or path "
                                 "(kubesched.example, 10.0.0.5, fd00::5)")
            names.add(plain)
        return cls(frozenset(names))

    def host_refusal(self, header: str | None) -> str | None:
        """Why a request whose Host header is ``header`` is refused, or None."""
        if header is None:
            return "refused: the request has no Host header (kubesched ui answers only requests naming it)"
        if host_name(header) in self.hosts:
            return None
        return (f"refused: Host {header!r} is not a name this server answers to ({', '.join(sorted(self.hosts))}). "
                "A page of another site may be trying to read it (DNS rebinding); if you reach kubesched ui by "
                "that name, start it with --allow-host " + host_name(header))

    def origin_refusal(self, headers: Headers) -> str | None:
        """Why a write whose browser headers say it comes from another site is refused, or None (from
        this server's own pages, or from a client that is not a browser)."""
        here = _origin("http://" + headers.get("host", ""))
        site = headers.get("sec-fetch-site")  # only browsers send it; no page can set it
        origin = headers.get("origin")
        referer = headers.get("referer")
        sent = origin if origin is not None else _origin(referer) or referer if referer is not None else None
        if site in (None, "same-origin", "none") and (sent is None or _origin(sent) == here):
            return None  # this server's own page, or not a browser at all (curl, a script)
        by = sent if sent is not None else f"a page of another site (Sec-Fetch-Site: {site})"
        return (f"refused: this change was sent by {by}, not by a page of this server ({here}). "
                "kubesched ui takes changes only from its own pages, or from clients such as curl that send "
                "no Origin; nothing was changed")

    def token_refusal(self, body: bytes) -> str | None:
        """Why a form posted with ``body`` is refused for its token, or None."""
        sent = parse_qs(body.decode("utf-8", "replace")).get(TOKEN_FIELD, [""])[0]
        if hmac.compare_digest(sent.encode(), self.token.encode()):
            return None
        what = "has no token" if not sent else "has the token of another kubesched ui process (restarted since?)"
        return (f"refused: the form {what}; forms are taken only from the pages this server process rendered. "
                "Reload the page and send it again; nothing was changed")


class _Guard:
    """The ASGI middleware of :func:`protect`."""

    def __init__(self, app: ASGIApp, safety: Safety, version: Callable[[], int]) -> None:
        self.app, self.safety, self.version = app, safety, version

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        api = scope["path"].startswith("/api/")
        why = self.safety.host_refusal(headers.get("host"))
        status = 400
        if why is None and scope["method"] in WRITES:
            why, status = self.safety.origin_refusal(headers), 403
            if why is None and not api:  # a page's form: its token too (the body is read, then replayed)
                body, receive = await _buffered(receive)
                why = self.safety.token_refusal(body)
        if why is not None:
            await _refuse(send, status, why, api)
            return

        async def send_with_version(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append(VERSION_HEADER, str(self.version()))
            await send(message)

        await self.app(scope, receive, send_with_version)


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The request's body, and a ``receive`` that hands it to the app as if unread."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            return b"", receive
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body, sent = b"".join(chunks), False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _refuse(send: Send, status: int, why: str, api: bool) -> None:
    """The refusal: ``{"detail": why}`` for the API (as its other errors), plain text for a page."""
    body = json.dumps({"detail": why}).encode() if api else why.encode()
    kind = b"application/json" if api else b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def protect(app: FastAPI, safety: Safety, version: Callable[[], int]) -> None:
    """Install the Host and same-origin checks, the forms' token, the version header and gzip."""
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN)
    app.add_middleware(_Guard, safety=safety, version=version)  # outermost: refusals cost nothing more
