"""The PersistentVolume controller searches an Immediate claim that found no volume again only among
the volumes created, changed or deleted since: whole simulations must equal those where every
search reads every volume, with claims waiting for volumes that come later, pre-bound volumes,
selectors, classes, sizes, deletions and pods releasing their claims."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.volumes.claims import find_matching_volume
from kubesched.cluster.embedded.controllers.persistentvolume import VOLUME, PersistentVolumeController
from kubesched.k8s.objects import key_of
from kubesched.testkit.builders import make_node, make_pod, make_pv, make_pvc, make_storage_class, with_claims
from kubesched.testkit.runs import explained_json, run_path
from kubesched.testkit.scenarios import (
    create_step,
    delete_step,
    patch_step,
    scenario_document,
    write_scenario,
)

Obj = dict[str, Any]
SIZES = ["1Gi", "2Gi", "5Gi", "10Gi"]


def scenario() -> list[Obj]:
    """Forty claims of two Immediate classes (some with a label selector, some pre-bound to a
    volume that comes later) created first, then volumes arriving over a minute — too few, some of
    the wrong class or too small — some deleted; pods use some claims and are deleted, their
    volumes (Retain) stay bound; volumes relabelled and claims shrunk on the way (neither makes the
    controller search the waiting claims again by itself); one class has no volumes at all."""
    objects: list[Obj] = [
        make_node("n1", cpu="64"),
        make_storage_class("manual", "kubernetes.io/no-provisioner", wait=False),
        make_storage_class("other", "kubernetes.io/no-provisioner", wait=False),
        make_storage_class("empty", "kubernetes.io/no-provisioner", wait=False),
    ]
    steps: list[Obj] = []
    for i in range(40):
        spec: Obj = {}
        if i % 6 == 0:
            spec["selector"] = {"matchLabels": {"tier": "gold"}}
        claim = make_pvc(f"c{i:02d}", SIZES[i % 4], storage_class=["manual", "other", "empty"][i % 3], **spec)
        if i % 10 == 7:
            claim["spec"]["volumeName"] = f"v{i:02d}"
        objects.append(claim)
    for i in range(60):
        labels = {"tier": "gold"} if i % 5 == 0 else None
        volume = make_pv(f"v{i:02d}", SIZES[(i * 3) % 4], storage_class=["manual", "other"][i % 2], labels=labels,
                         persistentVolumeReclaimPolicy="Retain")
        steps.append(create_step(f"{i}s", volume))
        if i % 11 == 3:
            steps.append(delete_step(f"{i + 2}s", "PersistentVolume", f"v{i - 3:02d}"))
    for i in range(2, 60, 7):  # relabelled: the claims with a selector may now take them
        steps.append(patch_step(f"{i + 1}s", "PersistentVolume", f"v{i:02d}", {"metadata": {"labels": {"tier": "gold"}}}))
    for i in range(1, 40, 9):  # asks for less: smaller volumes may now do
        steps.append(patch_step(f"{i + 5}s", "PersistentVolumeClaim", f"c{i:02d}",
                                {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}))
    for i in range(0, 40, 4):
        pod = with_claims(make_pod(f"p{i}", "100m", "64Mi"), f"c{i:02d}")
        steps.append(create_step(f"{10 + i}s", pod))
        steps.append(delete_step(f"{20 + i}s", "Pod", f"p{i}"))
    return [scenario_document(steps=steps, until="2m"), *objects]


def test_searching_only_changed_volumes_decides_as_searching_all(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_scenario(tmp_path, scenario())
    searches = itertools.count()
    narrowed = itertools.count()
    search = PersistentVolumeController._search_immediate

    def counted(self: PersistentVolumeController, claim: Obj) -> Obj | None:
        next(searches)
        if key_of(claim) in self._unmatched:
            next(narrowed)
        return search(self, claim)

    monkeypatch.setattr(PersistentVolumeController, "_search_immediate", counted)
    fast = explained_json(path)
    run = run_path(path)
    bound = [c for c in run.sim.cluster.api.list("PersistentVolumeClaim") if c["spec"].get("volumeName")]
    assert 10 <= len(bound) < 40  # some claims got a volume that came after them, some never did
    assert next(narrowed) > 100  # claims waiting for volumes were searched again, narrowed

    def every_volume(self: PersistentVolumeController, claim: Obj) -> Obj | None:
        return find_matching_volume(claim, sorted(self.api.list(VOLUME), key=key_of), None, {}, False)

    monkeypatch.setattr(PersistentVolumeController, "_search_immediate", every_volume)
    assert explained_json(path) == fast


def test_a_waiting_claim_is_searched_anew_once_it_changes(tmp_path: Path) -> None:
    """A claim too big for the only volume waits; asking for less (a patched claim) makes it take
    that volume, which did not change meanwhile; a claim waiting for a volume takes it when it comes."""
    docs = [
        scenario_document(steps=[
            create_step("1s", make_pvc("big", "10Gi", storage_class="manual")),
            create_step("2s", make_pvc("later", "5Gi", storage_class="manual")),
            patch_step("5s", "PersistentVolumeClaim", "big", {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}),
            create_step("8s", make_pv("v-new", "5Gi", storage_class="manual")),
        ], until="20s"),
        make_node("n1"),
        make_storage_class("manual", "kubernetes.io/no-provisioner", wait=False),
        make_pv("v-small", "2Gi", storage_class="manual"),
    ]
    api = run_path(write_scenario(tmp_path, docs)).sim.cluster.api
    assert api.get("PersistentVolumeClaim", "default", "big")["spec"]["volumeName"] == "v-small"  # type: ignore[index]
    assert api.get("PersistentVolumeClaim", "default", "later")["spec"]["volumeName"] == "v-new"  # type: ignore[index]
