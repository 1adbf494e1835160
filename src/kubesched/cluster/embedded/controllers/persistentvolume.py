"""The PersistentVolume controller and the external provisioners, as the embedded cluster runs them
(upstream ``pkg/controller/volume/persistentvolume`` and ``sig-storage-lib-external-provisioner``).

**Claims** (synced on any change of a claim, a volume or a StorageClass):

- a claim without ``spec.volumeName`` looks for the best volume
  (:func:`~kubesched.api.volumes.claims.find_matching_volume` without a node: a volume pre-bound to it, else
  the smallest Available one of its class that fits — not for ``WaitForFirstConsumer`` classes,
  whose claims the scheduler matches). Found: both are bound. Not found:

  - ``WaitForFirstConsumer`` and no ``volume.kubernetes.io/selected-node`` yet: it waits (event
    ``WaitForFirstConsumer``);
  - a class with a provisioner (not ``kubernetes.io/no-provisioner``): the claim is annotated
    ``volume.kubernetes.io/storage-provisioner`` and the provisioner asked (event
    ``ExternalProvisioning``), see below;
  - otherwise it stays Pending (event ``FailedBinding``);
- a claim naming a volume binds to it when the volume is free or already reserved for it;
- a bound claim whose volume is gone becomes ``Lost``.

**Binding** writes the volume (``claimRef``, ``pv.kubernetes.io/bound-by-controller`` when the
controller chose it, phase Bound) and then the claim (``spec.volumeName``,
``pv.kubernetes.io/bind-completed``, phase Bound, the volume's access modes and capacity).

**Volumes**: one without a claimRef is ``Available``; one whose claim is gone is ``Released`` and, with
the ``Delete`` reclaim policy, deleted.

**Provisioning** (per StorageClass provisioner, ``spec.cluster.storage`` sets delay, failures and
topology): after the delay a volume ``pvc-<claim uid>`` is created, pre-bound to the claim, with the
claim's size, access modes and volume mode, the class's reclaim policy, a CSI source of the
provisioner and — for a claim with a selected node — node affinity on that node's values of the
driver's topology keys (the node's CSINode ``topologyKeys``, else the configured ones); for an
immediate claim of a class with ``allowedTopologies`` one allowed value per key (seeded). A failure
records ``ProvisioningFailed``; a delayed-binding claim then loses its selected node (the scheduler
tries again), an immediate one is retried after the delay.

Not modelled: the claim-protection finalizers (a claim in use is deleted at once), volume expansion,
recycling, and in-tree (non-CSI) provisioners' own behaviour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesched.api.cluster_settings.storage import ProvisionerSettings, StorageSettings, parse_config
from kubesched.api.volumes.claims import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
    class_binding_mode,
    find_matching_volume,
    is_volume_bound_to_claim,
)
from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.k8s.objects import ApiError, Obj, key_of, split_key

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster
    from kubesched.cluster.embedded.controllers.index import PodIndex

CLAIM = "PersistentVolumeClaim"
VOLUME = "PersistentVolume"
#: the store's index of volumes by their claimRef's (namespace, name)
BY_CLAIM_REF = "claimRef"


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _claim_ref(volume: Obj) -> list[tuple[Any, Any]]:
    """What :data:`BY_CLAIM_REF` files a volume under: its claimRef's (namespace, name), if any."""
    ref = (volume.get("spec") or {}).get("claimRef")
    return [(ref.get("namespace"), ref.get("name"))] if ref else []


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("annotations") or {})


def _with(obj: Obj, *, annotations: dict[str, str] | None = None, spec: dict[str, Any] | None = None,
          status: dict[str, Any] | None = None) -> Obj:
    out = dict(obj)
    if annotations is not None:
        out["metadata"] = {**_meta(obj), "annotations": annotations}
    if spec is not None:
        out["spec"] = {**(obj.get("spec") or {}), **spec}
    if status is not None:
        out["status"] = {**(obj.get("status") or {}), **status}
    return out


class PersistentVolumeController(Controller):
    """Level-triggered on keys ``claim:<namespace>/<name>`` and ``volume:<name>``."""

    kind = CLAIM

    def __init__(self, cluster: EmbeddedCluster, index: PodIndex) -> None:
        self.settings: StorageSettings = parse_config(cluster.settings.get("storage"))
        self._provisioning: set[str] = set()  # claim uids with a provisioning under way
        self._noted: set[tuple[str, str, str]] = set()  # (claim uid, reason, message) of waiting events
        self._held: dict[str, None] = {}  # keys seen while a snapshot is being restored
        #: Immediate claims whose last search found no volume: claim key -> (the claim's
        #: resourceVersion then, the volume journal's mark taken before that search)
        self._unmatched: dict[str, tuple[Any, int]] = {}
        super().__init__(cluster, index)
        self.api.add_index(VOLUME, BY_CLAIM_REF, _claim_ref)

    def start(self) -> None:
        for volume in sorted(self.api.list(VOLUME), key=key_of):
            self.enqueue(f"volume:{key_of(volume)}")
        for claim in sorted(self.api.list(CLAIM), key=key_of):
            self.enqueue(f"claim:{key_of(claim)}")

    def enqueue(self, key: str) -> None:
        """While a snapshot is restored, keys wait (a volume and its claim arrive one after the
        other: neither may be judged alone); :meth:`after_restore` syncs them."""
        if self.cluster.restoring:
            self._held[key] = None
            return
        super().enqueue(key)

    def after_restore(self) -> None:
        held, self._held = list(self._held), {}
        self.enqueue_all(held)

    # -- events ----------------------------------------------------------------------------------
    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        if kind == CLAIM:
            self.enqueue(f"claim:{key_of(new)}")
        elif kind == VOLUME:
            self.enqueue(f"volume:{key_of(new)}")
            ref = (new.get("spec") or {}).get("claimRef")
            if ref:
                self.enqueue(f"claim:{ref.get('namespace')}/{ref.get('name')}")
            elif old is None:
                self._resync_unbound_claims()
        elif kind == "StorageClass" and old is None:
            self._resync_unbound_claims()

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == CLAIM:
            self._unmatched.pop(key_of(obj), None)
            ref_volume = (obj.get("spec") or {}).get("volumeName")
            if ref_volume:
                self.enqueue(f"volume:{ref_volume}")
        elif kind == VOLUME:
            ref = (obj.get("spec") or {}).get("claimRef")
            if ref:
                self.enqueue(f"claim:{ref.get('namespace')}/{ref.get('name')}")

    def _resync_unbound_claims(self) -> None:
        for claim in sorted(self.api.list(CLAIM), key=key_of):
            if not (claim.get("spec") or {}).get("volumeName"):
                self.enqueue(f"claim:{key_of(claim)}")

    def sync(self, key: str) -> None:
        what, _, rest = key.partition(":")
        if what == "claim":
            ns, name = split_key(rest)
            claim = self.api.get(CLAIM, ns, name)
            if claim is not None:
                self._sync_claim(claim)
        else:
            volume = self.api.get(VOLUME, None, rest)
            if volume is not None:
                self._sync_volume(volume)

    # -- claims ----------------------------------------------------------------------------------
    def _sync_claim(self, claim: Obj) -> None:
        if ANN_BIND_COMPLETED in _annotations(claim):
            self._sync_bound_claim(claim)
            return
        volume_name = (claim.get("spec") or {}).get("volumeName")
        if volume_name:
            volume = self.api.get(VOLUME, None, volume_name)
            if volume is None:
                self._record(claim, "FailedBinding", f'volume "{volume_name}" not found', once=True)
                return
            ref = (volume.get("spec") or {}).get("claimRef")
            if ref is None or is_volume_bound_to_claim(volume, claim):
                self._bind(volume, claim)
            return
        storage_class = self._class_of(claim)
        delayed = class_binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER
        if delayed:  # without a node only a volume reserved for the claim may be taken
            ref = (_meta(claim).get("namespace"), _meta(claim)["name"])
            volumes = sorted(self.api.by_index(VOLUME, BY_CLAIM_REF, ref), key=key_of)
            volume = find_matching_volume(claim, volumes, None, {}, delayed)
        else:
            volume = self._search_immediate(claim)
        if volume is not None:
            self._bind(volume, claim)
            return
        selected = _annotations(claim).get(ANN_SELECTED_NODE)
        if delayed and selected is None:
            self._record(claim, "WaitForFirstConsumer", "waiting for first consumer to be created before binding",
                         once=True)
            return
        provisioner = (storage_class or {}).get("provisioner") or ""
        if storage_class is not None and provisioner and provisioner != NOT_SUPPORTED_PROVISIONER:
            self._provision(claim, storage_class)
            return
        cls_name = claim_class(claim)
        if not cls_name:
            message = "no persistent volumes available for this claim and no storage class is set"
        elif storage_class is None:
            message = f'storageclass.storage.k8s.io "{cls_name}" not found'
        else:
            message = "no volume plugin matched name: " + provisioner
        self._record(claim, "FailedBinding", message, once=True)

    def _search_immediate(self, claim: Obj) -> Obj | None:
        """The volume an Immediate claim takes (``find_matching_volume`` over every volume, in name
        order). When the claim is as it was at its last search and that found none, only the
        volumes created, changed or deleted since are searched: each of the others was no match
        then and is none now, so the smallest match of all is the smallest among those (a claim
        waits for volumes that may come in great numbers: every new one asks every waiting claim)."""
        key = key_of(claim)
        version = _meta(claim).get("resourceVersion")
        last = self._unmatched.pop(key, None)
        mark, changed = self.api.changes(VOLUME, last[1] if last is not None and last[0] == version else None)
        if changed is None:
            volumes = self.api.list(VOLUME)
        else:
            volumes = [v for v in (self.api.get(VOLUME, None, name) for name in changed) if v is not None]
        volume = find_matching_volume(claim, sorted(volumes, key=key_of), None, {}, False)
        if volume is None:
            self._unmatched[key] = (version, mark)
        return volume

    def _sync_bound_claim(self, claim: Obj) -> None:
        volume_name = (claim.get("spec") or {}).get("volumeName")
        volume = self.api.get(VOLUME, None, volume_name) if volume_name else None
        if volume is None:
            if (claim.get("status") or {}).get("phase") != "Lost":
                self.api.update(_with(claim, status={"phase": "Lost"}))
                self._record(claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume "
                             "is lost!")
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref is None or is_volume_bound_to_claim(volume, claim):
            self._bind(volume, claim)
        elif (claim.get("status") or {}).get("phase") != "Lost":
            self.api.update(_with(claim, status={"phase": "Lost"}))
            self._record(claim, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound "
                         "incorrectly")

    def _class_of(self, claim: Obj) -> Obj | None:
        name = claim_class(claim)
        return self.api.get("StorageClass", None, name) if name else None

    def _bind(self, volume: Obj, claim: Obj) -> None:
        """Write the volume, then the claim, when something is missing."""
        cmeta = _meta(claim)
        vspec = volume.get("spec") or {}
        ref = vspec.get("claimRef") or {}
        want_ref = {"kind": CLAIM, "namespace": cmeta.get("namespace"), "name": cmeta["name"],
                    "uid": cmeta.get("uid"), "apiVersion": "v1", "resourceVersion": cmeta.get("resourceVersion")}
        vann = _annotations(volume)
        changed_volume = False
        if ref.get("uid") != cmeta.get("uid") or ref.get("name") != cmeta["name"]:
            if not ref:
                vann[ANN_BOUND_BY_CONTROLLER] = "yes"
            changed_volume = True
        if changed_volume or (volume.get("status") or {}).get("phase") != "Bound":
            volume = self.api.update(_with(volume, annotations=vann, spec={"claimRef": want_ref} if changed_volume
                                           else None, status={"phase": "Bound"}))
        cann = _annotations(claim)
        cspec = claim.get("spec") or {}
        status = claim.get("status") or {}
        want_status = {"phase": "Bound", "accessModes": list(vspec.get("accessModes") or ()),
                       "capacity": dict(vspec.get("capacity") or {})}
        if (cspec.get("volumeName") == _meta(volume)["name"] and ANN_BIND_COMPLETED in cann
                and all(status.get(k) == v for k, v in want_status.items())):
            return
        if not cspec.get("volumeName"):
            cann[ANN_BOUND_BY_CONTROLLER] = "yes"
        cann[ANN_BIND_COMPLETED] = "yes"
        self.api.update(_with(claim, annotations=cann, spec={"volumeName": _meta(volume)["name"]}, status=want_status))

    # -- volumes ---------------------------------------------------------------------------------
    def _sync_volume(self, volume: Obj) -> None:
        ref = (volume.get("spec") or {}).get("claimRef")
        phase = (volume.get("status") or {}).get("phase")
        if not ref:
            if phase != "Available":
                self.api.update(_with(volume, status={"phase": "Available"}))
            return
        claim = self.api.get(CLAIM, ref.get("namespace"), ref.get("name") or "")
        if claim is not None and ref.get("uid") and _meta(claim).get("uid") != ref.get("uid"):
            claim = None  # a new claim of the same name: the old one is gone
        if claim is None:
            if ref.get("uid") is None and phase != "Available":
                # reserved for a claim that does not exist yet
                self.api.update(_with(volume, status={"phase": "Available"}))
                return
            if ref.get("uid") is None:
                return
            if phase != "Released":
                volume = self.api.update(_with(volume, status={"phase": "Released"}))
            if (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete":
                try:
                    self.api.delete(VOLUME, None, _meta(volume)["name"])
                except ApiError:
                    pass
            return
        if (claim.get("spec") or {}).get("volumeName") == _meta(volume)["name"]:
            if phase != "Bound":
                self.api.update(_with(volume, status={"phase": "Bound"}))
        elif phase != "Available" and not (claim.get("spec") or {}).get("volumeName"):
            self.api.update(_with(volume, status={"phase": "Available"}))

    # -- provisioning ----------------------------------------------------------------------------
    def _provision(self, claim: Obj, storage_class: Obj) -> None:
        uid = _meta(claim).get("uid", "")
        if uid in self._provisioning:
            return
        provisioner = str(storage_class.get("provisioner"))
        ann = _annotations(claim)
        if ann.get(ANN_STORAGE_PROVISIONER) != provisioner:
            ann[ANN_STORAGE_PROVISIONER] = provisioner
            ann[ANN_BETA_STORAGE_PROVISIONER] = provisioner
            claim = self.api.update(_with(claim, annotations=ann))
        self._record(claim, "ExternalProvisioning", "Waiting for a volume to be created either by the external "
                     f'provisioner "{provisioner}" or manually by the system administrator. If volume creation is '
                     "delayed, please verify that the provisioner is running and correctly registered.")
        self._provisioning.add(uid)
        settings = self.settings.for_provisioner(provisioner)
        ns, name = _meta(claim).get("namespace"), _meta(claim)["name"]
        self.cluster.loop.call_at(self.cluster.now() + settings.delay,
                                  lambda: self._provisioned(ns, name, uid, settings))

    def _provisioned(self, namespace: str | None, name: str, uid: str, settings: ProvisionerSettings) -> None:
        self._provisioning.discard(uid)
        claim = self.api.get(CLAIM, namespace, name)
        if claim is None or _meta(claim).get("uid") != uid or (claim.get("spec") or {}).get("volumeName"):
            return
        storage_class = self._class_of(claim)
        if storage_class is None:
            return
        provisioner = str(storage_class.get("provisioner"))
        selected = _annotations(claim).get(ANN_SELECTED_NODE)
        delayed = class_binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER
        if delayed and selected is None:
            return  # the scheduler took its choice back meanwhile
        if settings.failure_rate and float(self.cluster.rng.random()) < settings.failure_rate:
            self._record(claim, "ProvisioningFailed", f'failed to provision volume with StorageClass '
                         f'"{_meta(storage_class)["name"]}": simulated provisioner failure')
            if selected is not None:
                ann = _annotations(claim)
                ann.pop(ANN_SELECTED_NODE, None)
                self.api.update(_with(claim, annotations=ann))
            else:
                self.enqueue(f"claim:{namespace}/{name}")
            return
        affinity = self._node_affinity(provisioner, storage_class, selected, settings)
        if affinity is None:
            self._record(claim, "ProvisioningFailed", f'failed to provision volume with StorageClass '
                         f'"{_meta(storage_class)["name"]}": selected node "{selected}" not found')
            ann = _annotations(claim)
            ann.pop(ANN_SELECTED_NODE, None)
            self.api.update(_with(claim, annotations=ann))
            return
        cmeta = _meta(claim)
        cspec = claim.get("spec") or {}
        size = ((cspec.get("resources") or {}).get("requests") or {}).get("storage", "0")
        spec: dict[str, Any] = {
            "capacity": {"storage": size},
            "accessModes": list(cspec.get("accessModes") or ()),
            "volumeMode": cspec.get("volumeMode") or "Filesystem",
            "storageClassName": _meta(storage_class)["name"],
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "claimRef": {"kind": CLAIM, "namespace": cmeta.get("namespace"), "name": cmeta["name"],
                         "uid": uid, "apiVersion": "v1", "resourceVersion": cmeta.get("resourceVersion")},
            "csi": {"driver": provisioner, "volumeHandle": f"pvc-{uid}"},
        }
        if affinity:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": affinity}]}}
        volume = {"apiVersion": "v1", "kind": VOLUME,
                  "metadata": {"name": f"pvc-{uid}", "annotations": {ANN_DYNAMICALLY_PROVISIONED: provisioner}},
                  "spec": spec}
        if self.cluster.create(volume) is None:
            return
        self._record(claim, "ProvisioningSucceeded", f"Successfully provisioned volume pvc-{uid}")

    def _node_affinity(self, provisioner: str, storage_class: Obj, selected: str | None,
                       settings: ProvisionerSettings) -> list[dict[str, Any]] | None:
        """Match expressions pinning the new volume (empty: reachable everywhere); None when the
        selected node is gone."""
        if selected is not None:
            node = self.api.get("Node", None, selected)
            if node is None:
                return None
            labels = _meta(node).get("labels") or {}
            keys: tuple[str, ...] = settings.topology_keys
            csi_node = self.api.get("CSINode", None, selected)
            for driver in ((csi_node or {}).get("spec") or {}).get("drivers") or ():
                if driver.get("name") == provisioner and driver.get("topologyKeys"):
                    keys = tuple(driver["topologyKeys"])
            return [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys if k in labels]
        terms = storage_class.get("allowedTopologies") or []
        if terms:
            term = terms[int(self.cluster.rng.integers(len(terms)))] if len(terms) > 1 else terms[0]
            out = []
            for expr in term.get("matchLabelExpressions") or ():
                values = list(expr.get("values") or ())
                if values:
                    out.append({"key": expr["key"], "operator": "In",
                                "values": [values[int(self.cluster.rng.integers(len(values)))]]})
            return out
        return []

    def _record(self, claim: Obj, reason: str, message: str, *, once: bool = False) -> None:
        """An event about the claim in the timeline; ``once``: a waiting state, told once per claim
        (upstream repeats it on every resync)."""
        if once:
            noted = (str(_meta(claim).get("uid", "")), reason, message)
            if noted in self._noted:
                return
            self._noted.add(noted)
        self.cluster.log.record(reason, f"{CLAIM}/{key_of(claim)}", message=message)
