"""``kubesched snapshot`` of a big cluster: wall-clock time and peak resident memory of writing it to a
file, in each format, against the fake API server (tests/kube/fakeapi.py).

The fake server runs in a process of its own holding ``--pods`` small pods (``make_pod``, bound to
``--nodes`` nodes), so that its store is not counted. Each measurement runs in a fresh process
(``kubesched snapshot --kubeconfig … -o FILE``, the client's default QPS 50 / burst 100 included) and
reports that process's peak RSS (``ru_maxrss``), next to the peak of a process that only imported
the same modules: the difference is what the snapshot itself costs. ``--in-memory`` adds, for
comparison, reading everything into one list (``take_snapshot``, as ``explain``/``whatif
--kubeconfig`` do) and dumping it as one YAML document with PyYAML's pure-Python dumper.

    python benchmarks/snapshot_stream.py --pods 150000 --nodes 3000 --in-memory
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

from harness import write_kubeconfig

KUBE_TESTS = Path(__file__).resolve().parents[1] / "tests" / "kube"


def _serve(conn: Connection, nodes: int, pods: int) -> None:
    """The fake API server's process."""
    sys.path.insert(0, str(KUBE_TESTS))
    from fakeapi import FakeApiServer

    from kubesched.testkit.builders import make_node, make_pod

    fake = FakeApiServer(bookmark_interval=60.0).start()
    for i in range(nodes):
        fake.create(make_node(f"node-{i}"))
    for i in range(pods):
        pod = make_pod(f"pod-{i}", cpu="10m", namespace="default")
        pod["spec"]["nodeName"] = f"node-{i % max(1, nodes)}"
        pod["status"] = {"phase": "Running"}
        fake.create(pod)
    conn.send(fake.url)
    conn.recv()  # stop
    fake.stop()


def _measure(conn: Connection, mode: str, kubeconfig: str, output: str) -> None:
    """One measurement's process: ``mode`` is idle, yaml, json, jsonl or in-memory."""
    import importlib

    import yaml

    from kubesched.cli.main import cli
    from kubesched.cluster.kube.snapshot import read_snapshot

    for module in ("kubernetes.client", "kubernetes.config"):  # what every mode loads: the idle baseline too
        importlib.import_module(module)
    started = time.perf_counter()
    if mode == "in-memory":
        objects = read_snapshot(kubeconfig).objects
        text = yaml.safe_dump({"apiVersion": "v1", "items": objects, "kind": "List",
                               "metadata": {"resourceVersion": ""}}, sort_keys=False)
        Path(output).write_text(text, encoding="utf-8")
    elif mode != "idle":
        cli.main(["snapshot", "--kubeconfig", kubeconfig, "-o", output, "--format", mode], standalone_mode=False)
    seconds = time.perf_counter() - started
    conn.send((seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def _run(mode: str, kubeconfig: str, output: str) -> tuple[float, float]:
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_measure, args=(child, mode, kubeconfig, output))
    process.start()
    result: tuple[float, float] = parent.recv()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--formats", nargs="*", default=["yaml", "json", "jsonl"])
    parser.add_argument("--in-memory", action="store_true",
                        help="also measure reading everything at once and dumping one YAML document")
    a = parser.parse_args()
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(child, a.nodes, a.pods), daemon=True)
    server.start()
    try:
        url = parent.recv()
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = write_kubeconfig(Path(tmp), url)
            _, idle = _run("idle", str(kubeconfig), "")
            print(f"{a.pods} pods, {a.nodes} nodes; a process that only imported: max RSS {idle:.0f} MiB", flush=True)
            for mode in [*a.formats, *(["in-memory"] if a.in_memory else [])]:
                output = Path(tmp) / f"snap.{'yaml' if mode == 'in-memory' else mode}"
                seconds, rss = _run(mode, str(kubeconfig), str(output))
                size = output.stat().st_size / 2**20
                print(f"snapshot {mode:<9} {seconds:7.1f} s  max RSS {rss:5.0f} MiB (+{rss - idle:.0f})  "
                      f"file {size:.0f} MiB", flush=True)
                output.unlink()
    finally:
        parent.send("stop")
        server.join(10)
        if server.is_alive():
            server.kill()


if __name__ == "__main__":
    main()
