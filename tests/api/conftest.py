"""Make ``src/`` importable when kubesched is not installed in the environment."""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import kubesched  # noqa: F401
except ModuleNotFoundError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
