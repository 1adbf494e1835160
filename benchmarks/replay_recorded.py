"""``kubesched replay`` against an audit log recorded from a real kube-apiserver while kube-scheduler
placed about 2000 pods in waves with preemption, and the replay's streaming over a 1 GB log.

1. **Record**: a fresh etcd, kube-apiserver (audit policy: ``RequestResponse`` for pods,
   ``pods/binding``, ``pods/eviction``, ``pods/status``, nodes, PriorityClasses and
   PodDisruptionBudgets, ``None`` for the rest, and for the driver's own reads; JSON lines, not rotated) and kube-scheduler (default profile,
   preemption on) from the binaries given (``kube_stack.py``). No kube-controller-manager and no
   kubelets: the nodes are objects with their capacity in status (``kube_real.py``'s node objects,
   of sizes that differ node to node), and the pods are **bare pods** (no ReplicaSets: nothing would
   make their pods), all ``terminationGracePeriodSeconds: 0`` so that a preempted pod is gone at once.
   Three waves of PriorityClasses ``wave-low`` (100), ``wave-mid`` (1000) and ``wave-high`` (10000):
   the low wave fills most of the cluster, the later ones do not fit without preempting low pods.
   Each wave is created, then left until every pod is bound or nothing has changed for
   ``--settle`` seconds. Then the scheduler and the API server are stopped and the log kept.
2. **Replay** the log with ``kubesched replay LOG -o json`` (the default configuration, as the
   recording's kube-scheduler) as a subprocess: wall time and peak RSS, and the agreement. Every
   recorded decision is classified by ``replay_oracle.py`` (which node(s) kube-scheduler's default
   scores, or its preemption criteria, made best in the cluster the decision saw): ``unique``,
   ``tie`` (kube-scheduler picked at random among equal nodes) or ``oracle-differs``. Same-node
   agreement is stated raw and over the pods whose decision was ``unique``.
3. **Follow** the recording: ``kubesched replay LOG --follow-recorded -o json`` (the replay's
   cluster follows the recorded bindings, nominations and preemptions; the scheduler under test is
   asked at each recorded decision): wall time, peak RSS, and the per-decision verdicts (same, tie,
   differs) by kind of decision.
4. **Stream**: a synthetic log of ``--big-gb`` GB (the recorded log over and over, each copy's
   times shifted past the previous copy's end and its uids, auditIDs and names made unique) in a
   temporary directory, read by ``read_audit_log`` in a child process (``--big-replay``: replayed
   whole with ``kubesched replay``) and its peak RSS measured.

Usage::

    .venv/bin/python benchmarks/replay_recorded.py [--apiserver PATH] [--scheduler PATH] [--etcd PATH]
        [--keep-log FILE] [--log FILE (skip recording)] [--big-gb 1] [--big-log FILE] [--big-replay] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kube_stack
import replay_oracle
from kube_real import Api, node_object, pod_object

NAMESPACE = "replay-bench"
WAVES = (("wave-low", 100, 900), ("wave-mid", 1000, 600), ("wave-high", 10000, 500))
SRC = Path(__file__).resolve().parents[1] / "src"
POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [
    # the driver's own polling (lists of every pod, once a second) would be most of the log
    {"level": "None", "users": ["bench-admin"], "verbs": ["get", "list", "watch"]},
    {"level": "RequestResponse", "resources": [
        {"group": "", "resources": ["pods", "pods/binding", "pods/eviction", "pods/status", "nodes"]},
        {"group": "scheduling.k8s.io", "resources": ["priorityclasses"]},
        {"group": "policy", "resources": ["poddisruptionbudgets"]}]},
    {"level": "None"}]}


# -- 1. recording --------------------------------------------------------------------------------
def node_sizes(count: int) -> list[tuple[str, int, int]]:
    """(name, cpu millicores, memory MiB): every node a different size, so that scores rarely tie."""
    return [(f"node-{i:02d}", 4000 + 130 * i, 8192 + 320 * ((7 * i) % count)) for i in range(count)]


def wave_pods(cls: str, count: int) -> list[dict[str, Any]]:
    pods = []
    for i in range(count):
        cpu = (100, 125, 150, 175, 200, 250)[(i * 5 + len(cls)) % 6] * (1 if cls == "wave-low" else 0.5)
        mem = (64, 96, 128, 160)[(i * 3) % 4]
        pod = pod_object(f"{cls}-{i:04d}", f"{int(cpu)}m", f"{mem}Mi", priority_class=cls, grace=0)
        pod["metadata"]["namespace"] = NAMESPACE
        pods.append(pod)
    return pods


def settle(api: Api, names: set[str], quiet: float, limit: float) -> dict[str, int]:
    """Wait until every pod of ``names`` is bound or gone, or nothing changed for ``quiet`` s."""
    last, since, start = None, time.monotonic(), time.monotonic()
    while True:
        pods, _ = api.list_all(f"/api/v1/namespaces/{NAMESPACE}/pods")
        mine = [p for p in pods if p["metadata"]["name"] in names]
        bound = sum(1 for p in mine if p["spec"].get("nodeName"))
        now = (bound, len(mine))
        if now != last:
            last, since = now, time.monotonic()
        if bound == len(mine) or time.monotonic() - since > quiet or time.monotonic() - start > limit:
            return {"bound": bound, "pending": len(mine) - bound, "gone": len(names) - len(mine),
                    "seconds": round(time.monotonic() - start, 1)}
        time.sleep(1.0)


def record(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    stack = kube_stack.temporary_stack(apiserver_bin=Path(args.apiserver), scheduler_bin=Path(args.scheduler),
                                       etcd_bin=args.etcd, audit_policy=POLICY)
    info: dict[str, Any] = {"waves": []}
    try:
        stack.start()
        api = Api(str(stack.kubeconfig))
        api.request("POST", "/api/v1/namespaces", ok=(409,),
                    body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", ok=(409,),
                    body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        for cls, value, _ in WAVES:
            api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body={
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": cls},
                "value": value, "preemptionPolicy": "PreemptLowerPriority"})
        sizes = node_sizes(args.nodes)
        for name, cpu, mem in sizes:
            node = node_object(name)
            for part in ("capacity", "allocatable"):
                node["status"][part].update(cpu=f"{cpu}m", memory=f"{mem}Mi", pods="110")
            api.request("POST", "/api/v1/nodes", body=node)
            # admission's not-ready taint, which no node lifecycle controller takes away here
            api.request("PATCH", f"/api/v1/nodes/{name}", body={"spec": {"taints": None}},
                        content_type="application/merge-patch+json")
        info["nodes"] = len(sizes)
        info["cpu"] = sum(c for _, c, _ in sizes)
        for cls, _, count in WAVES:
            pods = wave_pods(cls, round(count * args.pods / 2000))
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda p: api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body=p), pods))
            outcome = settle(api, {p["metadata"]["name"] for p in pods}, args.settle, args.wave_limit)
            info["waves"].append({"class": cls, "pods": len(pods),
                                  "cpu": sum(int(p["spec"]["containers"][0]["resources"]["requests"]["cpu"][:-1])
                                             for p in pods), **outcome})
            print(f"wave {cls}: {info['waves'][-1]}", file=sys.stderr, flush=True)
        time.sleep(2)
        info["scheduler_exit"] = stack.stop("kube-scheduler")
        stack.stop("kube-apiserver")  # flushes the audit log
        shutil.copy(stack.audit_log, out)
    finally:
        kube_stack.remove(stack)
    return info


# -- 2. replay and agreement ----------------------------------------------------------------------
def run_measured(command: list[str], stdout: Path) -> tuple[int, float, int]:
    """(exit code, wall seconds, peak RSS in bytes) of a child process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))
    started = time.monotonic()
    with stdout.open("wb") as out:
        pid = os.posix_spawn(command[0], command, env, file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1)])
        _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), time.monotonic() - started, usage.ru_maxrss * 1024


def replay(log: Path, work: Path) -> tuple[dict[str, Any], float, int]:
    out = work / "replay.json"
    code, seconds, rss = run_measured([sys.executable, "-m", "kubesched", "replay", str(log), "-o", "json"], out)
    if code != 0:
        raise SystemExit(f"kubesched replay exited with {code}")
    return json.loads(out.read_bytes()), seconds, rss


def analyse(log: Path, doc: dict[str, Any]) -> dict[str, Any]:
    events = [json.loads(line) for line in log.open("rb") if line.strip()]
    all_decisions, last = replay_oracle.decisions(events, NAMESPACE)
    verdicts = Counter(f"{d.kind}:{d.verdict}" for d in all_decisions)
    rows = {p["pod"].split("/", 1)[1]: p for p in doc["pods"] if p["pod"].startswith(NAMESPACE + "/")}
    both = {k: p for k, p in rows.items() if p["recorded"]["node"] and p["replay"]["node"]}
    same = {k for k, p in both.items() if p["recorded"]["node"] == p["replay"]["node"]}
    unique = {k for k in both if k in last and last[k].verdict == "unique"}
    differs = []
    for k in sorted(set(both) - same):
        d = last.get(k)
        differs.append({"pod": k, "recorded": both[k]["recorded"]["node"], "replay": both[k]["replay"]["node"],
                        "decision": d.kind if d else None, "verdict": d.verdict if d else None,
                        "best": d.best[:6] if d else None})
    summary = doc["summary"]["agreement"]
    return {
        "pods": len(rows), "decisions": dict(sorted(verdicts.items())),
        "bound_or_not": summary["bound"], "same_node_raw": summary["node"],
        "same_node_unique": {"agree": len(same & unique), "of": len(unique),
                             "rate": round(len(same & unique) / len(unique), 4) if unique else None},
        "differs_by_verdict": dict(Counter(str(d["verdict"]) for d in differs)),
        "differs": differs,
        "recorded": doc["summary"]["recorded"], "replay": doc["summary"]["replay"],
        "history_counts": doc["history"]["counts"],
    }


def follow(log: Path, work: Path) -> dict[str, Any]:
    """``kubesched replay LOG --follow-recorded``: time, memory and the per-decision verdicts."""
    out = work / "follow.json"
    code, seconds, rss = run_measured([sys.executable, "-m", "kubesched", "replay", str(log), "--follow-recorded",
                                       "-o", "json"], out)
    if code != 0:
        raise SystemExit(f"kubesched replay --follow-recorded exited with {code}")
    doc = json.loads(out.read_bytes())
    rows = doc["decisions"]["rows"]
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(rss / 2**20), "summary": doc["decisions"]["summary"],
            "differs": [r for r in rows if r["verdict"] in ("differs", "missing")][:40]}


#: the child that reads a big log (the reader alone: its counts and the number of pods compared)
READ_ONLY = """
import sys, orjson
from kubesched.replay import read_audit_log
history = read_audit_log(sys.argv[1])
sys.stdout.buffer.write(orjson.dumps({"pods": len(history.recorded), "steps": len(history.scenario.steps),
                                      "counts": history.report.counts}))
"""


# -- 4. a big log ---------------------------------------------------------------------------------
def _stamp(text: str, shift: timedelta) -> str:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00")) + shift
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def big_log(source: Path, target: Path, gigabytes: float) -> int:
    """The recorded log repeated until ``gigabytes``: each copy shifted in time past the previous one,
    with its auditIDs, uids and pod/node names suffixed by the copy's number. Returns the copies."""
    lines = [json.loads(line) for line in source.open("rb") if line.strip()]
    stamps = [e["stageTimestamp"] for e in lines]
    first = datetime.fromisoformat(min(stamps).replace("Z", "+00:00"))
    span = datetime.fromisoformat(max(stamps).replace("Z", "+00:00")) - first + timedelta(seconds=10)
    text = "\n".join(json.dumps(e, separators=(",", ":")) for e in lines)
    names = {(e.get("objectRef") or {}).get("name") or "" for e in lines} - {""}
    token = re.compile(r'"(auditID|uid|stageTimestamp|requestReceivedTimestamp)":"([^"]*)"|"([^"]*)"')

    def copy_of(copies: int, shift: timedelta) -> Callable[[re.Match[str]], str]:
        def sub(m: re.Match[str]) -> str:
            key, value, plain = m.group(1), m.group(2), m.group(3)
            if key in ("auditID", "uid"):
                return f'"{key}":"c{copies}-{value}"'
            if key:
                return f'"{key}":"{_stamp(value, shift)}"'
            return f'"{plain}-c{copies}"' if plain in names else m.group(0)
        return sub

    limit, copies, written = int(gigabytes * 1e9), 0, 0
    with target.open("w") as out:
        while written < limit:
            chunk = token.sub(copy_of(copies, span * copies), text) if copies else text
            out.write(chunk + "\n")
            written += len(chunk) + 1
            copies += 1
    return copies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apiserver", default=str(kube_stack.KUBE_BIN / "kube-apiserver"))
    parser.add_argument("--scheduler", default=str(kube_stack.KUBE_BIN / "kube-scheduler"))
    parser.add_argument("--etcd", default=shutil.which("etcd") or "etcd")
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--pods", type=int, default=2000, help="pods over the three waves [2000]")
    parser.add_argument("--settle", type=float, default=8.0, help="a wave is over after this long unchanged [8]")
    parser.add_argument("--wave-limit", type=float, default=300.0)
    parser.add_argument("--log", default="", help="an audit log recorded before: skip the recording")
    parser.add_argument("--keep-log", default="", help="copy the recorded audit log here")
    parser.add_argument("--big-gb", type=float, default=1.0, help="size of the synthetic log [1; 0: none]")
    parser.add_argument("--big-log", default="", help="a big log written before: skip writing one")
    parser.add_argument("--big-replay", action="store_true", help="replay the big log whole, not only read it")
    parser.add_argument("--json", default="", help="write the result here")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="replay-recorded-"))
    result: dict[str, Any] = {}
    try:
        log = Path(args.log) if args.log else work / "audit.log"
        if not args.log:
            result["recording"] = record(args, log)
            if args.keep_log:
                shutil.copy(log, args.keep_log)
        result["log_bytes"] = log.stat().st_size
        doc, seconds, rss = replay(log, work)
        result["replay"] = {"seconds": round(seconds, 2), "peak_rss_mb": round(rss / 2**20)}
        result["agreement"] = analyse(log, doc)
        result["follow"] = follow(log, work)
        print(json.dumps({k: v for k, v in result.items()}, indent=1, default=str)[:6000], file=sys.stderr)
        if args.big_gb > 0 or args.big_log:
            big = Path(args.big_log) if args.big_log else work / "big-audit.log"
            copies = None if args.big_log else big_log(log, big, args.big_gb)
            command = [sys.executable, "-m", "kubesched", "replay", str(big), "-o", "json"] if args.big_replay else \
                [sys.executable, "-c", READ_ONLY, str(big)]
            code, seconds, rss = run_measured(command, work / "big.json")
            result["big"] = {"bytes": big.stat().st_size, "copies": copies, "exit": code, "whole_replay": args.big_replay,
                             "seconds": round(seconds, 1), "peak_rss_mb": round(rss / 2**20)}
            if code == 0:
                big_doc = json.loads((work / "big.json").read_bytes())
                result["big"]["pods"] = big_doc["summary"]["pods"] if args.big_replay else big_doc["pods"]
                result["big"]["counts"] = big_doc["history"]["counts"] if args.big_replay else big_doc["counts"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=1, default=str)
    if args.json:
        Path(args.json).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
