"""Ctrl-C in the middle of a sweep on local Dask workers, as a terminal sends it: SIGINT to the whole
process group. The sweep says what it kept and exits 130, its worker processes are gone, nothing is
half-written, and a rerun with the same directory goes on from there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import yaml

from kubesched.testkit.builders import make_deployment, make_node, make_pod


def _sweep(tmp_path: Path, seeds: int) -> Path:
    objects = [make_node(f"node-{i:03d}", cpu="8") for i in range(40)]
    objects += [make_deployment(f"app-{i}", 40, make_pod(f"app-{i}", cpu="300m")) for i in range(10)]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": "i"},
                                     "spec": {"base": "cluster.yaml", "seeds": {"first": 0, "count": seeds}}}))
    return sweep


def _kubesched(*args: str) -> list[str]:
    return [sys.executable, "-m", "kubesched", *args]


def test_ctrl_c_stops_the_workers_keeps_what_is_done_and_a_rerun_goes_on(tmp_path: Path) -> None:
    sweep, out_dir = _sweep(tmp_path, seeds=16), tmp_path / "out"
    run = subprocess.Popen(_kubesched("sweep", str(sweep), "--workers", "2", "--out", str(out_dir)),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    variants = out_dir / "variants"
    deadline = time.monotonic() + 60
    while len(list(variants.glob("*.json")) if variants.exists() else []) < 2:
        assert time.monotonic() < deadline and run.poll() is None, "no variant finished"
        time.sleep(0.05)
    workers = psutil.Process(run.pid).children(recursive=True)
    assert workers, "no worker process"
    os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 130
    assert f"sweep interrupted: the variants finished so far are kept in {out_dir}; run it again to go on" \
        in stderr.decode()
    assert "Traceback" not in stderr.decode()  # the workers were closed, not interrupted one by one
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"worker processes left running: {alive}"
    kept = {p.name: p.stat().st_mtime_ns for p in variants.iterdir()}
    assert len(kept) < 16 and not any(name.endswith(".partial") for name in kept)

    again = subprocess.run(_kubesched("sweep", str(sweep), "--local", "--out", str(out_dir), "-o", "json"),
                           capture_output=True, check=True)
    document = json.loads(again.stdout)
    assert [v["id"] for v in document["variants"]] == [f"seed={i}" for i in range(16)]
    assert all(v["error"] is None for v in document["variants"])
    after = {p.name: p.stat().st_mtime_ns for p in variants.iterdir()}
    assert all(after[name] == stamp for name, stamp in kept.items())  # those done before were not run again
