"""kubesched replay --kubeconfig --speed: a history written to an API server (the fake one the kube
backend's tests use) at a multiple of its recorded pace, while kubesched's scheduler runs there
(``kubesched run``'s runner, on a thread) and places the pods; the bindings read back are compared
with the recording. Faults injected on the writes (503, 429 with Retry-After) are retried, not
dropped."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("kubernetes")  # the kube extra
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kube"))

from click.testing import CliRunner  # noqa: E402
from fakeapi import FakeApiServer  # noqa: E402
from fakefaults import Fault  # noqa: E402
from tests.replay.test_replay import Log  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.cluster.kube import ClientOptions, InformerOptions, KubeCluster, load_api_client, wall_clock  # noqa: E402
from kubesched.replay import read_audit_log  # noqa: E402
from kubesched.replay.live import Transport, replay_live  # noqa: E402
from kubesched.scheduler.scheduler import Scheduler  # noqa: E402
from kubesched.serve.runner import RunnerOptions, SchedulerRunner  # noqa: E402

FAST = ClientOptions(qps=0, burst=1, max_attempts=4, retry_initial=0.05, retry_cap=0.2, request_timeout=5.0)


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    yield server
    server.stop()


@pytest.fixture
def scheduler(fake: FakeApiServer, tmp_path: Path) -> Iterator[None]:
    """kubesched's scheduler for the pods of ``default-scheduler`` (the history's), as kubesched run."""
    api = load_api_client(fake.kubeconfig(tmp_path))
    cluster = KubeCluster(api, profiles=["default-scheduler"], identity="replay-test", client_options=FAST,
                          informer_options=InformerOptions(page_size=50, watch_timeout_min=30, backoff_initial=0.05,
                                                           backoff_cap=0.3))
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler"}]}
    runner = SchedulerRunner(cluster, Scheduler(cluster, config, np.random.default_rng(0), wall_clock), None,
                             RunnerOptions(idle_wait=0.05, metrics_period=0.1, sync_timeout=10.0))
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    yield
    runner.request_stop()
    thread.join(10.0)


def history_log(tmp_path: Path) -> Path:
    """Two nodes, three 2-cpu pods that fit only on ``big``; one deleted (2 recorded seconds after its
    creation), one relabelled."""
    log = Log()
    log.node(0.0, "small", cpu="1")
    log.node(0.0, "big", cpu="8")
    for i in range(3):
        log.pod(1.0 + i, f"p{i}", "2")
        log.bind(1.2 + i, f"p{i}", "big")
    log.delete(4.0, "p0")
    log.event(4.5, "patch", "pods", "p1", code=200, level="Request", request={"metadata": {"labels": {"tier": "x"}}})
    log.event(5.0, "patch", "nodes", "small", namespace="", code=200, level="Request",
              request={"spec": {"unschedulable": True}})
    return log.write(tmp_path / "audit.log")


def test_a_live_replay_places_through_the_clusters_scheduler(fake: FakeApiServer, scheduler: None,
                                                             tmp_path: Path) -> None:
    fake.inject(Fault(method="POST", path=r"/pods$", status=503, times=1))
    fake.inject(Fault(method="DELETE", path=r"/pods/p0$", status=429, retry_after=0.1, times=2))
    history = read_audit_log(history_log(tmp_path))
    transport = Transport(load_api_client(fake.kubeconfig(tmp_path)), FAST, user_agent="kubesched/replay")
    doc = replay_live(history, transport=transport, speed=10.0, settle=30.0)
    assert doc["run"]["rejected"] == [] and doc["run"]["missedWrites"] == []
    assert doc["run"]["live"]["retries"] >= 3  # the 503 and the two 429s: retried, not dropped
    pods = {p["pod"]: p for p in doc["pods"]}
    # p1 and p2 stay: the settling waits until they are bound; p0 may be deleted before the
    # scheduler gets to it (a race of the live cluster), and is on big if it was bound
    assert [pods[f"default/p{i}"]["replay"]["node"] for i in (1, 2)] == ["big", "big"]
    assert pods["default/p0"]["replay"]["node"] in ("big", None)
    node = doc["summary"]["agreement"]["node"]
    assert node["agree"] == node["of"] >= 2
    # every write reached the server: the deletion, the label, the cordon
    p0 = fake.get("Pod", "default", "p0")
    assert p0 is None or p0["metadata"].get("deletionTimestamp")
    assert fake.get("Pod", "default", "p1")["metadata"]["labels"] == {"tier": "x"}
    assert fake.get("Node", None, "small")["spec"]["unschedulable"] is True
    assert fake.get("Node", None, "big")["status"]["allocatable"]["cpu"] == "8"


def test_the_command_refuses_speed_without_a_cluster(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["replay", str(history_log(tmp_path)), "--speed", "2"])
    assert result.exit_code == 2
    assert "--speed paces the writes to a real API server: give --kubeconfig FILE too" in result.stderr


def test_the_command_replays_live(fake: FakeApiServer, scheduler: None, tmp_path: Path) -> None:
    kubeconfig = fake.kubeconfig(tmp_path)
    args = ["replay", str(history_log(tmp_path)), "--kubeconfig", kubeconfig, "--speed", "20", "--settle", "30"]
    refused = CliRunner().invoke(cli, [*args, "--disable-preemption"])
    assert refused.exit_code == 2 and "configure it there" in refused.stderr
    result = CliRunner().invoke(cli, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["run"]["live"]["speed"] == 20.0
    pods = {p["pod"]: p for p in doc["pods"]}
    assert pods["default/p1"]["replay"]["node"] == pods["default/p2"]["replay"]["node"] == "big"
    assert "3 pod creations" in result.stderr and doc["run"]["rejected"] == []
