"""Structured logs: one JSON object per line with the fields passed through ``extra=``, klog's text
format (as kube-scheduler writes it), or plain text."""

from __future__ import annotations

import json
import logging
import sys
import warnings
from datetime import UTC, datetime
from typing import Any

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, separators=(",", ":"))


def _klog_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value))


class KlogFormatter(logging.Formatter):
    """klog's text header and structured key/value pairs (``klog.InfoS``):
    ``I1125 18:10:00.123456   12345 runner.py:42] "message" key="value" n=3``."""

    LETTERS = {"DEBUG": "I", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "F"}

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC)
        header = (f"{self.LETTERS.get(record.levelname, 'I')}{when:%m%d %H:%M:%S.%f} "
                  f"{record.thread or 0:>7} {record.filename}:{record.lineno}]")
        parts = [header, json.dumps(record.getMessage())]
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                parts.append(f"{key}={_klog_value(value)}")
        if record.exc_info:
            parts.append(f"err={json.dumps(self.formatException(record.exc_info))}")
        return " ".join(parts)


def configure_logging(level: str = "info", fmt: str = "json") -> None:
    """Send every logger (urllib3's included) to stderr, as JSON lines, klog text or plain text."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    elif fmt == "klog":
        handler.setFormatter(KlogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("urllib3").setLevel(max(root.level, logging.WARNING))
    # Python warnings (urllib3's InsecureRequestWarning of an insecure kubeconfig, on every request)
    # go through the logger too, once each: one JSON object per line stays true
    logging.captureWarnings(True)
    warnings.filterwarnings("once")
