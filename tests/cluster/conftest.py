"""Fixtures for the embedded cluster: a cluster with the system PriorityClasses and the controllers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster_helpers import make_cluster  # noqa: E402

from kubesched.cluster.embedded.cluster import EmbeddedCluster  # noqa: E402


@pytest.fixture
def cluster() -> EmbeddedCluster:
    return make_cluster()
