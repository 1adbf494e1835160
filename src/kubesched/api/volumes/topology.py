"""Where a volume can be used: the node affinity of a volume (its labels, the hostnames of local
volumes), the zone labels VolumeZone compares, a StorageClass's ``allowedTopologies`` and the
node allocatable names of attach limits (upstream ``k8s.io/component-helpers/storage/volume``
``CheckNodeAffinity``, ``GetLocalPersistentVolumeNodeNames`` and ``MatchTopologySelectorTerms``).

Everything here reads plain API objects and changes none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.selectors import node_selector_term_matches

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


def required_hostnames(volume: Mapping[str, Any]) -> set[str] | None:
    """The hostnames a volume's node affinity allows when every term requires
    ``kubernetes.io/hostname In [...]``; None when some term does not (any node may match)."""
    terms = _term_hostnames(volume)
    if not terms or any(nodes is None for nodes in terms):
        return None
    return set().union(*(nodes for nodes in terms if nodes is not None))


def only_hostname_terms(volume: Mapping[str, Any]) -> bool:
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    return all(not term.get("matchFields") and all(e.get("key") == HOSTNAME_LABEL and e.get("operator") == "In"
                                                   for e in term.get("matchExpressions") or ())
               for term in required.get("nodeSelectorTerms") or ())

