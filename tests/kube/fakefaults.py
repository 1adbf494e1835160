"""Fault injection and the request log of the fake API server (see fakeapi.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakeapi import FakeApiServer


@dataclass
class Fault:
    """Answer matching requests with ``status`` (``times`` times; -1 = always). ``after``: perform the
    request first, then answer the error (the write happened, the answer was lost). ``action`` runs
    before the request is handled; with ``status=None`` only ``action``/``delay`` apply."""

    method: str | None = None
    path: str | None = None  # regex, searched in the path
    status: int | None = 500
    times: int = 1
    retry_after: float | None = None
    delay: float = 0.0
    after: bool = False
    agent: str | None = None  # substring of the User-Agent
    action: Callable[[FakeApiServer], None] | None = None
    reset: bool = False  # close the connection without answering
    hits: int = 0

    def matches(self, method: str, path: str, agent: str) -> bool:
        return (self.times < 0 or self.hits < self.times) and (self.method is None or self.method == method) and (
            self.path is None or re.search(self.path, path) is not None) and (
            self.agent is None or self.agent in agent)


@dataclass(frozen=True)
class Request:
    time: float
    method: str
    path: str
    query: dict[str, str]
    agent: str
    status: int
    body: Any = None
