"""A fake Kubernetes API server for the kube backend's tests (no registry ships kube-apiserver, so
the real-cluster code is tested against this stand-in).

A stdlib ThreadingHTTPServer on 127.0.0.1:0 over kubesched's own :class:`ObjectStore` (and
:class:`Admission` for creates), speaking the REST the backend uses, quirks included: LIST with
limit/continue, WATCH as chunked NDJSON with bookmarks, compaction answered with 410 (as HTTP status
or as an ERROR event), ``pods/binding`` answering a 201 ``Status`` (409 when already bound),
``pods/status`` merge and strategic-merge patches, DELETE with a UID precondition and graceful
deletion (``deletionTimestamp`` set; the test finishes it), events.k8s.io/v1, Leases with
resourceVersion conflicts, and fault injection (status codes, Retry-After, delays, dropped streams).
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from fakefaults import Fault, Request
from fakewatch import History, serve_watch, status_body

from kubesched.cluster.embedded.apiserver.admission import Admission
from kubesched.cluster.embedded.apiserver.store import ObjectStore, merge_patch
from kubesched.cluster.kube.cluster import wall_clock
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import ApiError, Obj
from kubesched.k8s.timefmt import rfc3339

# (group, version, plural) -> (kind, namespaced)
RESOURCES: dict[tuple[str, str, str], tuple[str, bool]] = {
    ("", "v1", "pods"): ("Pod", True),
    ("", "v1", "nodes"): ("Node", False),
    ("", "v1", "namespaces"): ("Namespace", False),
    ("", "v1", "services"): ("Service", True),
    ("", "v1", "replicationcontrollers"): ("ReplicationController", True),
    ("scheduling.k8s.io", "v1", "priorityclasses"): ("PriorityClass", False),
    ("policy", "v1", "poddisruptionbudgets"): ("PodDisruptionBudget", True),
    ("apps", "v1", "replicasets"): ("ReplicaSet", True),
    ("apps", "v1", "statefulsets"): ("StatefulSet", True),
    ("apps", "v1", "deployments"): ("Deployment", True),
    ("apps", "v1", "daemonsets"): ("DaemonSet", True),
    ("batch", "v1", "jobs"): ("Job", True),
    ("", "v1", "resourcequotas"): ("ResourceQuota", True),
    ("node.k8s.io", "v1", "runtimeclasses"): ("RuntimeClass", False),
    ("coordination.k8s.io", "v1", "leases"): ("Lease", True),
    ("", "v1", "persistentvolumes"): ("PersistentVolume", False),
    ("", "v1", "persistentvolumeclaims"): ("PersistentVolumeClaim", True),
    ("storage.k8s.io", "v1", "storageclasses"): ("StorageClass", False),
    ("storage.k8s.io", "v1", "csinodes"): ("CSINode", False),
    ("storage.k8s.io", "v1", "csidrivers"): ("CSIDriver", False),
    ("storage.k8s.io", "v1", "csistoragecapacities"): ("CSIStorageCapacity", True),
    ("events.k8s.io", "v1", "events"): ("Event", True),
    ("topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"): ("NodeResourceTopology", False),
    ("scheduling.x-k8s.io", "v1alpha1", "podgroups"): ("PodGroup", True),
}
CRD_GROUPS = {"topology.node.k8s.io"}


@dataclass
class _Route:
    kind: str
    api_version: str
    namespaced: bool
    namespace: str | None
    name: str | None
    sub: str | None
    group: str


def strategic_merge(target: Any, patch: Any) -> Any:
    """Merge patch, except that lists of conditions merge by ``type`` (their patchMergeKey)."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return merge_patch(target, patch)
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif key == "conditions" and isinstance(value, list):
            merged = {c.get("type"): c for c in result.get(key) or []}
            order = [c.get("type") for c in result.get(key) or []]
            for cond in value:
                if cond.get("type") not in merged:
                    order.append(cond.get("type"))
                merged[cond.get("type")] = {**merged.get(cond.get("type"), {}), **cond}
            result[key] = [merged[t] for t in order]
        else:
            result[key] = strategic_merge(result.get(key), value)
    return result


class FakeApiServer:
    def __init__(self, *, bookmark_interval: float = 0.5, gone_as_http: bool = False, nrt: bool = False,
                 tls: ssl.SSLContext | None = None, token: str | None = None, idle_timeout: float | None = None,
                 ) -> None:
        self.lock = threading.RLock()
        self.history = History(threading.Condition(self.lock))
        self.store = ObjectStore(wall_clock)
        self.admission = Admission(self.store)
        self.store.watch(self)
        self.bookmark_interval = bookmark_interval
        self.gone_as_http = gone_as_http
        self.nrt = nrt
        self.faults: list[Fault] = []
        self.requests: list[Request] = []
        self.termination_delay: float | None = None
        self._snapshots: dict[str, tuple[int, list[Obj]]] = {}
        self._tokens = itertools.count(1)
        with self.lock:
            for ns in ("default", "kube-system"):
                self.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.idle_timeout = idle_timeout  # a kept-alive connection idle this long is closed by the server
        self.httpd = _QuietServer(("127.0.0.1", 0), _handler_class(self))
        self.httpd.daemon_threads = True
        self.tls = tls is not None
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        #: the bearer token every request must carry (None: any or none); others get 401
        self.token = token
        #: TCP connections the server has accepted
        self.connections = 0
        self._thread: threading.Thread | None = None

    # -- store watcher: the event history --------------------------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        self.history.append(int(obj["metadata"]["resourceVersion"]), "ADDED", kind, obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        self.history.append(int(new["metadata"]["resourceVersion"]), "MODIFIED", kind, new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        rv = self.store.resource_version
        final = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}
        self.history.append(rv, "DELETED", kind, final)

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> FakeApiServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), name="fakeapi", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self.lock:
            self.history.stopping = True
            self.history.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, directory: Path) -> str:
        path = directory / "kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: fake\n  cluster:\n    server: {self.url}\n"
            "users:\n- name: test\n  user:\n    token: test-token\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: test\n"
            "current-context: fake\n"
        )
        return str(path)

    # -- test controls ----------------------------------------------------------------------------
    def inject(self, fault: Fault) -> Fault:
        with self.lock:
            self.faults.append(fault)
        return fault

    def compact(self) -> None:
        """Forget the history so far: watches from an older resourceVersion get 410."""
        with self.lock:
            self.history.compacted_rv = self.store.resource_version

    def expire_watches(self) -> None:
        """Compact, then end every open watch with an ERROR 410 event."""
        with self.lock:
            self.compact()
            for stream in self.history.open_streams.values():
                stream.expired = True
            self.history.cond.notify_all()

    def drop_watches(self) -> int:
        """Cut every open watch connection without a word."""
        with self.lock:
            live = [s for s in self.history.open_streams.values() if not (s.dropped or s.expired)]
            for stream in live:
                stream.dropped = True
            self.history.cond.notify_all()
            return len(live)

    def pause_watches(self, paused: bool = True) -> None:
        with self.lock:
            self.history.paused = paused
            self.history.cond.notify_all()

    def open_watches(self, kind: str | None = None) -> int:
        with self.lock:
            return sum(1 for s in self.history.open_streams.values()
                       if (kind is None or s.kind == kind) and not (s.dropped or s.expired))

    # -- direct object access (the "other clients" of the cluster) --------------------------------
    def create(self, obj: Obj) -> Obj:
        with self.lock:
            return self.store.create(self.admission.admit_create(deep_copy(obj), wall_clock()))

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            return self.store.get(kind, namespace, name)

    def list(self, kind: str) -> list[Obj]:
        with self.lock:
            return self.store.list(kind)

    def patch(self, kind: str, namespace: str | None, name: str, merge: Obj) -> Obj:
        with self.lock:
            return self.store.patch(kind, namespace, name, merge)

    def remove(self, kind: str, namespace: str | None, name: str) -> Obj:
        with self.lock:
            return self.store.remove(kind, namespace, name)

    def finish_deletion(self, namespace: str, name: str) -> None:
        """The kubelet is done with a terminating pod: remove it."""
        with self.lock:
            if self.store.get("Pod", namespace, name) is not None:
                self.store.remove("Pod", namespace, name)

    def bind_directly(self, namespace: str, name: str, node: str) -> None:
        with self.lock:
            self.store.patch("Pod", namespace, name, {"spec": {"nodeName": node}})

    def requests_matching(self, method: str, pattern: str) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    # -- request handling -------------------------------------------------------------------------
    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        path, query = parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))
        agent = h.headers.get("User-Agent", "")
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        if self.token is not None and h.headers.get("Authorization") != f"Bearer {self.token}":
            self._record(method, path, query, agent, 401, body)
            h.send_json(401, status_body(401, "Unauthorized", "Unauthorized"))  # type: ignore[attr-defined]
            return
        fault: Fault | None = None
        with self.lock:
            for candidate in self.faults:
                if candidate.matches(method, path, agent):
                    candidate.hits += 1
                    fault = candidate
                    break
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.action is not None:
                fault.action(self)
            if fault.reset:
                self._record(method, path, query, agent, 0, body)
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault.status is not None and not fault.after:
                self._record(method, path, query, agent, fault.status, body)
                h.send_json(fault.status, status_body(fault.status, "Injected", "injected fault"),  # type: ignore[attr-defined]
                            retry_after=fault.retry_after)
                return
        try:
            if query.get("watch") in ("true", "1"):
                route = self._route(path)
                status = serve_watch(h, self.history, lambda: self.store.resource_version, route.kind,
                                     route.api_version, route.namespace, query, self.gone_as_http,
                                     self.bookmark_interval)
                self._record(method, path, query, agent, status, body)
                return
        except ApiError as err:
            status, payload = err.code, status_body(err.code, err.reason, err.message)
            self._record(method, path, query, agent, status, body)
            h.send_json(status, payload, retry_after=fault.retry_after if fault else None)  # type: ignore[attr-defined]
            return
        # the request is in the log before its write is made, and its status is filled in under the
        # same hold of the lock: whoever sees the write (a store watcher, a watch stream, a test
        # reading the store) finds the request logged, with the status it was answered
        with self.lock:
            entry = self._record(method, path, query, agent, 0, body)
            try:
                status, payload = self._dispatch(method, path, query, body, h.headers.get("Content-Type", ""))
            except ApiError as err:
                status, payload = err.code, status_body(err.code, err.reason, err.message)
            if fault is not None and fault.status is not None and fault.after:
                status, payload = fault.status, status_body(fault.status, "Injected", "injected fault after the write")
            self.requests[entry] = replace(self.requests[entry], status=status)
        h.send_json(status, payload, retry_after=fault.retry_after if fault else None)  # type: ignore[attr-defined]

    def _record(self, method: str, path: str, query: dict[str, str], agent: str, status: int, body: Any) -> int:
        """Log a request; returns its index in :attr:`requests`."""
        with self.lock:
            self.requests.append(Request(time.monotonic(), method, path, query, agent, status, body))
            return len(self.requests) - 1

    def _route(self, path: str) -> _Route:
        segments = [unquote(s) for s in path.strip("/").split("/")]
        if segments[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", segments[2:]
        elif segments[0] == "apis" and len(segments) >= 3:
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        key = (group, version, rest[0])
        if key not in RESOURCES or (group in CRD_GROUPS and not self.nrt):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        kind, namespaced = RESOURCES[key]
        api_version = f"{group}/{version}" if group else version
        return _Route(kind, api_version, namespaced, namespace, rest[1] if len(rest) > 1 else None,
                      rest[2] if len(rest) > 2 else None, group)

    def _dispatch(self, method: str, path: str, query: dict[str, str], body: Any,
                  content_type: str) -> tuple[int, Any]:
        segments = path.strip("/").split("/")
        if segments[0] == "apis" and len(segments) == 3:
            return self._discovery(segments[1], segments[2])
        r = self._route(path)
        with self.lock:
            if r.name is None:
                if method == "GET":
                    return 200, self._list(r, query)
                if method == "POST":
                    return 201, self._create(r, body)
            elif r.sub is None:
                if method == "GET":
                    return 200, self._get(r)
                if method == "PUT":
                    return 200, self._replace(r, body)
                if method == "PATCH":
                    return 200, self._patch(r, body, content_type, status_only=False)
                if method == "DELETE":
                    return 200, self._delete(r, body or {})
            elif r.kind == "Pod" and r.sub == "binding" and method == "POST":
                return 201, self._bind(r, body)
            elif r.sub == "status" and method == "PATCH":
                return 200, self._patch(r, body, content_type, status_only=True)
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {path}")

    def _discovery(self, group: str, version: str) -> tuple[int, Any]:
        found = [(p, k, ns) for (g, v, p), (k, ns) in RESOURCES.items() if g == group and v == version]
        if not found or (group in CRD_GROUPS and not self.nrt):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
                     "resources": [{"name": p, "namespaced": ns, "kind": k} for p, k, ns in found]}

    def _list(self, r: _Route, query: dict[str, str]) -> Obj:
        token = query.get("continue")
        limit = int(query.get("limit") or 0)
        if token:
            if token not in self._snapshots:
                raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                               "consistent list result. You can start a new list without the continue parameter.")
            rv, items = self._snapshots.pop(token)
            if rv < self.history.compacted_rv:
                raise ApiError(410, "Expired", "The provided continue parameter is too old.")
        else:
            rv = self.store.resource_version
            objs = [o for o in self.store.list(r.kind)
                    if r.namespace is None or o["metadata"].get("namespace") == r.namespace]
            objs.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in objs]
        meta: Obj = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            rest_token = f"t{next(self._tokens)}"
            self._snapshots[rest_token] = (rv, items[limit:])
            items = items[:limit]
            meta["continue"] = rest_token
        return {"kind": f"{r.kind}List", "apiVersion": r.api_version, "metadata": meta, "items": items}

    def _get(self, r: _Route) -> Obj:
        assert r.name is not None
        obj = self.store.get(r.kind, r.namespace, r.name)
        if obj is None:
            raise ApiError(404, "NotFound", f'{r.kind.lower()}s "{r.name}" not found')
        return obj

    def _create(self, r: _Route, body: Obj) -> Obj:
        obj = deep_copy(body)
        obj.setdefault("kind", r.kind)
        obj.setdefault("apiVersion", r.api_version)
        if r.namespaced:
            obj.setdefault("metadata", {})["namespace"] = r.namespace or "default"
        if r.kind in ("Pod", "PriorityClass"):
            obj = self.admission.admit_create(obj, wall_clock())
        return self.store.create(obj)

    def _replace(self, r: _Route, body: Obj) -> Obj:
        current = self._get(r)
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {r.kind.lower()}s "{r.name}": the '
                           "object has been modified; please apply your changes to the latest version and try again")
        new = deep_copy(body)
        new["kind"], new["apiVersion"] = r.kind, r.api_version
        new["metadata"] = {**new.get("metadata", {}), **{k: current["metadata"][k] for k in (
            "uid", "creationTimestamp", "namespace") if k in current["metadata"]}}
        return self.store.update(new)

    def _patch(self, r: _Route, body: Obj, content_type: str, status_only: bool) -> Obj:
        current = self._get(r)
        if "strategic-merge-patch" in content_type:
            merge: Callable[[Any, Any], Any] = strategic_merge
        elif "merge-patch" in content_type:
            merge = merge_patch
        else:
            raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {content_type}")
        if status_only:
            new = {**current, "status": merge(current.get("status") or {}, (body or {}).get("status") or {})}
        else:
            new = merge(current, body or {})
        if new == current:
            return current
        return self.store.update(new)

    def _bind(self, r: _Route, body: Obj) -> Obj:
        pod = self._get(r)
        uid = ((body or {}).get("metadata") or {}).get("uid")
        prefix = f'Operation cannot be fulfilled on pods/binding "{r.name}": '
        if uid and uid != pod["metadata"].get("uid"):
            raise ApiError(409, "Conflict", prefix + f"Precondition failed: UID in precondition: {uid}, "
                           f"UID in object meta: {pod['metadata'].get('uid')}")
        if pod["metadata"].get("deletionTimestamp"):
            raise ApiError(409, "Conflict", prefix + f"pod {r.name} is being deleted, cannot be assigned to a host")
        if (pod.get("spec") or {}).get("nodeName"):
            raise ApiError(409, "Conflict", prefix + f'pod {r.name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        node = ((body or {}).get("target") or {}).get("name")
        condition = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": rfc3339(int(wall_clock()))}
        new = {**pod, "spec": {**pod["spec"], "nodeName": node},
               "status": strategic_merge(pod.get("status") or {}, {"conditions": [condition]})}
        self.store.update(new)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _delete(self, r: _Route, options: Obj) -> Obj:
        current = self._get(r)
        uid = (options.get("preconditions") or {}).get("uid")
        if uid and uid != current["metadata"].get("uid"):
            raise ApiError(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, "
                           f"UID in object meta: {current['metadata'].get('uid')}")
        assert r.name is not None
        if r.kind != "Pod":
            return self.store.remove(r.kind, r.namespace, r.name)
        if current["metadata"].get("deletionTimestamp"):
            return current
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = (current.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        bound = bool((current.get("spec") or {}).get("nodeName"))
        if not bound or grace <= 0 or (current.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return self.store.remove("Pod", r.namespace, r.name)
        meta = {**current["metadata"], "deletionTimestamp": rfc3339(int(wall_clock()) + int(grace)),
                "deletionGracePeriodSeconds": int(grace)}
        terminating = self.store.update({**current, "metadata": meta})
        if self.termination_delay is not None:
            timer = threading.Timer(self.termination_delay, self.finish_deletion, (r.namespace or "default", r.name))
            timer.daemon = True
            timer.start()
        return terminating


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, OSError)):
            super().handle_error(request, client_address)


def _handler_class(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as Go's net/http: no 40 ms delayed-ACK stalls

        def setup(self) -> None:
            self.timeout = server.idle_timeout
            with server.lock:
                server.connections += 1
            super().setup()

        def send_json(self, status: int, payload: Any, retry_after: float | None = None) -> None:
            data = json.dumps(payload, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if retry_after is not None:
                self.send_header("Retry-After", f"{retry_after:g}")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            server.handle(self, "GET")

        def do_POST(self) -> None:  # noqa: N802
            server.handle(self, "POST")

        def do_PUT(self) -> None:  # noqa: N802
            server.handle(self, "PUT")

        def do_PATCH(self) -> None:  # noqa: N802
            server.handle(self, "PATCH")

        def do_DELETE(self) -> None:  # noqa: N802
            server.handle(self, "DELETE")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


__all__ = ["FakeApiServer", "Fault", "Request"]
