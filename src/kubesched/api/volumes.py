"""PersistentVolumes and their claims: the rules the scheduler's volume plugins and the embedded
PersistentVolume controller share (upstream ``k8s.io/component-helpers/storage/volume`` and
``storage/ephemeral``), so that both sides always agree on which volume fits which claim.

Everything here reads plain API objects and changes none.
"""

from __future__ import annotations

import bisect
import json
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import parse_quantity
from kubesched.api.selectors import LabelSelector, node_selector_term_matches
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj

#: on a claim: the binding is complete (set by the PV controller)
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: on a claim or a volume: the PV controller made the binding (not the user)
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
#: on a claim: the node the scheduler chose, for delayed binding and topology-aware provisioning
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: on a claim: the provisioner asked to create its volume
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
#: on a volume: the provisioner that created it
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
#: the beta annotation that, when present, wins over ``storageClassName``
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
#: a StorageClass provisioner that means "no dynamic provisioning" (local volumes)
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: the node and volume labels VolumeZone compares (beta failure-domain ones first, as upstream)
ZONE_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
#: the separator of several zones in one volume zone label
MULTI_ZONE_DELIMITER = "__"
#: a resource name prefix that marks attachable volume counts in a node's allocatable
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def claim_class(claim: Mapping[str, Any]) -> str:
    """The claim's storage class: the beta annotation first, then ``spec.storageClassName``; ''
    for none (``GetPersistentVolumeClaimClass``)."""
    ann = _annotations(claim)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def volume_class(volume: Mapping[str, Any]) -> str:
    ann = _annotations(volume)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str((volume.get("spec") or {}).get("storageClassName") or "")


def ephemeral_claim_name(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    """The claim a generic ephemeral volume gets: ``<pod name>-<volume name>``."""
    return f"{_meta(pod).get('name', '')}-{volume.get('name', '')}"


def pod_claims(pod: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """``(claim name, is ephemeral)`` of each volume of the pod backed by a claim, in volume order."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, Mapping):
            yield str(pvc.get("claimName") or ""), False
        elif isinstance(volume.get("ephemeral"), Mapping):
            yield ephemeral_claim_name(pod, volume), True


def pod_pvc_refs(pod: Mapping[str, Any]) -> list[str]:
    """``namespace/claim`` of each ``persistentVolumeClaim`` volume (not ephemeral ones): what the
    scheduler's snapshot counts as claims in use (``PVCRefCounts``)."""
    ns = _meta(pod).get("namespace") or DEFAULT_NAMESPACE
    return [f"{ns}/{name}" for name, ephemeral in pod_claims(pod) if not ephemeral]


def ephemeral_owner_error(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
    """``ephemeral.VolumeIsForPod``: an ephemeral volume's claim must be controlled by the pod."""
    uid = _meta(pod).get("uid")
    for ref in _meta(claim).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid") == uid:
            return None
    return (f'PVC {_meta(claim).get("namespace") or DEFAULT_NAMESPACE}/{_meta(claim).get("name")} '
            f'was not created for pod {_meta(pod).get("namespace") or DEFAULT_NAMESPACE}/'
            f'{_meta(pod).get("name")} (pod is not owner)')


def storage_request(claim: Mapping[str, Any]) -> Fraction:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    value = requests.get("storage")
    return parse_quantity(value) if value is not None else Fraction(0)


def volume_capacity(volume: Mapping[str, Any]) -> Fraction:
    value = ((volume.get("spec") or {}).get("capacity") or {}).get("storage")
    return parse_quantity(value) if value is not None else Fraction(0)


def is_claim_fully_bound(claim: Mapping[str, Any]) -> bool:
    """Bound to a volume and the binding completed (``isPVCFullyBound``)."""
    return bool((claim.get("spec") or {}).get("volumeName")) and ANN_BIND_COMPLETED in _annotations(claim)


def is_volume_bound_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref:
        return False
    meta = _meta(claim)
    if ref.get("name") != meta.get("name") or (ref.get("namespace") or "") != (meta.get("namespace") or DEFAULT_NAMESPACE):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def class_binding_mode(storage_class: Mapping[str, Any] | None) -> str | None:
    """``volumeBindingMode`` as the API server defaults it (Immediate)."""
    if storage_class is None:
        return None
    return str(storage_class.get("volumeBindingMode") or IMMEDIATE)


def volume_node_affinity_matches(volume: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: the volume's required node affinity against the node's labels only
    (the node's name is not looked at, so ``matchFields`` terms are ignored)."""
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if required is None:
        return True
    node = {"metadata": {"labels": dict(node_labels)}}
    return any(isinstance(t, Mapping) and node_selector_term_matches(t, node)
               for t in required.get("nodeSelectorTerms") or ())


def _term_hostnames(volume: Mapping[str, Any]) -> list[set[str] | None]:
    """Per term of the volume's required node affinity, the hostnames its ``kubernetes.io/hostname
    In`` expressions allow (intersected); None for a term without such an expression."""
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    out: list[set[str] | None] = []
    for term in (required or {}).get("nodeSelectorTerms") or ():
        nodes: set[str] | None = None
        for expr in term.get("matchExpressions") or ():
            if expr.get("key") == HOSTNAME_LABEL and expr.get("operator") == "In":
                values = set(expr.get("values") or ())
                nodes = values if nodes is None else nodes & values
        out.append(nodes)
    return out


def local_volume_node_names(volume: Mapping[str, Any]) -> list[str]:
    """``GetLocalPersistentVolumeNodeNames``: the nodes named by ``kubernetes.io/hostname In``
    expressions of the volume's node affinity (intersected within a term, united across terms; a
    term without one adds nothing)."""
    return sorted(set().union(*(nodes for nodes in _term_hostnames(volume) if nodes is not None)))


def topology_terms_match(terms: Iterable[Mapping[str, Any]] | None, labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms`` (a StorageClass's ``allowedTopologies``): no terms → True;
    the terms are ORed, an empty term selects nothing."""
    terms = list(terms or ())
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if exprs and all(labels.get(e.get("key")) in (e.get("values") or ()) for e in exprs):
            return True
    return False


def _volume_mode(spec: Mapping[str, Any]) -> str:
    return str(spec.get("volumeMode") or "Filesystem")


def access_modes_fit(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> bool:
    """Every access mode the claim asks for is offered by the volume (``CheckAccessModes``)."""
    offered = set((volume.get("spec") or {}).get("accessModes") or ())
    return all(mode in offered for mode in (claim.get("spec") or {}).get("accessModes") or ())


def find_matching_volume(
    claim: Obj,
    volumes: Iterable[Obj],
    node_labels: Mapping[str, str] | None,
    excluded: Mapping[str, Any],
    delay_binding: bool,
) -> Obj | None:
    """``FindMatchingVolume``: the volume pre-bound to the claim if there is one (None when it does
    not suit ``node_labels``), else the smallest Available volume of the claim's class that is big
    enough, of the same volume mode, selected by the claim's selector, not being deleted, suiting
    the node (when one is given) and, with a node, offering the claim's access modes. Without a
    node, delayed-binding claims only take pre-bound volumes. ``volumes`` are taken in the order
    given (ties keep the first)."""
    spec = claim.get("spec") or {}
    wanted = storage_request(claim)
    wanted_class = claim_class(claim)
    selector = LabelSelector.from_dict(spec["selector"]) if spec.get("selector") is not None else None
    smallest: Obj | None = None
    smallest_size = Fraction(0)
    for volume in volumes:
        name = _meta(volume).get("name")
        if name in excluded:
            continue
        vspec = volume.get("spec") or {}
        bound_here = is_volume_bound_to_claim(volume, claim)
        if vspec.get("claimRef") and not bound_here:
            continue
        size = volume_capacity(volume)
        if size < wanted:
            continue
        if _volume_mode(spec) != _volume_mode(vspec):
            continue
        if _meta(volume).get("deletionTimestamp"):
            continue
        fits_node = node_labels is None or volume_node_affinity_matches(volume, node_labels)
        if bound_here:
            return volume if fits_node else None
        if node_labels is None and delay_binding:
            continue
        if (volume.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(_meta(volume).get("labels") or {}):
            continue
        if volume_class(volume) != wanted_class:
            continue
        if not fits_node:
            continue
        if node_labels is not None and not access_modes_fit(claim, volume):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = volume, size
    return smallest


def label_zones(value: str) -> set[str] | None:
    """A volume zone label's zones (``a__b``); None when a part is empty (upstream ignores the
    label then)."""
    zones = {part.strip() for part in value.split(MULTI_ZONE_DELIMITER)}
    return None if "" in zones else zones


def csi_attach_limit_key(driver: str) -> str:
    """``GetCSIAttachLimitKey``: ``attachable-volumes-csi-<driver>``, shortened with a SHA-1 when
    the name would reach 63 characters."""
    import hashlib

    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= 63:
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + hashlib.sha1(driver.encode()).hexdigest()[:16]
    return CSI_ATTACH_LIMIT_PREFIX + driver


def _hostname_only(volume: Mapping[str, Any]) -> set[str] | None:
    """The hostnames a volume's node affinity allows when every term requires
    ``kubernetes.io/hostname In [...]``; None when some term does not (any node may match)."""
    terms = _term_hostnames(volume)
    if not terms or any(nodes is None for nodes in terms):
        return None
    return set().union(*(nodes for nodes in terms if nodes is not None))


def _only_hostname_terms(volume: Mapping[str, Any]) -> bool:
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    return all(not term.get("matchFields") and all(e.get("key") == HOSTNAME_LABEL and e.get("operator") == "In"
                                                   for e in term.get("matchExpressions") or ())
               for term in required.get("nodeSelectorTerms") or ())


@dataclass(frozen=True, slots=True)
class VolumeFacts:
    """What the volume search reads of a volume, parsed once per version of it."""

    name: str
    capacity: Fraction
    mode: str
    storage_class: str
    phase: str
    deleting: bool
    claim_ref: Mapping[str, Any] | None
    labels: Mapping[str, str]
    access_modes: frozenset[str]
    hostnames: frozenset[str] | None  # see _hostname_only
    only_hostname: bool

    @classmethod
    def of(cls, volume: Obj) -> VolumeFacts:
        spec = volume.get("spec") or {}
        hosts = _hostname_only(volume)
        return cls(
            name=str(_meta(volume).get("name")), capacity=volume_capacity(volume), mode=_volume_mode(spec),
            storage_class=volume_class(volume), phase=str((volume.get("status") or {}).get("phase") or ""),
            deleting=bool(_meta(volume).get("deletionTimestamp")), claim_ref=spec.get("claimRef") or None,
            labels=_meta(volume).get("labels") or {}, access_modes=frozenset(spec.get("accessModes") or ()),
            hostnames=frozenset(hosts) if hosts is not None else None,
            only_hostname=hosts is not None and _only_hostname_terms(volume),
        )


class _ClaimShape:
    """What the node-independent checks of the volume search read of a claim (all but which
    claim it is): requested size, class, volume mode, access modes and selector."""

    __slots__ = ("wanted_num", "wanted_den", "storage_class", "mode", "modes", "selector", "key")

    def __init__(self, claim: Obj) -> None:
        spec = claim.get("spec") or {}
        wanted = storage_request(claim)
        self.wanted_num, self.wanted_den = wanted.numerator, wanted.denominator
        self.storage_class = claim_class(claim)
        self.mode = _volume_mode(spec)
        self.modes = frozenset(spec.get("accessModes") or ())
        raw = spec.get("selector")
        self.selector = LabelSelector.from_dict(raw) if raw is not None else None
        try:
            selector_key: Any = json.dumps(raw, sort_keys=True)
        except (TypeError, ValueError):
            selector_key = object()  # shares its filing with no other claim
        self.key = (self.wanted_num, self.wanted_den, self.storage_class, self.mode, self.modes, selector_key)

    def admits(self, f: VolumeFacts, bound_here: bool) -> bool:
        """The node-independent part of the search: a volume bound to another claim, too small
        (capacity compared as integer cross products: exact), of another volume mode or being
        deleted never serves; one not reserved for the claim must also be Available, of the
        claim's class and access modes, and match its selector."""
        if f.claim_ref is not None and not bound_here:
            return False
        capacity = f.capacity
        if capacity.numerator * self.wanted_den < self.wanted_num * capacity.denominator:
            return False
        if self.mode != f.mode or f.deleting:
            return False
        if not bound_here:
            if f.phase != "Available" or f.storage_class != self.storage_class or not self.modes <= f.access_modes:
                return False
            if self.selector is not None and not self.selector.matches(f.labels):
                return False
        return True


class CandidateVolumes:
    """The volumes :func:`find_matching_volume` could return for one claim on some node, found once
    per scheduling cycle: every check that does not depend on the node is made here (a volume bound
    to another claim, too small, of another volume mode, being deleted; for volumes not reserved
    for the claim also phase, selector, class and access modes), and volumes that only some
    hostnames may use are filed under them. :meth:`for_node` gives a node's candidates in the
    original order, so the search over them returns exactly what the search over all volumes
    would. (Entries are (order key, volume): the position in the list given, or the volume's name
    when built by a :class:`CandidateIndex` over volumes in name order.)"""

    def __init__(self, claim: Obj, volumes: Iterable[Obj], facts: Callable[[Obj], VolumeFacts] | None = None) -> None:
        shape = _ClaimShape(claim)
        facts_of = facts or VolumeFacts.of
        self.general: list[tuple[Any, Obj]] = []
        self.by_hostname: dict[str, list[tuple[Any, Obj]]] = {}
        #: names of filed volumes whose node affinity says nothing but ``hostname In``: filed under a
        #: hostname, they suit every node with that hostname label
        self.hostname_only: set[str] = set()
        self._any_hosts: AbstractSet[str] | None = None
        for i, volume in enumerate(volumes):
            f = facts_of(volume)
            bound_here = f.claim_ref is not None and is_volume_bound_to_claim(volume, claim)
            if not shape.admits(f, bound_here):
                continue
            hosts = None if bound_here else f.hostnames
            if hosts is None:
                self.general.append((i, volume))
            else:
                for host in hosts:
                    self.by_hostname.setdefault(host, []).append((i, volume))
                if f.only_hostname:
                    self.hostname_only.add(f.name)

        self._filing: _ShapeFiling | None = None
        self._version = 0

    @classmethod
    def _of(cls, general: list[tuple[Any, Obj]], filing: _ShapeFiling) -> CandidateVolumes:
        """The candidates ``filing`` holds now, with ``general`` as the general ones: its very
        containers, until it is about to change them (then it gives these candidates copies of them
        as they were, see :meth:`_ShapeFiling._changing`)."""
        out = cls.__new__(cls)
        out.general, out.by_hostname = general, filing.by_hostname
        out.hostname_only, out._any_hosts = filing.hostname_only, filing.any_hosts.keys()
        out._filing, out._version = filing, filing.version
        filing.views.add(out)
        return out

    def _hold(self, by_hostname: dict[str, list[tuple[Any, Obj]]], hostname_only: set[str],
              any_hosts: set[str]) -> None:
        """Keep these (copies of the filing's containers, not to be changed) from now on."""
        self.by_hostname, self.hostname_only, self._any_hosts = by_hostname, hostname_only, any_hosts
        self._filing = None

    def host_flags(self, code: Mapping[str, int], values: Sequence[str]) -> tuple[bytearray, bytearray]:
        """For a coding of hostnames (``code``: hostname -> code, ``values``: code -> hostname, as a
        node label column keeps them), per code and then one last 0 (for "no hostname"): 1 where
        some candidate is filed under the hostname, and 1 where :meth:`hostnames_for_any_node` has
        it. From the index's flags, kept up to date, while its filing is as it was when these
        candidates were taken from it; worked out here otherwise. Read them, do not change them."""
        filing = self._filing
        if filing is not None and filing.version == self._version:
            return filing.host_flags(code, values)
        any_hosts = self.hostnames_for_any_node()
        return (bytearray([*(host in self.by_hostname for host in values), False]),
                bytearray([*(host in any_hosts for host in values), False]))

    def hostnames_for_any_node(self) -> AbstractSet[str]:
        """Hostnames some candidate filed under them suits whatever the node's other labels: for a
        node with such a hostname label (and no general candidates), :meth:`any_for_node` is True."""
        if self._any_hosts is not None:
            return self._any_hosts
        return {host for host, filed in self.by_hostname.items()
                if any(str(_meta(volume).get("name")) in self.hostname_only for _, volume in filed)}

    def any_for_node(self, labels: Mapping[str, str]) -> bool:
        """Whether some candidate suits the node (what :func:`find_matching_volume` finds for a
        first claim, nothing excluded yet)."""
        for volume in self.for_node(labels):
            if str(_meta(volume).get("name")) in self.hostname_only or volume_node_affinity_matches(volume, labels):
                return True
        return False

    def for_node(self, labels: Mapping[str, str]) -> list[Obj]:
        local = self.by_hostname.get(labels.get(HOSTNAME_LABEL, "\x00"), [])
        if not local:
            return [v for _, v in self.general]
        if not self.general:
            return [v for _, v in local]
        return [v for _, v in sorted([*self.general, *local], key=lambda e: e[0])]


class _ShapeFiling:
    """The volumes of the index one claim shape admits (not reserved for any claim), filed as
    :class:`CandidateVolumes` files them, ordered by name."""

    def __init__(self, shape: _ClaimShape) -> None:
        self.shape = shape
        self.general: dict[str, Obj] = {}
        self._general_sorted: list[tuple[Any, Obj]] | None = []
        self.by_hostname: dict[str, list[tuple[Any, Obj]]] = {}
        self.hostname_only: set[str] = set()
        self.any_hosts: dict[str, int] = {}  # hostname -> how many hostname-only volumes are filed there
        self._filed: dict[str, frozenset[str] | None] = {}
        #: changes whenever what is filed changes
        self.version = 0
        #: the candidates given out (:meth:`CandidateVolumes._of`) that still read these containers
        self.views: weakref.WeakSet[CandidateVolumes] = weakref.WeakSet()
        #: the flags of :meth:`host_flags` for the last coding asked about
        self._coding: tuple[Mapping[str, int], bytearray, bytearray] | None = None

    def host_flags(self, code: Mapping[str, int], values: Sequence[str]) -> tuple[bytearray, bytearray]:
        """See :meth:`CandidateVolumes.host_flags`; the coding only ever adds codes (a new coding
        is a new ``code`` mapping), so the flags are made once per coding, extended for hostnames
        coded since, and set for each hostname filed or dropped (:meth:`_reflag`)."""
        coding = self._coding
        if coding is not None and coding[0] is code and len(coding[1]) == len(values) + 1:
            return coding[1], coding[2]
        if coding is not None and coding[0] is code:  # hostnames coded since: extend
            known = len(coding[1]) - 1
            has = coding[1][:known] + bytearray([*(host in self.by_hostname for host in values[known:]), False])
            only = coding[2][:known] + bytearray([*(host in self.any_hosts for host in values[known:]), False])
        else:
            has, only = bytearray(len(values) + 1), bytearray(len(values) + 1)
            for host in self.by_hostname:
                at = code.get(host)
                if at is not None:
                    has[at] = True
            for host in self.any_hosts:
                at = code.get(host)
                if at is not None:
                    only[at] = True
        self._coding = (code, has, only)
        return has, only

    def _changing(self) -> None:
        """Before the containers change: candidates given out that are still alive keep them as
        they are now (one copy, shared)."""
        self.version += 1
        if self.views:
            held = (dict(self.by_hostname), set(self.hostname_only), set(self.any_hosts))
            for view in self.views:
                view._hold(*held)
            self.views = weakref.WeakSet()

    def _reflag(self, host: str) -> None:
        coding = self._coding
        if coding is not None:
            at = coding[0].get(host)
            if at is not None and at < len(coding[1]) - 1:  # later codes: when the flags are extended
                coding[1][at] = host in self.by_hostname
                coding[2][at] = host in self.any_hosts

    def add(self, name: str, volume: Obj, f: VolumeFacts) -> None:
        if not self.shape.admits(f, False):
            return
        self._changing()
        hosts = f.hostnames
        self._filed[name] = hosts
        if hosts is None:
            self.general[name] = volume
            self._general_sorted = None
            return
        for host in hosts:  # a new list each time: CandidateVolumes given out keep theirs
            filed = list(self.by_hostname.get(host, ()))
            bisect.insort(filed, (name, volume), key=lambda e: e[0])
            self.by_hostname[host] = filed
            if f.only_hostname:
                self.any_hosts[host] = self.any_hosts.get(host, 0) + 1
            self._reflag(host)
        if f.only_hostname:
            self.hostname_only.add(name)

    def drop(self, name: str) -> None:
        if name not in self._filed:
            return
        self._changing()
        hosts = self._filed.pop(name)
        if hosts is None:
            del self.general[name]
            self._general_sorted = None
            return
        only = name in self.hostname_only
        self.hostname_only.discard(name)
        for host in hosts:
            kept = [e for e in self.by_hostname.get(host, ()) if e[0] != name]
            if kept:
                self.by_hostname[host] = kept
            else:
                self.by_hostname.pop(host, None)
            if only:
                left = self.any_hosts.get(host, 0) - 1
                if left > 0:
                    self.any_hosts[host] = left
                else:
                    self.any_hosts.pop(host, None)
            self._reflag(host)

    def general_sorted(self) -> list[tuple[Any, Obj]]:
        if self._general_sorted is None:
            self._general_sorted = sorted(self.general.items())
        return self._general_sorted


class CandidateIndex:
    """:class:`CandidateVolumes` for every claim, over volumes that change little between
    scheduling cycles: each claim shape (size, class, modes, selector) keeps its filing of the
    volumes, and :meth:`sync` refiles only the volumes whose object changed (by identity) or went
    away. A claim's candidates are its shape's filing plus the volumes reserved for that very claim.
    The same candidates, in the same (name) order, as ``CandidateVolumes(claim, volumes in name
    order of the claim's class)``."""

    #: more changed volumes than this (and than a quarter of them all) at one sync: every shape is
    #: filed anew when next asked for, rather than volume by volume
    REFILE_ALL_ABOVE = 64

    def __init__(self, facts: Callable[[Obj], VolumeFacts]) -> None:
        self._facts = facts
        self._volumes: dict[str, Obj] = {}
        self._claimed: dict[tuple[str, str], set[str]] = {}  # claimRef (namespace, name) -> volume names
        self._shapes: dict[Any, _ShapeFiling] = {}

    def __len__(self) -> int:
        return len(self._volumes)

    def get(self, name: str) -> Obj | None:
        """The volume held under ``name``."""
        return self._volumes.get(name)

    def sync(self, volumes: Iterable[Obj]) -> None:
        """Make the index hold exactly ``volumes`` (one object per name): :meth:`update` with
        every volume whose object is not the one held (by identity) and every one gone."""
        current = {str(_meta(v).get("name")): v for v in volumes}
        changed: dict[str, Obj | None] = {name: v for name, v in current.items() if self._volumes.get(name) is not v}
        changed.update((name, None) for name in self._volumes if name not in current)
        self.update(changed)

    def update(self, changed: Mapping[str, Obj | None]) -> None:
        """Hold, for each name of ``changed``, the volume given (None: none of that name any
        more); the other volumes stay as they are."""
        old = self._volumes
        changed = {name: v for name, v in changed.items() if old.get(name) is not v}
        if not changed:
            return
        if len(changed) > max(self.REFILE_ALL_ABOVE, len(old) // 4):
            self._shapes = {}  # many changes: each shape is filed again when next asked for
        for name, volume in changed.items():
            if name in old:
                self._forget(name, old.pop(name))
            if volume is not None:
                old[name] = volume
                self._learn(name, volume)

    def _ref(self, volume: Obj) -> tuple[str, str] | None:
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref:
            return None
        return (str(ref.get("namespace") or ""), str(ref.get("name") or ""))

    def _forget(self, name: str, volume: Obj) -> None:
        ref = self._ref(volume)
        if ref is not None:
            names = self._claimed.get(ref)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._claimed[ref]
        for filing in self._shapes.values():
            filing.drop(name)

    def _learn(self, name: str, volume: Obj) -> None:
        ref = self._ref(volume)
        if ref is not None:
            self._claimed.setdefault(ref, set()).add(name)
        if self._shapes:
            f = self._facts(volume)
            for filing in self._shapes.values():
                filing.add(name, volume, f)

    def candidates(self, claim: Obj) -> CandidateVolumes:
        shape = _ClaimShape(claim)
        filing = self._shapes.get(shape.key)
        if filing is None:
            filing = self._shapes[shape.key] = _ShapeFiling(shape)
            for name in sorted(self._volumes):
                volume = self._volumes[name]
                filing.add(name, volume, self._facts(volume))
        meta = _meta(claim)
        reserved: list[tuple[Any, Obj]] = []
        for name in self._claimed.get((str(meta.get("namespace") or DEFAULT_NAMESPACE), str(meta.get("name") or "")), ()):
            volume = self._volumes[name]
            f = self._facts(volume)
            if f.storage_class == shape.storage_class and is_volume_bound_to_claim(volume, claim) and shape.admits(f, True):
                reserved.append((name, volume))
        general = filing.general_sorted()
        if reserved:
            general = sorted([*general, *reserved], key=lambda e: e[0])
        return CandidateVolumes._of(general, filing)
