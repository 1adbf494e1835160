"""What every test area shares: ``src/`` on the path when kubesched is not installed, and a
``simulate`` fixture (areas with other defaults override it in their own conftest)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

try:
    import kubesched  # noqa: F401
except ModuleNotFoundError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kubesched.testkit.runs import ScenarioRun, run_docs  # noqa: E402


@pytest.fixture
def simulate(tmp_path: Path) -> Callable[..., ScenarioRun]:
    """``simulate(*docs, until=None, ...) -> ScenarioRun``: write the documents (dicts or lists of
    dicts) to ``tmp_path`` and simulate them (options as :func:`~kubesched.testkit.runs.run_path`)."""

    def run(*docs: dict[str, Any] | list[dict[str, Any]], **options: Any) -> ScenarioRun:
        return run_docs(tmp_path, docs, **options)

    return run
