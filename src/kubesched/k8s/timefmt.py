"""Timestamps: simulated seconds <-> RFC 3339 strings (simulated time 0 = 2026-01-01T00:00:00Z)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import lru_cache

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def rfc3339(seconds: float) -> str:
    """A metav1.Time as the API serialises it: whole seconds (the fraction is dropped, as Go's
    RFC 3339 formatting of metav1.Time does)."""
    moment = EPOCH + timedelta(seconds=math.floor(seconds))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=4096)
def parse_rfc3339(text: str) -> float:
    """Seconds relative to the simulated epoch (may be negative for timestamps before it)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH).total_seconds()
