"""Volumes in a `kubectl get -o yaml` dump: claims and volumes are restored as they are (bound stays
bound, nothing is provisioned again), and a pending pod whose claim is bound goes where its volume
is."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubesched.sim import simulate
from kubesched.testkit.dumps.cluster import ClusterDump


def test_bound_claims_of_a_dump_stay_bound_and_pin_their_pods(tmp_path: Path) -> None:
    dump = ClusterDump()
    for i, zone in enumerate(("zone-a", "zone-b", "zone-b")):
        dump.node(f"node-{i}", cpu="4", zone=zone)
    dump.system_classes()
    dump.storage_class("standard-rwo", default=True)
    running, running_pv = dump.bound_claim("data-db-0", storage_class="standard-rwo", zone="zone-b", node="node-1")
    pending, pending_pv = dump.bound_claim("data-db-1", storage_class="standard-rwo", zone="zone-a", node="node-0")
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}
    pod = dump.pod("db-0", node="node-1", cpu="1")
    pod["spec"]["volumes"].append(volume)
    waiting = dump.pod("db-1", node=None, cpu="1")
    waiting["spec"]["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}})
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(dump.as_list(), sort_keys=False))
    outcome = simulate(path)
    api = outcome.simulation.cluster.api
    assert outcome.result["rejected"] == []
    assert outcome.result["pods"]["default/db-0"]["node"] == "node-1"
    assert outcome.result["pods"]["default/db-1"]["node"] == "node-0"  # the only node in zone-a
    for claim, volume_obj in ((running, running_pv), (pending, pending_pv)):
        restored = api.get("PersistentVolumeClaim", "default", claim["metadata"]["name"])
        assert restored is not None
        assert restored["metadata"]["uid"] == claim["metadata"]["uid"]
        assert restored["spec"]["volumeName"] == volume_obj["metadata"]["name"]
        stored_volume = api.get("PersistentVolume", None, volume_obj["metadata"]["name"])
        assert stored_volume is not None and stored_volume["status"]["phase"] == "Bound"
    assert len(api.list("PersistentVolume")) == 2  # nothing provisioned again
    assert not [e for e in outcome.result["events"] if e["reason"].startswith("Provisioning")]
    # db-1 was already bound: no volume binding in PreBind, bound in its first cycle
    assert [e["time"] for e in outcome.result["events"] if e["reason"] == "Scheduled"
            and e["pod"] == "default/db-1"] == [0.0]
