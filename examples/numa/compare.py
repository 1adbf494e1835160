"""Run the NUMA examples in their variants and print the numbers docs/topology.md quotes.

    .venv/bin/python examples/numa/compare.py

1. The failure loop: default-scheduler.yaml vs numa-aware-scheduler.yaml (TopologyAffinityError
   rejections, pods the ReplicaSet had to create, when the last replica started).
2. Stale topology data: stale-topology.yaml with the default profile, the plugin without and with
   its reservation-aware view, and the exporter polling at several intervals or watching.
"""

from __future__ import annotations

import copy
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from kubesched.sim import simulate

HERE = Path(__file__).resolve().parent
Obj = dict[str, Any]


def measure(result: Obj) -> Obj:
    created: dict[str, float] = {}
    started: dict[str, float] = {}
    for e in result["events"]:
        if e["reason"] == "Created":
            created.setdefault(e["pod"], e["time"])
        elif e["reason"] == "Started":
            started.setdefault(e["pod"], e["time"])
    waits = [started[p] - created[p] for p in started if p in created]
    topology = result["cluster"]["topology"]
    return {
        "rejections": sum(1 for e in result["events"] if e["reason"] == "TopologyAffinityError"),
        "created": len(created),
        "started": len(waits),
        "pending": sum(1 for p in result["pods"].values() if p["phase"] == "Pending"),
        "mean_wait": statistics.mean(waits) if waits else 0.0,
        "max_wait": max(waits) if waits else 0.0,
        "last_start": max(started.values()) if started else 0.0,
        "writes": topology["exporter"]["updates"],
        "lists": topology["exporter"]["listCalls"],
    }


def run_docs(docs: list[Obj]) -> Obj:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scenario.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return measure(simulate(str(path)).result)


def variant(docs: list[Obj], *, plugin: bool = True, args: Obj | None = None, exporter: Obj | None = None) -> list[Obj]:
    docs = copy.deepcopy(docs)
    spec = docs[0]["spec"]
    if not plugin:
        del spec["schedulerConfiguration"]
    else:
        spec["schedulerConfiguration"]["profiles"][0]["pluginConfig"][0]["args"] = args or {}
    if exporter is not None:
        spec["cluster"]["topology"]["exporter"] = exporter
    return docs


def failure_loop() -> None:
    print("## The failure loop (6 GPU nodes, a 3-replica Deployment)\n")
    print("| profile | TopologyAffinityError | trainer pods created | last replica started |")
    print("|---|---:|---:|---:|")
    for name in ("default-scheduler", "numa-aware-scheduler"):
        m = measure(simulate(str(HERE / f"{name}.yaml")).result)
        print(f"| {name} | {m['rejections']} | {m['created'] - 12} | {m['last_start']:g} s |")
    print()


STALE_VARIANTS: list[tuple[str, Obj]] = [
    ("default profile", {"plugin": False}),
    ("plugin, no cache, Watch", {"exporter": {"mode": "Watch"}}),
    ("plugin, no cache, Poll 10s", {"exporter": {"mode": "Poll", "interval": "10s"}}),
    ("plugin, no cache, Poll 30s", {"exporter": {"mode": "Poll", "interval": "30s"}}),
    ("plugin, no cache, Poll 60s", {"exporter": {"mode": "Poll", "interval": "60s"}}),
    ("plugin, cacheResyncPeriodSeconds 5, Watch",
     {"args": {"cacheResyncPeriodSeconds": 5}, "exporter": {"mode": "Watch"}}),
    ("plugin, cacheResyncPeriodSeconds 5, Poll 30s",
     {"args": {"cacheResyncPeriodSeconds": 5}, "exporter": {"mode": "Poll", "interval": "30s"}}),
    ("plugin, cacheResyncMode OnUpdate, Watch",
     {"args": {"cacheResyncMode": "OnUpdate"}, "exporter": {"mode": "Watch"}}),
    ("plugin, cacheResyncMode OnUpdate, Poll 30s",
     {"args": {"cacheResyncMode": "OnUpdate"}, "exporter": {"mode": "Poll", "interval": "30s"}}),
]


def stale_topology() -> None:
    docs = list(yaml.safe_load_all((HERE / "stale-topology.yaml").read_text()))
    print("## Stale topology data (20 pods of 5 CPUs, one every 4 s, 20 s each, 10 min)\n")
    print("| variant | TopologyAffinityError | started | pending at end | mean / max wait | NRT writes | List calls |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, kwargs in STALE_VARIANTS:
        m = run_docs(variant(docs, **kwargs))
        print(f"| {name} | {m['rejections']} | {m['started']} | {m['pending']} | "
              f"{m['mean_wait']:.1f} / {m['max_wait']:g} s | {m['writes']} | {m['lists']} |")
    print()


def main() -> int:
    failure_loop()
    stale_topology()
    return 0


if __name__ == "__main__":
    sys.exit(main())
