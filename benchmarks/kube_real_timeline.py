"""``kube_real.py --timeline``: pods bound over time, and the API server's 429 answers, per second.

Once a second (from the scheduler's start) a sampler thread records how many measured pods the
watch has seen bound and scrapes the API server's ``/metrics`` for the requests it answered
``429 Too Many Requests``: ``apiserver_request_total{code="429"}``, which counts both the requests a
handler answered so and those the max-in-flight filter turned away before any handler
(``--max-requests-inflight``, ``--max-mutating-requests-inflight`` with priority and fairness off;
those are also in ``apiserver_request_terminations_total``, which is therefore not added). They are
added up per call kind — ``POST pods/binding``, ``PATCH pods/status``, ``DELETE pods``, ``POST
events`` … — so the figures say which of the scheduler's calls were turned away. During a run the
only clients that write are the scheduler and this driver's reaper (which rarely has anything to
do: the preemption workload's victims have no grace period). The in-flight limits never apply to a
user of the ``system:masters`` group (the driver's usual credentials): give the scheduler a user
of its own (``--scheduler-kubeconfig``) to see them at all.

A scrape costs the API server some CPU (its metrics text is a few hundred kilobytes), the same
for whichever scheduler runs.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: the counter that holds the 429 answers, those of the handlers and of the max-in-flight filter
COUNTERS = ("apiserver_request_total",)
_SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def rejections(metrics_text: str) -> Counter[str]:
    """The 429 answers in an API server's Prometheus text, by call kind (``VERB resource[/subresource]``,
    or ``VERB path`` for a non-resource request)."""
    counts: Counter[str] = Counter()
    for line in metrics_text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or match["name"] not in COUNTERS:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        if labels.get("code") != "429":
            continue
        what = labels.get("resource") or labels.get("path") or "?"
        if labels.get("subresource"):
            what += "/" + labels["subresource"]
        counts[f"{labels.get('verb', '?')} {what}"] += int(float(match["value"]))
    return counts


@dataclass
class Timeline:
    """Per second from the scheduler's start: ``[seconds, pods bound, 429 answers so far]``, and
    the 429 answers of the run by call kind."""

    rows: list[list[float]] = field(default_factory=list)
    by_kind: dict[str, int] = field(default_factory=dict)
    scrape_failures: int = 0

    def table(self) -> str:
        lines = ["    s  bound  429s"]
        lines += [f"{t:5.0f}  {int(bound):5d}  {int(rejected):4d}" for t, bound, rejected in self.rows]
        lines += [f"429 {kind}: {count}" for kind, count in sorted(self.by_kind.items())]
        if self.scrape_failures:
            lines.append(f"({self.scrape_failures} scrapes of /metrics failed)")
        return "\n".join(lines)


class Sampler(threading.Thread):
    """Samples ``bound()`` and the API server's 429 counters every ``interval`` seconds until stopped.
    The counters are taken relative to the first scrape (made before the scheduler starts)."""

    def __init__(self, scrape: Callable[[], str], bound: Callable[[], int], interval: float = 1.0) -> None:
        super().__init__(daemon=True, name="timeline")
        self.scrape, self.bound, self.interval = scrape, bound, interval
        self.timeline = Timeline()
        self.stop = threading.Event()
        self._base = self._read() or Counter()
        self._last: Counter[str] = Counter()
        self.started = time.monotonic()

    def _read(self) -> Counter[str] | None:
        try:
            return rejections(self.scrape())
        except Exception as err:  # noqa: BLE001 - a scrape turned away (429 itself) is tried again next second
            self.timeline.scrape_failures += 1
            if self.timeline.scrape_failures == 1:
                print(f"timeline: scraping /metrics failed: {err}", file=sys.stderr, flush=True)
            return None

    def run(self) -> None:
        tick = 0
        while not self.stop.wait(max(0.0, self.started + (tick + 1) * self.interval - time.monotonic())):
            tick += 1
            self.sample(tick * self.interval)
        self.sample(time.monotonic() - self.started)

    def sample(self, at: float) -> None:
        counts = self._read()
        if counts is not None:
            self._last = counts - self._base
        self.timeline.rows.append([round(at, 1), self.bound(), sum(self._last.values())])
        self.timeline.by_kind = dict(self._last)


def scraper(api: Any) -> Callable[[], str]:
    """GET the API server's ``/metrics`` with the driver's client (its credentials)."""

    def scrape() -> str:
        m, url, headers, payload, post = api.client.param_serialize(
            "GET", "/metrics", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"])
        raw = api.client.call_api(m, url, headers, payload, post, _request_timeout=(5.0, 10.0)).response
        try:
            data = raw.data
        finally:
            raw.release_conn()
        if int(raw.status) != 200:
            raise RuntimeError(f"GET /metrics: {raw.status}")
        return str(data.decode())

    return scrape
