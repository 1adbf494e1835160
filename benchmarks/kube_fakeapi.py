"""kubesched run's real-cluster path against the fake API server (tests/kube/fakeapi.py): pods/s
with the client at kube-scheduler's default QPS 50 / burst 100, and with the limit raised.

Everything real-mode is in the loop: informers (list + watch over HTTP), the scheduling thread,
``pods/binding`` POSTs through the official client's transport, events sent in the background.
The fake server runs in a process of its own (as an API server would), so it does not compete for
the scheduler's GIL. Pods are created straight into its store once the scheduler is ready; the
clock stops when the last one is bound.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
from harness import Measurement, write_kubeconfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kube"))

from fakeapi import FakeApiServer  # noqa: E402

from kubesched.cluster.kube import (  # noqa: E402
    ClientOptions,
    KubeCluster,
    load_api_client,
    wall_clock,
)
from kubesched.scheduler.scheduler import Scheduler  # noqa: E402
from kubesched.serve.runner import RunnerOptions, SchedulerRunner  # noqa: E402
from kubesched.testkit.builders import make_node, make_pod  # noqa: E402

PROFILE = "kubesched"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": PROFILE}]}


def _serve(conn: Connection, nodes: int, pods: int) -> None:
    """The fake API server's own process (so that it does not share the scheduler's GIL)."""
    fake = FakeApiServer(bookmark_interval=5.0).start()
    for i in range(nodes):
        fake.create(make_node(f"node-{i}"))
    conn.send(fake.url)
    while True:
        command = conn.recv()
        if command == "create":
            for i in range(pods):
                spec = make_pod(f"pod-{i}")
                spec["spec"]["schedulerName"] = PROFILE
                fake.create(spec)
            conn.send(time.perf_counter())
        elif command == "bound":
            conn.send(sum(1 for p in fake.list("Pod") if p["spec"].get("nodeName")))
        else:
            fake.stop()
            conn.send("bye")
            return


def run(nodes: int = 100, pods: int = 1000, qps: float = 50.0, burst: int = 100) -> Measurement:
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(child, nodes, pods), daemon=True)
    server.start()
    try:
        url = parent.recv()
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = write_kubeconfig(Path(tmp), url)
            cluster = KubeCluster(load_api_client(str(kubeconfig)), profiles=[PROFILE], identity="bench",
                                  client_options=ClientOptions(qps=qps, burst=burst))
        scheduler = Scheduler(cluster, CONFIG, np.random.default_rng(0), wall_clock)
        runner = SchedulerRunner(cluster, scheduler, None, RunnerOptions(idle_wait=0.01))
        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        while not runner.ready():
            time.sleep(0.01)
        start = time.perf_counter()
        parent.send("create")
        parent.recv()
        while True:
            parent.send("bound")
            if parent.recv() >= pods:
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - start
        runner.request_stop()
        thread.join(30)
        parent.send("stop")
        parent.recv()
    finally:
        server.join(5)
        if server.is_alive():
            server.kill()
    label = f"QPS{qps:g}" if qps > 0 else "unlimited"
    return Measurement(f"KubeFakeAPI/{label}/{nodes}Nodes_{pods}Pods", pods, seconds, 0.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--qps", type=float, nargs="*", default=[50.0, 1000.0],
                        help="client QPS values to measure (burst = 2 x QPS); 0 = no limit")
    a = parser.parse_args()
    for value in a.qps:
        print(run(a.nodes, a.pods, value, max(1, int(2 * value))).line(), flush=True)
