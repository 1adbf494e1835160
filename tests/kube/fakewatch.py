"""The watch half of the fake API server: an event history with resourceVersions, chunked NDJSON
streams with bookmarks, compaction (410 as HTTP status or as a mid-stream ERROR event), dropped and
paused streams."""

from __future__ import annotations

import bisect
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


def status_body(code: int, reason: str, message: str) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def expired_status(rv: int) -> Obj:
    return status_body(410, "Expired", f"too old resource version: {rv}")


@dataclass
class Stream:
    kind: str
    namespace: str | None
    dropped: bool = False
    expired: bool = False
    lines: int = 0


@dataclass
class History:
    """Every change of the store, in resourceVersion order: (rv, type, kind, object)."""

    cond: threading.Condition
    rvs: list[int] = field(default_factory=list)
    events: list[tuple[int, str, str, Obj]] = field(default_factory=list)
    compacted_rv: int = 0
    paused: bool = False
    stopping: bool = False
    open_streams: dict[int, Stream] = field(default_factory=dict)

    def append(self, rv: int, event_type: str, kind: str, obj: Obj) -> None:
        self.rvs.append(rv)
        self.events.append((rv, event_type, kind, obj))
        self.cond.notify_all()

    def since(self, rv: int) -> int:
        return bisect.bisect_right(self.rvs, rv)


def write_chunk(wfile: Any, data: bytes) -> None:
    wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
    wfile.flush()


def end_chunks(wfile: Any) -> None:
    wfile.write(b"0\r\n\r\n")
    wfile.flush()


def _line(event_type: str, obj: Obj) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def serve_watch(handler: Any, history: History, current_rv: Any, kind: str, api_version: str,
                namespace: str | None, query: dict[str, str], gone_as_http: bool,
                bookmark_interval: float) -> int:
    """Serve one watch on ``handler`` (a BaseHTTPRequestHandler); return the HTTP status sent."""
    raw_rv = query.get("resourceVersion", "")
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    timeout = float(query.get("timeoutSeconds") or 1800)
    with history.cond:
        start = int(raw_rv) if raw_rv not in ("", "0") else current_rv()
        too_old = start < history.compacted_rv
    if too_old and gone_as_http:
        handler.send_json(410, expired_status(start))
        return 410
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    if too_old:
        write_chunk(handler.wfile, _line("ERROR", expired_status(start)))
        end_chunks(handler.wfile)
        return 200
    stream = Stream(kind, namespace)
    sid = id(stream)
    deadline = time.monotonic() + timeout
    next_bookmark = time.monotonic() + bookmark_interval
    with history.cond:
        history.open_streams[sid] = stream
        pos = history.since(start)
    try:
        while True:
            with history.cond:
                while True:
                    now = time.monotonic()
                    if history.stopping or stream.dropped or stream.expired or now >= deadline:
                        break
                    if not history.paused and pos < len(history.events):
                        break
                    if bookmarks and not history.paused and now >= next_bookmark:
                        break
                    wake = min(deadline, next_bookmark if bookmarks else deadline)
                    history.cond.wait(max(0.001, wake - now))
                batch = [] if history.paused else history.events[pos:]
                pos += len(batch)
                bookmark_rv = history.rvs[pos - 1] if pos else start
                dropped, expired = stream.dropped, stream.expired
                done = history.stopping or time.monotonic() >= deadline
            if dropped:
                handler.close_connection = True
                try:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return 200
            if expired:
                write_chunk(handler.wfile, _line("ERROR", expired_status(start)))
                end_chunks(handler.wfile)
                return 200
            data = b"".join(_line(t, o) for _, t, k, o in batch
                            if k == kind and (namespace is None or (o.get("metadata") or {}).get("namespace") == namespace))
            now = time.monotonic()
            if bookmarks and now >= next_bookmark and not history.paused:
                data += _line("BOOKMARK", {"kind": kind, "apiVersion": api_version,
                                           "metadata": {"resourceVersion": str(max(bookmark_rv, start))}})
                next_bookmark = now + bookmark_interval
            if data:
                stream.lines += data.count(b"\n")
                write_chunk(handler.wfile, data)
            if done:
                end_chunks(handler.wfile)
                return 200
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True
        return 200
    finally:
        with history.cond:
            history.open_streams.pop(sid, None)
