"""A sweep on a real Dask cluster: a `dask scheduler` and two `dask worker` processes on loopback,
started here; one worker is killed while the sweep runs. Every variant still finishes exactly once,
with the result it has when run here."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kubesched.testkit.builders import make_deployment, make_node, make_pod

DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
pytestmark = pytest.mark.skipif(DASK is None, reason="needs dask's command line (pip install kubesched[sweep])")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(*args: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(DASK), *args], stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _dask_scheduler(tmp_path: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """A `dask scheduler` process on a free port, and its address."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    return address, _start("scheduler", "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0",
                           log=tmp_path / "scheduler.log")


def _seed_sweep(tmp_path: Path, name: str, seeds: int) -> Path:
    """A sweep of ``seeds`` seeds over a cluster of 60 nodes and 12 Deployments of 60 pods."""
    objects = [make_node(f"node-{i:03d}", cpu="8") for i in range(60)]
    objects += [make_deployment(f"app-{i}", 60, make_pod(f"app-{i}", cpu="300m")) for i in range(12)]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": name},
                                     "spec": {"base": "cluster.yaml", "seeds": {"first": 0, "count": seeds}}}))
    return sweep


def _wait_for_workers(address: str, count: int) -> None:
    from dask.distributed import Client

    with Client(address, timeout=30) as client:
        client.wait_for_workers(count, timeout=60)


def _busy_worker(address: str) -> tuple[str, list[str]]:
    """A worker the scheduler has a variant running on, and that variant's task keys."""
    from dask.distributed import Client

    deadline = time.monotonic() + 60
    with Client(address, timeout=30) as client:
        while time.monotonic() < deadline:
            busy = {w: keys for w, keys in client.processing().items() if keys}
            if busy:
                worker = sorted(busy)[0]
                return worker, [str(k) for k in busy[worker]]
            time.sleep(0.02)
    raise AssertionError("no worker ever ran a variant")


def test_a_worker_killed_mid_sweep_has_its_variants_run_elsewhere_once(tmp_path: Path) -> None:
    sweep = _seed_sweep(tmp_path, "k", 8)
    address, scheduler = _dask_scheduler(tmp_path)
    worker_ports = [_free_port() for _ in range(2)]
    workers = {f"tcp://127.0.0.1:{wp}": _start("worker", address, "--nthreads", "1", "--nworkers", "1",
                                               "--no-dashboard", "--host", "127.0.0.1", "--worker-port", str(wp),
                                               log=tmp_path / f"worker-{wp}.log") for wp in worker_ports}
    out_dir = tmp_path / "out"
    try:
        _wait_for_workers(address, 2)
        run = subprocess.Popen([sys.executable, "-m", "kubesched", "sweep", str(sweep), "--dask", address,
                                "--out", str(out_dir), "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not any((out_dir / "variants").glob("*.json")) if (out_dir / "variants").exists() else True:
            assert time.monotonic() < deadline and run.poll() is None, "no variant finished"
            time.sleep(0.05)
        # mid-sweep: one variant done, and one running on the worker killed
        victim, lost = _busy_worker(address)
        _stop(workers[victim])
        assert run.poll() is None, "the sweep ended before the worker was killed"
        stdout, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr.decode()
    finally:
        for process in [*workers.values(), scheduler]:
            _stop(process)
    assert "Remove worker" in (tmp_path / "scheduler.log").read_text()
    document = json.loads(stdout)
    ids = [v["id"] for v in document["variants"]]
    assert ids == [f"seed={i}" for i in range(8)] and all(v["error"] is None for v in document["variants"])
    assert any(key.endswith(f"-{v}") for key in lost for v in ids)  # what was running there finished elsewhere
    # each variant once, and its result the one an in-process run gives, byte for byte
    assert sorted(p.name for p in (out_dir / "results").iterdir()) == sorted(f"{i}.json" for i in ids)
    subprocess.run([sys.executable, "-m", "kubesched", "sweep", str(sweep), "--local", "--out", str(tmp_path / "here")],
                   capture_output=True, check=True)
    for name in ids:
        assert (out_dir / "results" / f"{name}.json").read_bytes() == \
            (tmp_path / "here" / "results" / f"{name}.json").read_bytes(), name


def _worker_pid(address: str) -> int:
    """The process id of the one worker of the cluster (a child of its nanny)."""
    from dask.distributed import Client

    with Client(address, timeout=30) as client:
        client.wait_for_workers(1, timeout=60)
        pids = list(client.run(os.getpid).values())
    assert len(pids) == 1
    return int(pids[0])


def test_the_base_survives_the_restart_of_a_cluster_s_only_worker(tmp_path: Path) -> None:
    """The base and the sweep were on the one worker only: killed mid-sweep, its nanny starts a new
    worker, and the variants left still run there (the base is sent again), none failing."""
    sweep = _seed_sweep(tmp_path, "r", 6)
    address, scheduler = _dask_scheduler(tmp_path)
    # with its nanny (the default): a worker process that dies is started again
    worker = _start("worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1",
                    log=tmp_path / "worker.log")
    out_dir = tmp_path / "out"
    try:
        _wait_for_workers(address, 1)
        first_pid = _worker_pid(address)
        run = subprocess.Popen([sys.executable, "-m", "kubesched", "sweep", str(sweep), "--dask", address,
                                "--out", str(out_dir), "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not any((out_dir / "variants").glob("*.json")) if (out_dir / "variants").exists() else True:
            assert time.monotonic() < deadline and run.poll() is None, "no variant finished"
            time.sleep(0.05)
        os.kill(first_pid, signal.SIGKILL)  # mid-sweep: one variant done, the others queued on it
        assert run.poll() is None, "the sweep ended before the worker was killed"
        stdout, stderr = run.communicate(timeout=300)
        second_pid = _worker_pid(address)
    finally:
        for process in (worker, scheduler):
            _stop(process)
    assert second_pid != first_pid  # the nanny's new worker ran the rest
    document = json.loads(stdout)
    assert [(v["id"], v["error"]) for v in document["variants"]] == [(f"seed={i}", None) for i in range(6)]
    assert run.returncode == 0, stderr.decode()
    assert sorted(p.name for p in (out_dir / "results").iterdir()) == sorted(f"seed={i}.json" for i in range(6))


def test_a_sweep_over_a_recorded_history_runs_on_real_dask_workers_as_here(tmp_path: Path) -> None:
    """A history base (the openb excerpt) sent to `dask worker` processes: each variant replays it
    there, with the records and ReplayResults an in-process run gives, byte for byte."""
    shutil.copytree(Path(__file__).resolve().parents[1] / "replay" / "data" / "openb", tmp_path / "openb")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": "h"},
                                     "spec": {"base": {"history": "openb"}, "seeds": [0, 1],
                                              "changes": {"as-is": {}, "off": {"disablePreemption": True}}}}))
    address, scheduler = _dask_scheduler(tmp_path)
    worker = _start("worker", address, "--nthreads", "1", "--nworkers", "2", "--no-dashboard", "--host", "127.0.0.1",
                    log=tmp_path / "worker.log")
    try:
        _wait_for_workers(address, 2)
        run = subprocess.run([sys.executable, "-m", "kubesched", "sweep", str(sweep), "--dask", address,
                              "--out", str(tmp_path / "there"), "-o", "json"], capture_output=True, timeout=600)
        assert run.returncode == 0, run.stderr.decode()
    finally:
        for process in (worker, scheduler):
            _stop(process)
    there = json.loads(run.stdout)
    assert [v["id"] for v in there["variants"]] == ["change=as-is,seed=0", "change=as-is,seed=1",
                                                    "change=off,seed=0", "change=off,seed=1"]
    here = subprocess.run([sys.executable, "-m", "kubesched", "sweep", str(sweep), "--local", "--out",
                           str(tmp_path / "here"), "-o", "json"], capture_output=True, check=True)
    assert [v["metrics"] for v in json.loads(here.stdout)["variants"]] == [v["metrics"] for v in there["variants"]]
    assert all("gpuAllocationCurve" in v["metrics"] for v in there["variants"])
    for v in there["variants"]:
        name = f"{v['id']}.json"
        assert (tmp_path / "there" / "results" / name).read_bytes() == (tmp_path / "here" / "results" / name).read_bytes()
