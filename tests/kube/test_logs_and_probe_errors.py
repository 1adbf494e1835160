"""The log stream of `kubesched run` stays one JSON object per line: Python warnings (urllib3's
InsecureRequestWarning) go through the logger once, and a probe client resetting its connection
prints no traceback."""

from __future__ import annotations

import io
import json
import logging
import socket
import struct
import sys
import time
import warnings

import pytest

from kubesched.cluster.kube.logs import configure_logging
from kubesched.serve.serving import HealthServer


@pytest.fixture()
def captured(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    configure_logging("info", "json")
    yield out
    logging.captureWarnings(False)
    warnings.resetwarnings()
    root.handlers[:], root.level = saved


def test_warnings_are_logged_once_as_json(captured: io.StringIO) -> None:
    for _ in range(3):
        warnings.warn("Unverified HTTPS request is being made", UserWarning, stacklevel=1)
    lines = [line for line in captured.getvalue().splitlines() if line]
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert "Unverified HTTPS request" in entry["msg"] and entry["logger"] == "py.warnings"


def test_a_probe_connection_reset_prints_no_traceback(captured: io.StringIO) -> None:
    server = HealthServer("127.0.0.1", 0, metrics=lambda: "", healthy=lambda: True, ready=lambda: True)
    server.start()
    try:
        client = socket.create_connection(("127.0.0.1", server.port))
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # unfinished request, then a reset
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        time.sleep(0.3)
    finally:
        server.stop()
    assert "Traceback" not in captured.getvalue()


def test_klog_format_writes_kube_schedulers_text_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("info", "klog")
        logging.getLogger("kubesched.run").warning("retrying request", extra={
            "method": "POST", "path": "/api/v1/namespaces/default/pods/p/binding", "code": 503, "attempt": 2})
    finally:
        logging.captureWarnings(False)
        warnings.resetwarnings()
        root.handlers[:], root.level = saved
    line = out.getvalue().strip()
    header, _, rest = line.partition("] ")
    level_and_date, clock, thread, where = header.split()
    assert level_and_date[0] == "W" and len(level_and_date) == 5 and level_and_date[1:].isdigit()
    assert len(clock) == len("18:10:00.123456") and thread.isdigit()
    assert where.startswith("test_logs_and_probe_errors.py:")
    assert rest == ('"retrying request" method="POST" path="/api/v1/namespaces/default/pods/p/binding" code=503 '
                    "attempt=2")
