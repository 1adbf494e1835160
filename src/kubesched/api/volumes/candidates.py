"""The volume search made once per scheduling cycle: :class:`CandidateVolumes` are the volumes
:func:`~kubesched.api.volumes.claims.find_matching_volume` could return for a claim on some node,
with every check that does not depend on the node made up front, and :class:`CandidateIndex`
keeps them for every claim shape across cycles, refiling only the volumes that changed. Both give
exactly what the search over all volumes gives; they only make it cheaper for the VolumeBinding
plugin on large clusters.
"""

from __future__ import annotations

import bisect
import json
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubesched.api.selectors import LabelSelector
from kubesched.api.volumes.claims import (
    claim_class,
    is_volume_bound_to_claim,
    meta_of,
    storage_request,
    volume_capacity,
    volume_class,
    volume_mode,
)
from kubesched.api.volumes.topology import (
    HOSTNAME_LABEL,
    only_hostname_terms,
    required_hostnames,
    volume_node_affinity_matches,
)
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj


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
    hostnames: frozenset[str] | None  # see required_hostnames
    only_hostname: bool

    @classmethod
    def of(cls, volume: Obj) -> VolumeFacts:
        spec = volume.get("spec") or {}
        hosts = required_hostnames(volume)
        return cls(
            name=str(meta_of(volume).get("name")), capacity=volume_capacity(volume), mode=volume_mode(spec),
            storage_class=volume_class(volume), phase=str((volume.get("status") or {}).get("phase") or ""),
            deleting=bool(meta_of(volume).get("deletionTimestamp")), claim_ref=spec.get("claimRef") or None,
            labels=meta_of(volume).get("labels") or {}, access_modes=frozenset(spec.get("accessModes") or ()),
            hostnames=frozenset(hosts) if hosts is not None else None,
            only_hostname=hosts is not None and only_hostname_terms(volume),
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
        self.mode = volume_mode(spec)
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
                if any(str(meta_of(volume).get("name")) in self.hostname_only for _, volume in filed)}

    def any_for_node(self, labels: Mapping[str, str]) -> bool:
        """Whether some candidate suits the node (what :func:`find_matching_volume` finds for a
        first claim, nothing excluded yet)."""
        for volume in self.for_node(labels):
            if str(meta_of(volume).get("name")) in self.hostname_only or volume_node_affinity_matches(volume, labels):
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
        current = {str(meta_of(v).get("name")): v for v in volumes}
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
        meta = meta_of(claim)
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
