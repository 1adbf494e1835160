"""Timestamps: simulated seconds <-> RFC 3339 strings (simulated time 0 = 2026-01-01T00:00:00Z)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import lru_cache

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def rfc3339(seconds: float) -> str:
    """A metav1.Time as the API serialises it: whole seconds (the fraction is dropped, as Go's
    RFC 3339 formatting of metav1.Time does)."""
    return _whole_seconds(math.floor(seconds))


@lru_cache(maxsize=1024)
def _whole_seconds(seconds: int) -> str:
    """Many objects are written in the same simulated second: each second is formatted once."""
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=4096)
def parse_rfc3339(text: str) -> float:
    """Seconds relative to the simulated epoch (may be negative for timestamps before it)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH).total_seconds()
