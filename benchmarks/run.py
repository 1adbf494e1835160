"""Run every benchmark and print one line each: ``python benchmarks/run.py [--quick]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import node_affinity  # noqa: E402
import pod_affinity  # noqa: E402
import preemption_basic  # noqa: E402
import scheduling_basic  # noqa: E402
import topology_spreading  # noqa: E402
import volume_binding  # noqa: E402

KUBE_HINT = "real-cluster backend against the fake API server: python benchmarks/kube_fakeapi.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    quick = parser.parse_args().quick
    if quick:
        print(scheduling_basic.run(500, 100, 1000).line())
        print(node_affinity.run(500, 100, 1000).line())
        print(topology_spreading.run(500, 100, 1000).line())
        print(topology_spreading.run_deployments(500, 100, 1000).line())
        print(pod_affinity.run_anti_affinity(500, 100, 400).line())
        print(pod_affinity.run_affinity(500, 100, 400).line())
        print(preemption_basic.run(100).line())
        print(volume_binding.run_local(500, 500).line())
        print(volume_binding.run_provisioning(500, 500).line())
        return
    print(scheduling_basic.run(5000, 1000, 10000).line(), flush=True)
    print(node_affinity.run(5000, 1000, 1000).line(), flush=True)
    print(topology_spreading.run(5000, 1000, 1000).line(), flush=True)
    print(topology_spreading.run_deployments(5000, 1000, 1000).line(), flush=True)
    print(pod_affinity.run_anti_affinity(5000, 1000, 1000).line(), flush=True)
    print(pod_affinity.run_affinity(5000, 1000, 1000).line(), flush=True)
    print(preemption_basic.run(500).line(), flush=True)
    print(preemption_basic.run(5000).line(), flush=True)
    print(volume_binding.run_local(5000, 1000).line(), flush=True)
    print(volume_binding.run_provisioning(5000, 1000).line(), flush=True)
    print(KUBE_HINT)


if __name__ == "__main__":
    main()
