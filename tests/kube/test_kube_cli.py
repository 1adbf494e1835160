"""``kubesched run`` as a process: it schedules, serves /metrics, /healthz and /readyz, logs JSON,
and on SIGTERM finishes, releases its Lease and exits 0."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from fakeapi import FakeApiServer

from conftest import node_of, pod, wait_for
from kubesched.cluster.kube import wall_clock
from kubesched.cluster.kube.events import micro_time
from kubesched.testkit.builders import make_node


@contextmanager
def _kubesched_run(fake: FakeApiServer, tmp_path: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``kubesched run`` against the fake API server as a process of its own, killed on the way out
    if the test left it running (a failed assertion)."""
    proc = subprocess.Popen([sys.executable, "-m", "kubesched", "run", "--kubeconfig", fake.kubeconfig(tmp_path),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


pytestmark = pytest.mark.timeout(60)

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": True, "resourceName": "kubesched", "resourceNamespace": "kube-system",
                       "leaseDuration": "3s", "renewDeadline": "2s", "retryPeriod": "500ms"},
    "clientConnection": {"qps": 200, "burst": 400},
    "profiles": [{"schedulerName": "kubesched"}],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


def test_run_schedules_serves_probes_and_stops_cleanly_on_sigterm(fake: FakeApiServer, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    fake.create(make_node("n1"))
    fake.create(pod("p0"))
    with _kubesched_run(fake, tmp_path, "--config", str(config), "--bind-address", "127.0.0.1", "--port", str(port),
                        "--identity", "cli-replica") as proc:
        wait_for(lambda: http_get(port, "/readyz")[0] == 200, timeout=30, what="/readyz")
        assert http_get(port, "/healthz") == (200, "ok\n")
        fake.create(pod("p1"))
        wait_for(lambda: node_of(fake, "p0") == "n1" and node_of(fake, "p1") == "n1", what="pods bound")
        wait_for(lambda: 'result="scheduled"} 2' in http_get(port, "/metrics")[1], what="metrics")
        metrics = http_get(port, "/metrics")[1]
        assert 'scheduler_schedule_attempts_total{profile="kubesched",result="scheduled"} 2' in metrics
        assert 'scheduler_pending_pods{queue="active"} 0' in metrics
        assert 'leader_election_master_status{name="kubesched"} 1' in metrics
        lease = fake.get("Lease", "kube-system", "kubesched")
        assert lease is not None and lease["spec"]["holderIdentity"] == "cli-replica"
        assert lease["spec"]["leaseDurationSeconds"] == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    lease = fake.get("Lease", "kube-system", "kubesched")
    assert lease is not None and lease["spec"]["holderIdentity"] == ""
    assert proc.stderr is not None
    lines = [json.loads(line) for line in proc.stderr.read().splitlines() if line.startswith("{")]
    messages = [entry["msg"] for entry in lines]
    assert "successfully acquired lease" in messages and "released leader lease" in messages
    assert any(entry["msg"] == "scheduler stopped" and entry["reason"] == "stopped" for entry in lines)


def test_run_beside_the_default_scheduler_elects_its_leader_on_a_lease_of_its_own(
        fake: FakeApiServer, tmp_path: Path) -> None:
    """The README's set-up: kubesched beside a running default scheduler, which holds (and keeps
    renewing) kube-system/kube-scheduler. Without --lease-name or leaderElection.resourceName,
    kubesched takes kube-system/kubesched and schedules; it does not wait for the other's Lease."""
    now = micro_time(wall_clock())
    fake.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
                 "spec": {"holderIdentity": "control-plane-1_0c6b3f0e-8d1c-4b4e-9d43-6c1f0b4f8a27",
                          "leaseDurationSeconds": 3600, "acquireTime": now, "renewTime": now,
                          "leaseTransitions": 0}})
    election = {k: v for k, v in CONFIG["leaderElection"].items() if k != "resourceName"}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "leaderElection": election}))
    fake.create(make_node("n1"))
    fake.create(pod("p0"))
    with _kubesched_run(fake, tmp_path, "--config", str(config), "--port", "0", "--identity", "beside") as proc:
        wait_for(lambda: node_of(fake, "p0") == "n1", timeout=30, what="p0 bound by kubesched")
        lease = fake.get("Lease", "kube-system", "kubesched")
        assert lease is not None and lease["spec"]["holderIdentity"] == "beside"
        other = fake.get("Lease", "kube-system", "kube-scheduler")
        assert other is not None and other["spec"]["holderIdentity"].startswith("control-plane-1_")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0


def test_run_refuses_an_invalid_configuration(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}))
    result = subprocess.run([sys.executable, "-m", "kubesched", "run", "--config", str(config)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert f"{config}: document 1 (KubeSchedulerConfiguration): profiles[1].schedulerName: duplicate profile 'a'" \
        in result.stderr


def test_informers_that_cannot_sync_make_it_unready_not_unhealthy(fake: FakeApiServer, tmp_path: Path) -> None:
    """An API server that cannot serve the node list (503 every time): /readyz fails, /healthz stays
    ok (no restart loop), and each retried request is logged with its method, path and cause."""
    from fakefaults import Fault

    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "leaderElection": {"leaderElect": False}}))
    port = free_port()
    fake.inject(Fault(method="GET", path="/api/v1/nodes", status=503, times=-1))
    with _kubesched_run(fake, tmp_path, "--config", str(config), "--bind-address", "127.0.0.1",
                        "--port", str(port)) as proc:
        wait_for(lambda: http_get(port, "/healthz")[0] != 0, timeout=30, what="the probe server")
        assert http_get(port, "/readyz")[0] == 500
        assert http_get(port, "/healthz") == (200, "ok\n")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert proc.stderr is not None
    retries = [json.loads(line) for line in proc.stderr.read().splitlines()
               if line.startswith("{") and "retrying" in line]
    assert retries and retries[0]["msg"].startswith("retrying GET /api/v1/nodes in ")
    assert "HTTP 503" in retries[0]["msg"]
