"""``kubesched run`` (or any other scheduler command, such as kube-scheduler) against a real API
server: pods/s and the scheduler process's CPU seconds, for scheduler_perf-shaped workloads.

The API server is yours (a kubeconfig whose user may create nodes, pods, namespaces, service
accounts and PriorityClasses, and delete pods); nothing here builds or downloads anything. Each run:

1. creates the nodes (4 CPU / 32Gi / 110 pods, Ready, labels ``kubernetes.io/hostname``,
   ``kubernetes.io/os``, ``kubernetes.io/arch``, no taints; objects only, there is no kubelet) and
   the workload's pods, in a namespace of its own (with its ``default`` ServiceAccount, which
   admission needs and which no controller-manager creates here);
2. starts the scheduler as a subprocess, with a KubeSchedulerConfiguration written for it (one
   profile, ``default-scheduler``; ``clientConnection`` kubeconfig / QPS / burst; leader election off);
3. watches the pods and stamps, on this machine's monotonic clock, the scheduler's first visible
   action (its first write to a pod: a binding, a status patch or a deletion) and each measured
   pod's binding. **pods/s = measured pods / (last binding - first action)**, which leaves out the
   scheduler's start-up (process start, informer lists) as far as one can see from outside; the
   time from the process start is reported too. CPU seconds are the scheduler process's
   ``utime + stime`` (``/proc/PID/stat``) over the same window and from its start; the share of
   the machine's cores busy over the window, and how much of that no watched process used
   (``--cpu-pid`` the API server and etcd: a large "unaccounted" figure means other load, such as
   a noisy VM neighbour, disturbed the run);
4. stops the scheduler (SIGTERM), checks the result (every measured pod bound, no node over its
   allocatable CPU, pods bound to a node that does not exist, how many victims were deleted), and
   deletes what it created.

Workloads (upstream scheduler_perf's shapes):

- ``basic`` (SchedulingBasic): ``--pods`` pods of 100m / 500Mi, all created before the scheduler starts.
- ``preemption`` (PreemptionBasic): four low-priority pods of 900m / 500Mi per node, created already
  bound (``spec.nodeName``, priority 0, ``terminationGracePeriodSeconds: 0``), then one pod of
  3000m / 500Mi per node (PriorityClass value 10), each of which must preempt three low pods.

- ``volume``: local PersistentVolumes bound on first consumer (see ``kube_real_volume.py``): two
  volumes on every node, and pods whose claims select one node's volumes, so that each pod has one
  node it can go to (and some none: upstream's messages for those are compared). The
  PersistentVolume controller must run beside the API server (kube-controller-manager
  ``--controllers=persistentvolume-binder,pvc-protection,pv-protection``): the scheduler's PreBind
  waits for it. ``--pods N`` gives pods to the volumes of the first N nodes only. ``--outcome FILE``
  writes where every pod went, which volume every claim got and the scheduler's events, and
  ``--compare A B`` tells whether two runs (kubesched's and kube-scheduler's) left the same.

With no kubelet, a deleted pod that is bound and has a grace period stays terminating for ever (one
with ``terminationGracePeriodSeconds: 0``, as the low pods here, is deleted at once by the API
server); ``--reap`` (the default) plays the kubelet's part: a pod still terminating ``--reap-after``
seconds after it was seen so is deleted with ``gracePeriodSeconds: 0``. The report says how many
deletions it had to finish.

The pods declare ``containerPort: 80`` (no hostPort) as upstream's templates do;
``--no-container-port`` leaves it out.

Examples::

    # kubesched from this checkout (python -m kubesched run, PYTHONPATH=src)
    .venv/bin/python benchmarks/kube_real.py --kubeconfig /path/kubeconfig --workload basic --nodes 1000 --pods 5000
    # another scheduler, same config file ({config} and {kubeconfig} are substituted)
    .venv/bin/python benchmarks/kube_real.py --kubeconfig K --workload preemption --nodes 500 \\
        --scheduler-cmd '/path/kube-scheduler --config {config} --authentication-kubeconfig {kubeconfig} \\
                         --authorization-kubeconfig {kubeconfig} --secure-port 10259 --bind-address 127.0.0.1'
    # volumes: the same input for both schedulers (each on a fresh API server), then compare what they left
    .venv/bin/python benchmarks/kube_real.py --kubeconfig K --workload volume --nodes 1000 --pods 100 --outcome ks.json
    .venv/bin/python benchmarks/kube_real.py --kubeconfig K --workload volume --nodes 1000 --pods 100 \\
        --outcome kube-scheduler.json --scheduler-cmd '...'
    .venv/bin/python benchmarks/kube_real.py --compare ks.json kube-scheduler.json

``--timeline`` records, every second, the pods bound and the ``429 Too Many Requests`` answers the
API server has given (its ``/metrics``), and the run's 429s by call kind (``kube_real_timeline.py``).
The API server's in-flight limits never apply to a ``system:masters`` user: to measure a scheduler
under them, give it credentials of its own with ``--scheduler-kubeconfig`` (the driver keeps
``--kubeconfig``).

Run it on a cluster where no other scheduler is running (the pods use ``default-scheduler``), and on
a fresh API server or after the previous run's cleanup. ``--json FILE`` appends the result as a
JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import kube_real_volume as volume_workload
from kube_real_timeline import Sampler, scraper

from kubesched.api.quantity import parse_quantity
from kubesched.testkit.builders import make_container, make_node, make_pod

NAMESPACE = "kube-real-bench"
HIGH_PRIORITY_CLASS = "kube-real-bench-high"
NODE_LABEL = "kube-real-bench"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SRC = Path(__file__).resolve().parents[1] / "src"


# -- the API, through the official client's transport --------------------------------------------
class Api:
    """Raw JSON requests with the kubeconfig's credentials (the official client's ApiClient), no
    model decoding: the driver must stay cheap next to the scheduler it measures."""

    def __init__(self, kubeconfig: str, pool: int = 16) -> None:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg, persist_config=False)
        cfg.connection_pool_maxsize = pool
        if not cfg.verify_ssl:  # a kubeconfig with insecure-skip-tls-verify: said once, not per request
            import urllib3

            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        self.client = client.ApiClient(cfg)

    def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                ok: tuple[int, ...] = (), stream: bool = False, timeout: float = 60.0,
                content_type: str = "application/json") -> Any:
        """JSON of the answer (None for a status in ``ok``); with ``stream``, the open urllib3 response.
        A 429 is tried again after its ``Retry-After``."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        m, url, hdrs, payload, post = self.client.param_serialize(
            method, path, query_params=list((query or {}).items()) or None, header_params=headers, body=body,
            auth_settings=["BearerToken"])
        for _ in range(60):  # an API server with tight in-flight limits turns the driver away too: wait as told
            raw = self.client.call_api(m, url, hdrs, payload, post,
                                       _request_timeout=(10.0, None) if stream else (10.0, timeout)).response
            status = int(raw.status)
            if status != 429:
                break
            raw.release_conn()
            time.sleep(float(raw.headers.get("Retry-After") or 1))
        if stream and 200 <= status < 300:
            return raw
        try:
            data = raw.data
        finally:
            raw.release_conn()
        if status in ok:
            return None
        if not 200 <= status < 300:
            raise RuntimeError(f"{method} {path}: {status}: {data[:300]!r}")
        return json.loads(data) if data else None

    def list_all(self, path: str, query: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
        items: list[dict[str, Any]] = []
        params = dict(query or {}, limit=500)
        while True:
            page = self.request("GET", path, query=params)
            items += page.get("items") or []
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return items, page["metadata"]["resourceVersion"]
            params["continue"] = cont


def node_object(name: str) -> dict[str, Any]:
    node = make_node(name, labels={"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", NODE_LABEL: "true"},
                     spec={})
    node["status"].update(phase="Running", conditions=[{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                        "message": "no kubelet: a benchmark node"}])
    return node


def pod_object(name: str, cpu: str, memory: str, *, node: str | None = None, priority_class: str | None = None,
               grace: int | None = None, container_port: bool = True) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    # as upstream's templates: a containerPort, no hostPort
    container = make_container("pause", image="registry.k8s.io/pause:3.9", requests=requests, limits=requests,
                               ports=[{"containerPort": 80}] if container_port else None)
    return make_pod(name, namespace=NAMESPACE, containers=[container], node=node, priority_class=priority_class,
                    grace=grace, scheduler_name="default-scheduler", automountServiceAccountToken=False)


def cpu_millis(quantity: str) -> int:
    return int(parse_quantity(quantity) * 1000)


def machine_cpu() -> tuple[float, float, float]:
    """(busy, steal, total) jiffies of all cores, from /proc/stat."""
    values = [float(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, steal = values[3] + values[4], values[7] if len(values) > 7 else 0.0
    total = sum(values[:8])
    return total - idle - steal, steal, total


def process_cpu(pid: int) -> float | None:
    """utime + stime of a live process, in seconds (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


# -- the watch -----------------------------------------------------------------------------------
@dataclass
class Observed:
    first_action: float | None = None
    first_action_cpu: dict[str, float | None] = field(default_factory=dict)
    first_action_machine: tuple[float, float, float] = (0.0, 0.0, 0.0)
    bound_at: dict[str, float] = field(default_factory=dict)
    node_of: dict[str, str] = field(default_factory=dict)
    rebinds: list[str] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)
    terminating_seen: set[str] = field(default_factory=set)
    status_patches: int = 0
    events: int = 0


class PodWatcher(threading.Thread):
    """Watches the namespace's pods from ``resource_version``; stamps the scheduler's first action and
    each binding; hands pods seen terminating to ``reap`` (when given)."""

    def __init__(self, api: Api, resource_version: str, measured: set[str], cpu_pids: dict[str, int],
                 reap: queue.Queue[tuple[float, str, str] | None] | None) -> None:
        super().__init__(daemon=True, name="pod-watch")
        self.api, self.rv, self.measured, self.reap = api, resource_version, measured, reap
        self.cpu_pids = cpu_pids
        self.seen = Observed()
        self.all_bound = threading.Event()
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        while not self.stop.is_set():
            try:
                resp = self.api.request("GET", path, stream=True, query={
                    "watch": "true", "resourceVersion": self.rv, "allowWatchBookmarks": "true",
                    "timeoutSeconds": 300})
                buffer = b""
                for chunk in resp.stream(65536, decode_content=True):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            self._event(json.loads(line))
                    if self.stop.is_set():
                        break
                resp.release_conn()
            except Exception as err:  # noqa: BLE001 - a broken watch is resumed from its last version
                if self.stop.is_set():
                    return
                print(f"watch: {err!r}; resuming from {self.rv}", file=sys.stderr, flush=True)
                time.sleep(0.2)

    def _event(self, event: dict[str, Any]) -> None:
        now = time.monotonic()
        kind, obj = event["type"], event["object"]
        meta = obj.get("metadata") or {}
        if meta.get("resourceVersion"):
            self.rv = meta["resourceVersion"]
        if kind == "BOOKMARK":
            return
        if kind == "ERROR":
            raise RuntimeError(f"watch error: {obj}")
        name = meta["name"]
        node = (obj.get("spec") or {}).get("nodeName")
        with self.lock:
            seen = self.seen
            seen.events += 1
            if seen.first_action is None:  # nothing but the scheduler writes pods before this
                seen.first_action = now
                seen.first_action_cpu = {k: process_cpu(pid) for k, pid in self.cpu_pids.items()}
                seen.first_action_machine = machine_cpu()
            if kind == "DELETED":
                seen.deleted.add(name)
                return
            if meta.get("deletionTimestamp") and name not in seen.terminating_seen:
                seen.terminating_seen.add(name)
                if self.reap is not None:
                    self.reap.put((now, name, meta["uid"]))
            if name in self.measured and node:
                if name not in seen.bound_at:
                    seen.bound_at[name] = now
                    seen.node_of[name] = node
                    if len(seen.bound_at) == len(self.measured):
                        self.all_bound.set()
                    return
                if seen.node_of[name] != node:
                    seen.rebinds.append(f"{name}: {seen.node_of[name]} -> {node}")
                    seen.node_of[name] = node
            elif kind == "MODIFIED":
                seen.status_patches += 1


def reaper(api: Api, work: queue.Queue[tuple[float, str, str] | None], gone: Callable[[str], bool], after: float,
           done: list[int]) -> None:
    """The kubelet's last step: finish the deletion of a pod still terminating ``after`` seconds after
    it was first seen so (grace 0, same UID). A pod the API server deletes at once (grace 0) passes
    through a terminating state first, which this leaves alone."""
    while (item := work.get()) is not None:
        seen_at, name, uid = item
        time.sleep(max(0.0, seen_at + after - time.monotonic()))
        if gone(name):
            continue
        answer = api.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", ok=(404, 409),
                             body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                   "preconditions": {"uid": uid}})
        if answer is not None:
            done[0] += 1


# -- one run -------------------------------------------------------------------------------------
@dataclass
class Result:
    scheduler: str
    workload: str
    nodes: int
    measured_pods: int
    bound: int = 0
    seconds: float = 0.0  # first action -> last binding
    pods_per_second: float = 0.0
    startup_seconds: float = 0.0  # process start -> first action
    seconds_from_start: float = 0.0
    cpu_seconds: float = 0.0  # scheduler process, first action -> last binding
    cpu_seconds_from_start: float = 0.0
    other_cpu_seconds: dict[str, float] = field(default_factory=dict)
    #: share of the machine's cores busy (and stolen by the hypervisor) over the measured window
    machine_busy: float = 0.0
    machine_steal: float = 0.0
    #: busy core-seconds of the machine in the window not used by the scheduler or the ``--cpu-pid``
    #: processes (nor this driver): other load, or a hypervisor's that the guest counts as busy
    unaccounted_cpu_seconds: float = 0.0
    #: bindings in each whole second after the first action (scheduler_perf's SchedulingThroughput)
    throughput_samples: list[int] = field(default_factory=list)
    victims_deleted: int = 0
    reaped: int = 0
    status_patches: int = 0
    rebinds: list[str] = field(default_factory=list)
    overcommitted_nodes: int = 0
    bound_to_missing_nodes: int = 0
    exit_code: int | None = None
    error: str = ""
    #: with ``--timeline``: ``[seconds from the scheduler's start, pods bound, API server 429s so far]``
    #: once a second, and the run's 429 answers by call kind (see kube_real_timeline.py)
    timeline: list[list[float]] = field(default_factory=list)
    rejected_429: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        head = f"{self.scheduler:<14} {self.workload:<10} {self.nodes:>5} nodes {self.bound:>5}/{self.measured_pods} bound"
        others = " ".join(f"{k} {v:.1f}" for k, v in self.other_cpu_seconds.items())
        return (f"{head}  {self.seconds:7.2f} s  {self.pods_per_second:7.1f} pods/s  CPU {self.cpu_seconds:6.1f} s "
                f"(from start {self.seconds_from_start:.1f} s wall, {self.cpu_seconds_from_start:.1f} s CPU; "
                f"start-up {self.startup_seconds:.1f} s)"
                f"  victims {self.victims_deleted}  reaped {self.reaped}"
                + (f"  per second p50 {percentile(self.throughput_samples, 0.5):.0f} "
                   f"p90 {percentile(self.throughput_samples, 0.9):.0f}" if self.throughput_samples else "")
                + f"  machine busy {self.machine_busy:.0%} (unaccounted {self.unaccounted_cpu_seconds:.1f} s"
                + (f", steal {self.machine_steal:.0%})" if self.machine_steal else ")")
                + (f"  other CPU: {others}" if others else "")
                + (f"  REBINDS {len(self.rebinds)}" if self.rebinds else "")
                + (f"  OVERCOMMITTED {self.overcommitted_nodes}" if self.overcommitted_nodes else "")
                + (f"  BOUND TO MISSING NODES {self.bound_to_missing_nodes}" if self.bound_to_missing_nodes else "")
                + (f"  429s {sum(self.rejected_429.values())}" if self.timeline else "")
                + (f"  ERROR {self.error}" if self.error else ""))


def scheduler_config(kubeconfig: str, qps: float, burst: int) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": kubeconfig, "qps": qps, "burst": burst},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": "default-scheduler"}]}


def kubesched_command(config: str, qps: float, burst: int, log_level: str, port: int = 0,
                      feature_gates: str = "") -> list[str]:
    return [sys.executable, "-m", "kubesched", "run", "--config", config, "--kube-api-qps", f"{qps:g}",
            "--kube-api-burst", str(burst), "--no-leader-elect", "--port", str(port), "--bind-address", "127.0.0.1",
            "--log-format", "text",
            "--log-level", log_level] + (["--feature-gates", feature_gates] if feature_gates else [])


def create_all(api: Api, path: str, objects: list[dict[str, Any]], threads: int = 8) -> None:
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(lambda o: api.request("POST", path, body=o), objects):
            pass


def setup(api: Api, workload: str, nodes: int, pods: int, container_port: bool = True) -> set[str]:
    """Create the namespace, nodes and pods; return the names of the measured pods."""
    api.request("POST", "/api/v1/namespaces", ok=(409,),
                body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", ok=(409,),
                body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    node_names = [f"bench-node-{i}" for i in range(nodes)]
    create_all(api, "/api/v1/nodes", [node_object(n) for n in node_names])
    # admission (TaintNodesByCondition) gives a new node the not-ready taint, which the node lifecycle
    # controller takes away once the node is Ready; with no controller-manager, do it here
    with ThreadPoolExecutor(8) as pool:
        for _ in pool.map(lambda n: api.request("PATCH", f"/api/v1/nodes/{n}", body={"spec": {"taints": None}},
                                                 content_type="application/merge-patch+json"), node_names):
            pass
    pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    if workload == "volume":
        return setup_volumes(api, node_names, pods, container_port)
    if workload == "basic":
        measured = [pod_object(f"pod-{i}", "100m", "500Mi", container_port=container_port) for i in range(pods)]
    else:
        api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", ok=(409,),
                    body={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                          "metadata": {"name": HIGH_PRIORITY_CLASS}, "value": 10})
        low = [pod_object(f"low-{i}-{j}", "900m", "500Mi", node=n, grace=0, container_port=container_port)
               for i, n in enumerate(node_names) for j in range(4)]
        create_all(api, pods_path, low)
        measured = [pod_object(f"high-{i}", "3000m", "500Mi", priority_class=HIGH_PRIORITY_CLASS,
                               container_port=container_port) for i in range(pods)]
    create_all(api, pods_path, measured)
    return {p["metadata"]["name"] for p in measured}


def setup_volumes(api: Api, node_names: list[str], pod_nodes: int, container_port: bool) -> set[str]:
    """The volume workload's classes, volumes, claims and pods (see kube_real_volume.py): volumes on
    every node, pods for the first ``pod_nodes`` nodes' volumes."""
    volumes, claims, pods, bindable = volume_workload.volume_objects(
        node_names, lambda name: pod_object(name, "100m", "500Mi", container_port=container_port), pod_nodes)
    for storage_class in volume_workload.storage_classes():
        api.request("POST", "/apis/storage.k8s.io/v1/storageclasses", body=storage_class, ok=(409,))
    create_all(api, "/api/v1/persistentvolumes", volumes)
    create_all(api, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims", claims)
    # the claims bound ahead of time are bound by the PersistentVolume controller; until it has, a
    # scheduler would see them as unbound immediate claims, and the outcome would depend on the race
    prebound = {c["metadata"]["name"] for c in claims if c["spec"].get("volumeName")}
    deadline = time.monotonic() + 300
    while prebound:
        listed, _ = api.list_all(f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims")
        prebound -= {c["metadata"]["name"] for c in listed if (c.get("status") or {}).get("phase") == "Bound"}
        if not prebound:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{len(prebound)} claims bound ahead of time are still not Bound: "
                             "is kube-controller-manager's persistentvolume-binder running?")
        time.sleep(0.5)
    create_all(api, f"/api/v1/namespaces/{NAMESPACE}/pods", pods)
    return bindable


def check(api: Api, result: Result) -> None:
    """Nodes over their allocatable CPU, pods bound to nodes that do not exist."""
    nodes, _ = api.list_all("/api/v1/nodes", {"labelSelector": NODE_LABEL})
    allocatable = {n["metadata"]["name"]: cpu_millis(n["status"]["allocatable"]["cpu"]) for n in nodes}
    pods, _ = api.list_all(f"/api/v1/namespaces/{NAMESPACE}/pods")
    used: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if not node:
            continue
        if node not in allocatable:
            result.bound_to_missing_nodes += 1
        used[node] = used.get(node, 0) + sum(cpu_millis(c["resources"]["requests"]["cpu"])
                                             for c in pod["spec"]["containers"])
    result.overcommitted_nodes = sum(1 for n, m in used.items() if m > allocatable.get(n, 0))


def cleanup(api: Api) -> None:
    now = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    api.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods", body=now, timeout=600)
    # claims and volumes keep their protection finalizers while no controller-manager removes them
    for path in (f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims", "/api/v1/persistentvolumes"):
        api.request("DELETE", path, body=now, timeout=600)
        for item in api.list_all(path)[0]:
            if item["metadata"].get("finalizers"):
                api.request("PATCH", f"{path}/{item['metadata']['name']}", body={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json", ok=(404,))
    for storage_class in volume_workload.storage_classes():
        api.request("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{storage_class['metadata']['name']}", ok=(404,))
    api.request("DELETE", "/api/v1/nodes", query={"labelSelector": NODE_LABEL}, timeout=600)


def run(args: argparse.Namespace) -> Result:
    api = Api(args.kubeconfig)
    existing, _ = api.list_all(f"/api/v1/namespaces/{NAMESPACE}/pods")
    if existing:
        raise SystemExit(f"{len(existing)} pods left in {NAMESPACE} by an earlier run: run with --cleanup-only first")
    pods = args.pods if args.workload == "basic" else (args.pods or args.nodes)
    result = Result(args.name, args.workload, args.nodes, pods)
    t0 = time.monotonic()
    measured = setup(api, args.workload, args.nodes, pods, args.container_port)
    pods = result.measured_pods = len(measured)
    print(f"created {args.nodes} nodes and the pods in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    _, rv = api.list_all(f"/api/v1/namespaces/{NAMESPACE}/pods", {"limit": 1})

    workdir = Path(tempfile.mkdtemp(prefix="kube-real-"))
    config = workdir / "config.yaml"
    scheduler_kubeconfig = Path(args.scheduler_kubeconfig or args.kubeconfig).resolve()
    config.write_text(json.dumps(scheduler_config(str(scheduler_kubeconfig), args.qps, args.burst), indent=1))
    if args.scheduler_cmd:
        command = shlex.split(args.scheduler_cmd.format(config=config, kubeconfig=scheduler_kubeconfig))
    else:
        command = kubesched_command(str(config), args.qps, args.burst, args.log_level, args.kubesched_port,
                                    args.feature_gates)
    env = dict(os.environ)
    if not args.scheduler_cmd:
        env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    log_path = Path(args.log) if args.log else workdir / "scheduler.log"

    reap_queue: queue.Queue[tuple[float, str, str] | None] | None = queue.Queue() if args.reap else None
    reaped = [0]
    reapers: list[threading.Thread] = []
    sampler: Sampler | None = None
    with open(log_path, "wb") as log:
        if args.timeline:  # the counters before the scheduler starts, to subtract
            sampler = Sampler(scraper(api), lambda: _bound_count(watcher))
        started = time.monotonic()
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        cpu_pids = {"scheduler": proc.pid, **args.cpu_pid, "driver": os.getpid()}
        watcher = PodWatcher(api, rv, measured, cpu_pids, reap_queue)
        watcher.start()
        if sampler is not None:
            sampler.started = started
            sampler.start()
        if reap_queue is not None:
            reap_api = Api(args.kubeconfig, pool=4)

            def gone(name: str) -> bool:
                with watcher.lock:
                    return name in watcher.seen.deleted

            reapers = [threading.Thread(target=reaper, args=(reap_api, reap_queue, gone, args.reap_after, reaped),
                                        daemon=True) for _ in range(4)]
            for t in reapers:
                t.start()
        try:
            deadline = started + args.timeout
            while not watcher.all_bound.wait(0.05):
                if proc.poll() is not None:
                    result.error = f"scheduler exited with {proc.returncode} before binding every pod"
                    break
                if time.monotonic() > deadline:
                    result.error = f"timeout: not every pod bound after {args.timeout:g} s"
                    break
            end = time.monotonic()
            end_cpu = {k: process_cpu(pid) for k, pid in cpu_pids.items()}
            end_machine = machine_cpu()
            if args.metrics_url:
                save_metrics(api, args.metrics_url, args.metrics_out or str(workdir / "metrics.txt"))
            time.sleep(args.settle)  # what the scheduler still does (events, deletions) is checked too
        finally:
            if sampler is not None:
                sampler.stop.set()
                sampler.join(30)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            result.exit_code = proc.returncode
            watcher.stop.set()
            if reap_queue is not None:
                for _ in reapers:
                    reap_queue.put(None)
                for t in reapers:
                    t.join(30)

    seen = watcher.seen
    with watcher.lock:
        result.bound = len(seen.bound_at)
        if seen.first_action is not None and seen.bound_at:
            last = max(seen.bound_at.values()) if result.bound == pods else end
            result.seconds = last - seen.first_action
            result.pods_per_second = result.bound / result.seconds if result.seconds > 0 else 0.0
            result.startup_seconds = seen.first_action - started
            result.seconds_from_start = last - started
            result.throughput_samples = per_second(seen.first_action, list(seen.bound_at.values()))
        first_cpu = seen.first_action_cpu
        span = end_machine[2] - seen.first_action_machine[2]
        if span > 0 and seen.first_action is not None:
            result.machine_busy = round((end_machine[0] - seen.first_action_machine[0]) / span, 3)
            result.machine_steal = round((end_machine[1] - seen.first_action_machine[1]) / span, 3)
        if end_cpu.get("scheduler") is not None:
            result.cpu_seconds_from_start = end_cpu["scheduler"] or 0.0
            result.cpu_seconds = result.cpu_seconds_from_start - (first_cpu.get("scheduler") or 0.0)
        result.other_cpu_seconds = {k: round((end_cpu[k] or 0.0) - (first_cpu.get(k) or 0.0), 2)
                                    for k in cpu_pids if k != "scheduler" and end_cpu.get(k) is not None}
        if span > 0 and seen.first_action is not None:
            busy_seconds = (end_machine[0] - seen.first_action_machine[0]) / CLOCK_TICKS
            result.unaccounted_cpu_seconds = round(
                busy_seconds - result.cpu_seconds - sum(result.other_cpu_seconds.values()), 2)
        result.victims_deleted = len(seen.deleted - measured)
        result.reaped = reaped[0]
        result.status_patches = seen.status_patches
        result.rebinds = list(seen.rebinds)
        lost = measured & seen.deleted
        if lost:
            result.error += f" {len(lost)} measured pods deleted"
    if sampler is not None:
        result.timeline = sampler.timeline.rows
        result.rejected_429 = sampler.timeline.by_kind
        print(sampler.timeline.table(), file=sys.stderr, flush=True)
    check(api, result)
    if args.outcome:
        with open(args.outcome, "w") as out:
            json.dump(volume_workload.outcome(lambda path: api.list_all(path)[0]), out, indent=1, sort_keys=True)
    if not args.keep:
        cleanup(api)
    result.cpu_seconds = round(result.cpu_seconds, 2)
    result.cpu_seconds_from_start = round(result.cpu_seconds_from_start, 2)
    print(f"scheduler log: {log_path}", file=sys.stderr, flush=True)
    return result


def _bound_count(watcher: PodWatcher) -> int:
    with watcher.lock:
        return len(watcher.seen.bound_at)


def per_second(start: float, times: list[float]) -> list[int]:
    """How many of ``times`` fall in each whole second after ``start`` (the last, partial second left out)."""
    if not times:
        return []
    counts = [0] * (int(max(times) - start) + 1)
    for t in times:
        counts[int(t - start)] += 1
    return counts[:-1] if len(counts) > 1 else counts


def percentile(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else 0.0


def save_metrics(api: Api, url: str, path: str) -> None:
    """GET the scheduler's Prometheus metrics (with the kubeconfig's bearer token when it has one;
    TLS not verified: a scheduler's serving certificate is usually self-signed) into ``path``."""
    import urllib3

    headers = {}
    token = api.client.configuration.api_key.get("authorization")
    if token:
        headers["Authorization"] = token
    try:
        answer = urllib3.PoolManager(cert_reqs="CERT_NONE").request("GET", url, headers=headers, timeout=10.0)
        Path(path).write_bytes(answer.data)
    except urllib3.exceptions.HTTPError as err:
        print(f"metrics: {err}", file=sys.stderr)


def _cpu_pid(text: str) -> tuple[str, int]:
    name, _, pid = text.partition("=")
    return name, int(pid)


def compare_outcomes(path_a: str, path_b: str) -> int:
    with open(path_a) as a, open(path_b) as b:
        outcome_a, outcome_b = json.load(a), json.load(b)
    lines = volume_workload.differences(outcome_a, outcome_b, (path_a, path_b))
    for line in lines:
        print(line)
    pods, claims = outcome_a.get("pods") or {}, outcome_a.get("claims") or {}
    print(f"{len(lines)} differences over {len(pods)} pods ({sum(1 for n in pods.values() if n)} bound), "
          f"{len(claims)} claims ({sum(1 for v, _ in claims.values() if v)} bound to a volume) "
          f"and the events of {len(outcome_a.get('events') or {})} pods")
    return 1 if lines else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig")
    parser.add_argument("--scheduler-kubeconfig", default="",
                        help="the scheduler's kubeconfig (default: --kubeconfig). The API server's in-flight limits "
                             "never turn away a user of the system:masters group: to see 429s, give the scheduler "
                             "a user of its own, e.g. system:kube-scheduler")
    parser.add_argument("--workload", choices=["basic", "preemption", "volume"], default="basic")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=0,
                        help="measured pods (basic: required; preemption: default one per node); volume: "
                             "pods for the volumes of this many nodes (default: every node)")
    parser.add_argument("--qps", type=float, default=5000.0, help="the scheduler's client QPS [5000]")
    parser.add_argument("--burst", type=int, default=5000, help="the scheduler's client burst [5000]")
    parser.add_argument("--container-port", action=argparse.BooleanOptionalAction, default=True,
                        help="pods declare containerPort 80 (no hostPort), as upstream's templates [on]")
    parser.add_argument("--scheduler-cmd", default="",
                        help="run this instead of kubesched; {config} and {kubeconfig} are substituted")
    parser.add_argument("--name", default="", help="label of the result (default: kubesched / the command's name)")
    parser.add_argument("--log-level", default="info", help="kubesched's --log-level [info]")
    parser.add_argument("--feature-gates", default="",
                        help="kubesched's --feature-gates (e.g. SchedulerAsyncPreemption=true)")
    parser.add_argument("--kubesched-port", type=int, default=0, help="kubesched's --port (metrics) [0: none]")
    parser.add_argument("--metrics-url", default="", help="scrape this right after the last binding")
    parser.add_argument("--metrics-out", default="", help="where to write the scraped metrics")
    parser.add_argument("--log", default="", help="write the scheduler's output here")
    parser.add_argument("--reap", action=argparse.BooleanOptionalAction, default=True,
                        help="finish the deletion of terminating pods, as a kubelet would [on]")
    parser.add_argument("--reap-after", type=float, default=1.0,
                        help="seconds a pod may stay terminating before it is reaped [1]")
    parser.add_argument("--cpu-pid", type=_cpu_pid, action="append", default=[], metavar="NAME=PID",
                        help="also report this process's CPU seconds over the measured window")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--timeline", action="store_true",
                        help="record pods bound and the API server's 429 answers (its /metrics) every second, "
                             "and the 429s by call kind (see kube_real_timeline.py)")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds to keep watching after the last binding")
    parser.add_argument("--keep", action="store_true", help="leave the nodes and pods in place")
    parser.add_argument("--cleanup-only", action="store_true", help="delete what an earlier run left, and exit")
    parser.add_argument("--json", default="", help="append the result to this file as a JSON line")
    parser.add_argument("--outcome", default="",
                        help="write the pods' nodes, the claims' volumes and the scheduler's events here (JSON)")
    parser.add_argument("--compare", nargs=2, metavar=("OUTCOME_A", "OUTCOME_B"),
                        help="compare two --outcome files (exit 1 if they differ), and exit")
    args = parser.parse_args(argv)
    if args.compare:
        return compare_outcomes(*args.compare)
    if not args.kubeconfig:
        parser.error("--kubeconfig is required")
    args.cpu_pid = dict(args.cpu_pid)
    if args.cleanup_only:
        cleanup(Api(args.kubeconfig))
        return 0
    if args.workload == "basic" and args.pods <= 0:
        parser.error("--pods is required for the basic workload")
    if not args.name:
        args.name = Path(shlex.split(args.scheduler_cmd)[0]).name if args.scheduler_cmd else "kubesched"
    result = run(args)
    print(result.line(), flush=True)
    if args.json:
        with open(args.json, "a") as out:
            out.write(json.dumps(asdict(result)) + "\n")
    ok = (not result.error and not result.rebinds and not result.overcommitted_nodes
          and not result.bound_to_missing_nodes and result.bound == result.measured_pods)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
