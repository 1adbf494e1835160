"""Pod links that survive an edit: every pod link the pages render carries the pod's identity
(:mod:`kubesched.sim.identity`) beside its name, ``/pods/NAMESPACE/NAME?id=IDENTITY``, and a pod's
page finds the pod by that identity when the name no longer names it.

A controller's pods get names from the run's seeded random draws, so an edit that draws one name
more or less before them (a Job created before a ReplicaSet's pods, say) gives the same pods other
names in the next version: a link or bookmark made before the edit names no pod, or another one. The
identity does not change with the draws. :class:`PodIds` is a run's map both ways, with what the
earlier versions called their pods (``earlier``: name -> identity and the version it is of, the
latest version that had the name winning, for the last :data:`EARLIER_VERSIONS` versions), so that
a link without ``id`` (made before the ui wrote them, or typed) still finds its pod after an edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from kubesched.sim.identity import identities

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import RedirectResponse

    from kubesched.ui.state import Snapshot

#: the earlier versions whose pod names a link without ``id`` is looked up in
EARLIER_VERSIONS = 8
#: the longest identity (or former name) a link may carry: a namespace, a kind, a name, a revision
#: and a number
MAX_IDENTITY = 400


def pod_url(key: str, identity: str | None = None, **params: Any) -> str:
    """``/pods/NAMESPACE/NAME?id=IDENTITY`` (each part URL-encoded), with ``params`` (None: left out)
    after the identity."""
    namespace, _, name = key.partition("/")
    query = urlencode({"id": identity or key, **{k: v for k, v in params.items() if v is not None}})
    return f"/pods/{quote(namespace, safe='')}/{quote(name, safe='')}?{query}"


@dataclass(frozen=True)
class Found:
    """Where a pod's page request leads: the pod ``key`` of the run now, which the link named
    ``was`` (the name in version ``version``, when a version of the ui had that name)."""

    key: str
    identity: str
    was: str
    version: int | None


@dataclass
class PodIds:
    """A run's pods by identity and identities by pod, and the earlier versions' names."""

    #: pod key -> identity, every pod of the run (those gone at its end too)
    of: dict[str, str]
    #: the run's version
    version: int = 1
    #: pod key -> (identity, version) of the earlier versions' pods (the latest version with the key)
    earlier: dict[str, tuple[str, int]] = field(default_factory=dict)
    by_identity: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        # the latest pod of a key is the result's entry: no two keys share an identity
        self.by_identity = {identity: key for key, identity in self.of.items()}

    @classmethod
    def of_result(cls, result: Mapping[str, Any], version: int = 1, before: PodIds | None = None) -> PodIds:
        """The run's map; ``before``: the previous version's (its names and those it kept are kept,
        those of more than :data:`EARLIER_VERSIONS` versions ago dropped)."""
        of = identities(result)
        earlier: dict[str, tuple[str, int]] = {}
        if before is not None:
            oldest = version - EARLIER_VERSIONS
            earlier = {k: seen for k, seen in before.earlier.items() if seen[1] >= oldest}
            earlier.update((k, (identity, before.version)) for k, identity in before.of.items())
        return cls(of, version, earlier)

    def identity(self, key: str) -> str:
        """The identity of the run's pod ``key`` (its key for a pod the run has not)."""
        return self.of.get(key, key)

    def find(self, key: str, wanted: str | None) -> Found | None:
        """The pod a link to ``key`` (with identity ``wanted``, if it carried one) means, when that is
        another pod of this run than ``key`` names; None: show ``key``'s page (the run's pod of that
        name and identity, or, when no pod of the run has the identity, whatever the name shows)."""
        version: int | None = None
        if wanted is None:
            if key in self.of or key not in self.earlier:
                return None
            wanted, version = self.earlier[key]
        elif self.of.get(key) == wanted:
            return None
        elif key in self.earlier and self.earlier[key][0] == wanted:
            version = self.earlier[key][1]
        found = self.by_identity.get(wanted)
        if found is None or found == key:
            return None
        return Found(found, wanted, key, version)


def renamed_notice(snap: Snapshot, key: str, wanted: str | None, was: str | None, was_in: int | None) -> str | None:
    """What a pod's page says of the link that led to it: the name the pod had (``was``, in version
    ``was_in``: the parameters of :func:`pod_url` a redirect adds), or that the link meant a pod of
    identity ``wanted`` that this run has not and the name is another pod's. None: nothing to say."""
    ids = snap.ids
    identity = ids.of.get(key)
    if identity is None:
        return None
    if wanted is not None and wanted != identity and wanted not in ids.by_identity:
        return (f"The link was to the pod of identity {wanted}, which version {snap.version} has not: "
                f"{key} is another pod (identity {identity}).")
    if not was or was == key or (wanted is not None and wanted != identity):
        return None
    if was_in is not None and ids.earlier.get(was) == (identity, was_in):
        return f"This pod was {was} in version {was_in}; it is {key} in version {snap.version} (identity {identity})."
    return f"The link named {was}: in version {snap.version} the pod of its identity ({identity}) is {key}."


def api_renamed(request: Request, snap: Snapshot, namespace: str, name: str, wanted: str | None,
                rest: str = "") -> RedirectResponse | None:
    """The API's answer to a request for a pod document (``/api/pods/NAMESPACE/NAME[/...]``) whose
    ``id`` (or, without one, whose name in an earlier version) is another pod's of this run: a 307
    to the same document (``rest``: ``/nodes``, ``/scores`` ...) of that pod, with its identity, ``was`` and ``was_in`` (what the pod's page
    says in words) and the request's other parameters. None: answer for the name asked."""
    from starlette.responses import RedirectResponse

    found = snap.ids.find(f"{namespace}/{name}", wanted or None)
    if found is None:
        return None
    params = {k: v for k, v in request.query_params.items() if k not in ("id", "was", "was_in")}
    return RedirectResponse(api_pod_url(found.key, found.identity, rest, was=found.was, was_in=found.version,
                                        **params), status_code=307)


def api_pod_url(key: str, identity: str | None = None, rest: str = "", **params: Any) -> str:
    """``/api/pods/NAMESPACE/NAME[REST]?id=IDENTITY`` (REST: ``/nodes``, ``/scores`` ...), as
    :func:`pod_url` writes the page's."""
    return "/api" + pod_url(key, identity, **params).replace("?", rest + "?", 1)
