"""The VolumeBinding plugin: PreFilter, Filter (per node, and over the node table for the common
shapes of waiting claims), Reserve / Unreserve and PreBind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.quantity import parse_quantity
from kubesched.api.selectors import LabelSelector
from kubesched.api.volumes.candidates import CandidateIndex, CandidateVolumes, VolumeFacts
from kubesched.api.volumes.claims import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
    class_binding_mode,
    ephemeral_owner_error,
    find_matching_volume,
    is_claim_fully_bound,
    pod_claims,
    storage_request,
)
from kubesched.api.volumes.topology import (
    HOSTNAME_LABEL,
    local_volume_node_names,
    topology_terms_match,
    volume_node_affinity_matches,
)
from kubesched.k8s.memo import IdentityMemo
from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.capabilities import FilterVector, PodIndependentFilter
from kubesched.scheduler.framework.interface import (
    ADD,
    UPDATE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PendingBind,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import LabelColumnView, NodeTableSnapshot
from kubesched.scheduler.plugins.volumebinding.assumecache import AssumeCache
from kubesched.scheduler.plugins.volumebinding.binder import Binder, PodVolumes, bind_volume_to_claim
from kubesched.scheduler.plugins.volumebinding.objects import claim_key, metadata

NAME = "VolumeBinding"
STATE_KEY = NAME
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
BIND_POLL_INTERVAL = 1.0
TIMED_OUT = "binding volumes: timed out waiting for the condition"


@dataclass
class _State:
    bound: list[Obj] = field(default_factory=list)
    delayed: list[Obj] = field(default_factory=list)
    candidates: dict[str, CandidateVolumes] = field(default_factory=dict)  # by claim name
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = True
    #: the vector Filter passed nodes without recording their volumes (Reserve works them out)
    volumes_worked_out_at_reserve: bool = False

    def clone(self) -> _State:
        return self  # shared on purpose, as upstream's stateData


class VolumeBinding(
    PreFilterPlugin, FilterPlugin, PodIndependentFilter, FilterVector, ReservePlugin, PreBindPlugin, EnqueueExtensions,
):
    name = NAME
    #: Filter reads the node's labels and the cycle's claims, never the pods on the node
    depends_on_pods = False

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        args = args or {}
        timeout = args.get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
            raise ValueError("VolumeBindingArgs.bindTimeoutSeconds: must be a non-negative integer")
        if args.get("shape") is not None:
            raise ValueError("VolumeBindingArgs.shape: not supported when the VolumeCapacityPriority feature is off")
        self.bind_timeout = float(timeout)
        self.handle = handle
        self.volumes = AssumeCache(handle, "PersistentVolume")
        #: parsed volumes by (name, resourceVersion, claimRef); emptied when it outgrows the volumes
        self._volume_facts: dict[tuple[str, str, str], VolumeFacts] = {}
        #: the same, the same object recognised at once (an assumed copy differs from the stored one
        #: only in its claimRef, which is part of the key above)
        self._facts = IdentityMemo(self._facts_by_version, 4 * 1024)
        #: the delayed claims' candidate volumes, refiled only for volumes that changed
        self._candidates = CandidateIndex(self._facts)
        self.claims = AssumeCache(handle, "PersistentVolumeClaim")
        self.binder = Binder(handle, self.volumes, self.claims)

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent("StorageClass", ADD | UPDATE),
            ClusterEvent("PersistentVolumeClaim", ADD | UPDATE),
            ClusterEvent("PersistentVolume", ADD | UPDATE),
            ClusterEvent("Node", ADD | UPDATE_NODE_LABEL),
            ClusterEvent("CSINode", ADD | UPDATE),
            ClusterEvent("CSIDriver", ADD | UPDATE),
            ClusterEvent("CSIStorageCapacity", ADD | UPDATE),
        ]

    # -- PreFilter ---------------------------------------------------------------------------
    def _claim_problem(self, pod: PodInfo) -> tuple[bool, str | None]:
        """``podHasPVCs``: whether the pod uses claims, and the first problem with one."""
        has_claims = False
        for claim_name, ephemeral in pod_claims(pod.obj):
            has_claims = True
            claim = self.handle.get("PersistentVolumeClaim", pod.namespace, claim_name)
            if claim is None:
                if ephemeral:
                    return True, ("waiting for ephemeral volume controller to create the persistentvolumeclaim "
                                  f'"{claim_name}"')
                return True, f'persistentvolumeclaim "{claim_name}" not found'
            if (claim.get("status") or {}).get("phase") == "Lost":
                return True, (f'persistentvolumeclaim "{claim_name}" bound to non-existent persistentvolume '
                              f'"{(claim.get("spec") or {}).get("volumeName") or ""}"')
            if metadata(claim).get("deletionTimestamp"):
                return True, f'persistentvolumeclaim "{claim_name}" is being deleted'
            if ephemeral:
                problem = ephemeral_owner_error(pod.obj, claim)
                if problem is not None:
                    return True, problem
        return has_claims, None

    def _claims_of(self, pod: PodInfo) -> list[Obj]:
        """The pod's claims as the assume cache sees them, in volume order (``GetPodVolumeClaims``
        reads them through ``isVolumeBound``)."""
        out = []
        for claim_name, ephemeral in pod_claims(pod.obj):
            claim = self.claims.get(pod.namespace, claim_name)
            if claim is None:
                raise RuntimeError(f'error getting PVC "{pod.namespace}/{claim_name}": '
                                   f'could not find v1.PersistentVolumeClaim "{pod.namespace}/{claim_name}"')
            if ephemeral:
                problem = ephemeral_owner_error(pod.obj, claim)
                if problem is not None:
                    raise RuntimeError(problem)
            out.append(claim)
        return out

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        has_claims, problem = self._claim_problem(pod)
        if problem is not None:
            return None, Status.unresolvable(problem)
        if not has_claims:
            state.write(STATE_KEY, _State())
            return None, Status.skip()
        try:
            claims = self._claims_of(pod)
        except RuntimeError as err:
            return None, Status.error(str(err))
        data = _State(by_node={})
        immediate = []
        for claim in claims:
            if is_claim_fully_bound(claim):
                data.bound.append(claim)
                continue
            cls_name = claim_class(claim)
            storage_class = self.handle.get("StorageClass", "", cls_name) if cls_name else None
            delayed = class_binding_mode(storage_class) == WAIT_FOR_FIRST_CONSUMER
            if delayed and not (claim.get("spec") or {}).get("volumeName"):
                data.delayed.append(claim)
            else:
                immediate.append(claim)
        if immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE)
        if data.delayed:  # the index catches up with the volumes as the assume cache sees them
            changed = self.volumes.changes()  # volumes are cluster-scoped: keyed by name
            if changed is None:
                self._candidates.sync(self.volumes.current())
            else:
                self._candidates.update(changed)
            self._facts.limit = 4 * max(1024, len(self._candidates))
        for claim in data.delayed:
            data.candidates[metadata(claim)["name"]] = self._candidates.candidates(claim)
        state.write(STATE_KEY, data)
        eligible = self._eligible_nodes(data.bound)
        return (PreFilterResult(eligible) if eligible is not None else None), None


    def _facts_by_version(self, volume: Obj) -> VolumeFacts:
        meta = metadata(volume)
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        key = (str(meta.get("name")), str(meta.get("resourceVersion") or ""),
               f"{ref.get('namespace')}/{ref.get('name')}/{ref.get('uid')}")
        found = self._volume_facts.get(key)
        if found is None:
            if len(self._volume_facts) > 4 * max(1024, len(self._candidates)):
                self._volume_facts.clear()  # old versions pile up: start again
            found = self._volume_facts[key] = VolumeFacts.of(volume)
        return found

    def _eligible_nodes(self, bound: list[Obj]) -> set[str] | None:
        """``GetEligibleNodes``: the nodes every bound local volume names; None for no narrowing
        (also when a bound claim's volume is missing)."""
        eligible: set[str] | None = None
        for claim in bound:
            volume = self.volumes.get(None, (claim.get("spec") or {}).get("volumeName") or "")
            if volume is None:
                return None
            names = local_volume_node_names(volume)
            if names:
                eligible = set(names) if eligible is None else eligible & set(names)
        return eligible

    # -- Filter ------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data: _State | None = state.read(STATE_KEY)
        if data is None:
            return Status.error(f'error reading "{STATE_KEY}" from cycle state')
        try:
            volumes, reasons = self._find_pod_volumes(data, node)
        except RuntimeError as err:
            return Status.error(str(err))
        if reasons:
            return Status.unresolvable(*reasons)
        data.by_node[node.name] = volumes
        return None

    def _find_pod_volumes(self, data: _State, node: NodeInfo) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: raises RuntimeError for upstream's errors."""
        found = PodVolumes()
        bound_ok, volumes_found, unbound_ok, enough_space = True, True, True, True
        labels = node.labels
        for claim in data.bound:
            volume = self.volumes.get(None, (claim.get("spec") or {}).get("volumeName") or "")
            if volume is None:
                volumes_found = False
                break
            if not volume_node_affinity_matches(volume, labels):
                bound_ok = False
                break
        if data.delayed:
            unbound_ok, enough_space = self._check_delayed(data, node, found)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_BIND_CONFLICT)
        if not enough_space:
            reasons.append(ERR_NOT_ENOUGH_SPACE)
        if not volumes_found:
            reasons.append(ERR_PV_NOT_EXIST)
        return found, reasons

    def _check_delayed(self, data: _State, node: NodeInfo, found: PodVolumes) -> tuple[bool, bool]:
        to_match, to_provision = [], []
        for claim in data.delayed:
            selected = (metadata(claim).get("annotations") or {}).get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    return False, True
                to_provision.append(claim)
            else:
                to_match.append(claim)
        satisfied = True
        if to_match:
            chosen: dict[str, Obj] = {}
            # smallest requests first (a stable sort, as upstream's byPVCSize)
            for claim in sorted(to_match, key=storage_request):
                volume = find_matching_volume(claim, data.candidates[metadata(claim)["name"]].for_node(node.labels),
                                              node.labels, chosen, True)
                if volume is None:
                    satisfied = False
                    to_provision.append(claim)
                    continue
                chosen[metadata(volume)["name"]] = volume
                found.static_bindings.append((volume, claim))
        if to_provision:
            satisfied, enough = self._check_provisioning(to_provision, node, found)
            return satisfied, enough
        return satisfied, True

    def _check_provisioning(self, claims: list[Obj], node: NodeInfo, found: PodVolumes) -> tuple[bool, bool]:
        """``checkVolumeProvisions``."""
        provisions = []
        for claim in claims:
            cls_name = claim_class(claim)
            if not cls_name:
                raise RuntimeError(f'no class for claim "{claim_key(claim)}"')
            storage_class = self.handle.get("StorageClass", "", cls_name)
            if storage_class is None:
                raise RuntimeError(f'failed to find storage class "{cls_name}"')
            provisioner = storage_class.get("provisioner") or ""
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True
            if not topology_terms_match(storage_class.get("allowedTopologies"), node.labels):
                return False, True
            if not self._has_enough_capacity(provisioner, claim, storage_class, node):
                return True, False
            provisions.append(claim)
        found.dynamic_provisions = provisions
        return True, True

    def _has_enough_capacity(self, provisioner: str, claim: Obj, storage_class: Obj, node: NodeInfo) -> bool:
        requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
        if "storage" not in requests:
            return True
        driver = self.handle.get("CSIDriver", "", provisioner)
        if driver is None or not (driver.get("spec") or {}).get("storageCapacity"):
            return True
        size = storage_request(claim)
        for capacity in self.handle.list("CSIStorageCapacity"):
            if capacity.get("storageClassName") != metadata(storage_class)["name"]:
                continue
            limit = capacity.get("maximumVolumeSize", capacity.get("capacity"))
            if limit is None or parse_quantity(limit) < size:
                continue
            topology = capacity.get("nodeTopology")
            if topology is None:
                continue
            try:
                if LabelSelector.from_dict(topology).matches(node.labels):
                    return True
            except ValueError:
                continue
        return False

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        """Two common shapes, when every claim of the pod is unbound, waits for its first consumer
        and has no selected node yet:

        - *local*: every volume that could serve the claim is usable from named hostnames only and
          its class has no provisioner — only nodes whose hostname label names a candidate can pass;
        - *provisioned*: no volume could serve the claim and its class has a provisioner that does
          not publish storage capacity — a node passes exactly when it matches the class's
          ``allowedTopologies``.

        Nodes that pass the shapes' test and have a local claim are checked one by one (which records
        their volumes for Reserve); with provisioned claims only, they pass as they are and Reserve
        works out the chosen node's volumes. The others fail as the per-node Filter would. Any other
        shape: None (per node)."""
        data: _State | None = state.read(STATE_KEY)
        if data is None or data.bound or not data.delayed:
            return None
        local: list[CandidateVolumes] = []  # the candidates of the local claims
        topologies: list[list[Obj]] = []
        for claim in data.delayed:
            if ANN_SELECTED_NODE in (metadata(claim).get("annotations") or {}):
                return None
            candidates = data.candidates[metadata(claim)["name"]]
            if candidates.general:
                return None
            storage_class = self.handle.get("StorageClass", "", claim_class(claim))
            if storage_class is None:
                return None
            provisioner = storage_class.get("provisioner") or NOT_SUPPORTED_PROVISIONER
            if provisioner == NOT_SUPPORTED_PROVISIONER:
                local.append(candidates)
            elif candidates.by_hostname or self._tracks_capacity(provisioner):
                return None
            else:
                topologies.append(list(storage_class.get("allowedTopologies") or ()))
        table = snapshot.table
        nodes = snapshot.node_infos
        mask = np.ones(table.n, dtype=bool)
        column = table.label_column(HOSTNAME_LABEL) if local else None
        if local:
            if column is None:
                return None
            for candidates in local:  # the node's hostname has candidates of every local claim
                mask &= _per_node(candidates.host_flags(column.code, column.values)[0], column)
        for terms in topologies:
            if terms:
                for i in np.flatnonzero(mask).tolist():
                    mask[i] = topology_terms_match(terms, nodes[i].labels)
        if column is None:
            data.volumes_worked_out_at_reserve = True
            return mask
        if len(data.delayed) == 1:  # one claim: it fits where a candidate suits the node
            candidates = local[0]
            # a hostname with a candidate that its hostname alone makes suitable passes as it is;
            # the nodes of the other hostnames are asked one by one
            passing = mask & _per_node(candidates.host_flags(column.code, column.values)[1], column)
            for i in np.flatnonzero(mask & ~passing).tolist():
                passing[i] = candidates.any_for_node(nodes[i].labels)
            data.volumes_worked_out_at_reserve = True
            return passing
        for i in np.flatnonzero(mask).tolist():
            mask[i] = self.filter(state, pod, nodes[i]) is None
        return mask

    def _tracks_capacity(self, provisioner: str) -> bool:
        driver = self.handle.get("CSIDriver", "", provisioner)
        return bool(driver is not None and (driver.get("spec") or {}).get("storageCapacity"))

    # -- Reserve / Unreserve -----------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data: _State | None = state.read(STATE_KEY)
        if data is None:
            return Status.error(f'error reading "{STATE_KEY}" from cycle state')
        try:
            return self._reserve(data, pod, node_name)
        finally:
            # nothing reads the candidates after Reserve: let them go, so that the index need not
            # keep copies of them for the binding cycle (see CandidateIndex.candidates)
            data.candidates = {}

    def _reserve(self, data: _State, pod: PodInfo, node_name: str) -> Status | None:
        volumes = data.by_node.get(node_name)
        if volumes is None and data.volumes_worked_out_at_reserve:
            info = self.handle.snapshot().get(node_name)
            if info is not None:
                try:
                    volumes, reasons = self._find_pod_volumes(data, info)
                except RuntimeError as err:
                    return Status.error(str(err))
                if reasons:  # cannot happen: the vector Filter passed the node for these reasons' absence
                    return Status.unresolvable(*reasons)
                data.by_node[node_name] = volumes
        if volumes is None:
            data.all_bound = True
            return None
        try:
            if all(is_claim_fully_bound(c) for c in self._claims_of(pod)):
                data.all_bound = True
                return None
        except RuntimeError:
            pass  # a claim went missing: go on and let the binding find out
        bindings = []
        for volume, claim in volumes.static_bindings:
            bound = bind_volume_to_claim(volume, claim)
            if bound is not volume:
                self.volumes.assume(bound)
            bindings.append((bound, claim))
        provisions = []
        for claim in volumes.dynamic_provisions:
            annotated = {**claim, "metadata": {**metadata(claim), "annotations": {
                **(metadata(claim).get("annotations") or {}), ANN_SELECTED_NODE: node_name}}}
            self.claims.assume(annotated)
            provisions.append(annotated)
        volumes.static_bindings, volumes.dynamic_provisions = bindings, provisions
        data.all_bound = False
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data: _State | None = state.read(STATE_KEY)
        volumes = data.by_node.get(node_name) if data is not None else None
        if volumes is None:
            return
        for volume, _ in volumes.static_bindings:
            self.volumes.restore(volume)
        for claim in volumes.dynamic_provisions:
            self.claims.restore(claim)

    # -- PreBind -----------------------------------------------------------------------------
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | PendingBind | None:
        data: _State | None = state.read(STATE_KEY)
        if data is None:
            return Status.error(f'error reading "{STATE_KEY}" from cycle state')
        if data.all_bound:
            return None
        volumes = data.by_node.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volumes found for node "{node_name}"')
        written = self.binder.write(volumes)
        if isinstance(written, Status):
            return written
        bindings, provisions = written

        def poll() -> tuple[bool, Status | None]:
            try:
                done = self.binder.done(pod, node_name, bindings, provisions)
            except RuntimeError as err:
                return True, Status.error(f"binding volumes: {err}")
            return done, None

        return PendingBind(poll, BIND_POLL_INTERVAL, self.bind_timeout, TIMED_OUT)

def _per_node(flags: bytearray, column: LabelColumnView) -> np.ndarray:
    """Flags per code of a label column (and a last one for nodes without the label, see
    :meth:`CandidateVolumes.host_flags`) read per node."""
    per_node: np.ndarray = np.frombuffer(flags, dtype=np.bool_)[column.codes]  # ABSENT_LABEL (-1): the last
    return per_node


