"""Commands that need an optional extra, run where its modules cannot be imported (as after a plain
`pip install kubesched`): each names the extra to install and exits 2, without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO = EXAMPLES / "demo.yaml"

# every module of every extra made unimportable before kubesched's entry point runs
WITHOUT_EXTRAS = """
import sys

BLOCKED = {"dask", "distributed", "pyarrow", "fastapi", "uvicorn", "jinja2", "kubernetes", "prometheus_client"}


class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocked())
sys.argv = ["kubesched", *sys.argv[1:]]
from kubesched.cli.main import main

main()
"""


def kubesched_without_extras(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": "t"},
                                    "spec": {"base": str(DEMO), "seeds": [1]}}))
    return path


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "kubesched.io/v1alpha1", "kind": "Plan", "metadata": {"name": "t"},
        "spec": {"base": str(DEMO), "nodePool": {"template": "node-6", "min": 1, "max": 3},
                 "goals": ["pending == 0"]}}))
    return path


def test_the_blocker_blocks() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS.replace("main()\n", "import dask\n")],
                          capture_output=True, text=True, timeout=60)
    assert "ModuleNotFoundError: No module named 'dask'" in done.stderr


@pytest.mark.parametrize(("args", "extra", "missing"), [
    (["sweep", "{sweep}"], "sweep", "dask, distributed"),
    (["sweep", "{sweep}", "--workers", "2"], "sweep", "dask, distributed"),
    (["sweep", "{sweep}", "--dask", "tcp://127.0.0.1:1"], "sweep", "dask, distributed"),
    (["sweep", "{sweep}", "--local", "--parquet", "{tmp}/out.parquet"], "sweep", "pyarrow"),
    (["plan", "{plan}"], "sweep", "dask, distributed"),
    (["ui", str(DEMO)], "ui", "fastapi, uvicorn, jinja2"),
    (["run"], "kube", "kubernetes, prometheus_client"),
    (["snapshot", "--kubeconfig", "{tmp}/kubeconfig", "-o", "{tmp}/snap.yaml"], "kube", "kubernetes"),
    (["explain", "--all-pending", "--kubeconfig", "{tmp}/kubeconfig"], "kube", "kubernetes"),
    (["whatif", "--kubeconfig", "{tmp}/kubeconfig", "--enable-preemption"], "kube", "kubernetes"),
    (["sweep", "{sweep}", "--local", "--kubeconfig", "{tmp}/kubeconfig"], "kube", "kubernetes"),
], ids=["sweep", "sweep-workers", "sweep-dask", "sweep-parquet", "plan", "ui", "run", "snapshot",
        "explain-kubeconfig", "whatif-kubeconfig", "sweep-kubeconfig"])
def test_a_command_without_its_extra_names_it(args: list[str], extra: str, missing: str, tmp_path: Path,
                                              sweep_file: Path, plan_file: Path) -> None:
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    argv = [a.format(sweep=sweep_file, plan=plan_file, tmp=tmp_path) for a in args]
    done = kubesched_without_extras(*argv)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"needs the {extra} extra ({missing} not installed): pip install 'kubesched[{extra}]'" in done.stderr


def test_a_sweep_run_here_needs_no_extra(sweep_file: Path) -> None:
    done = kubesched_without_extras("sweep", str(sweep_file), "--local", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert '"kind": "SweepResult"' in done.stdout
