"""A throw-away Kubernetes control plane on loopback for benchmarks: etcd, kube-apiserver (optionally
with an audit log) and kube-scheduler, started from binaries the user already has (nothing is built or
downloaded here), in a temporary directory that is removed afterwards.

- Certificates: a CA and the API server's serving certificate (SANs 127.0.0.1 and localhost) and a
  service-account key pair, made with ``openssl``.
- Authentication: a static token file with two users, ``bench-admin`` (group ``system:masters``) for
  the driver and ``system:kube-scheduler`` for the scheduler (the bootstrap RBAC roles bind that user
  to what kube-scheduler needs; it is also the user an audit log's preemptions are recognised by).
- kube-scheduler: leader election off, one profile ``default-scheduler`` with the defaults.
- No kube-controller-manager and no kubelets: nodes are objects only.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KUBE_BIN = Path("/work/k8s-bin")
SCHEDULER_USER = "system:kube-scheduler"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(directory: Path) -> None:
    """ca.crt/ca.key, apiserver.crt/apiserver.key (for 127.0.0.1), sa.key/sa.pub."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=bench-ca", cwd=directory)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key", "-out", "apiserver.csr",
             "-subj", "/CN=kube-apiserver", cwd=directory)
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes\n")
    _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "apiserver.crt", "-days", "2", "-extfile", "san.ext", cwd=directory)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=directory)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=directory)


def kubeconfig(server: str, ca: Path, token: str, user: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "bench", "cluster": {"server": server, "certificate-authority": str(ca)}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": user}}],
            "current-context": "bench"}


@dataclass
class Stack:
    """The running processes and the files they use. ``kubeconfig``: the admin's; ``audit_log``: the
    API server's audit log (when started with a policy)."""

    directory: Path
    apiserver_bin: Path = KUBE_BIN / "kube-apiserver"
    scheduler_bin: Path = KUBE_BIN / "kube-scheduler"
    etcd_bin: str = "etcd"
    audit_policy: dict[str, Any] | None = None
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    server: str = ""

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.directory / "audit.log"

    def _start(self, name: str, command: list[str]) -> None:
        log = (self.directory / f"{name}.log").open("wb")
        self.processes[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def start(self, *, with_scheduler: bool = True) -> None:
        d = self.directory
        make_certificates(d)
        admin, sched = secrets.token_hex(16), secrets.token_hex(16)
        (d / "tokens.csv").write_text(f'{admin},bench-admin,1,"system:masters"\n{sched},{SCHEDULER_USER},2\n')
        client, peer, port = free_port(), free_port(), free_port()
        self._start("etcd", [self.etcd_bin, "--name", "bench", "--data-dir", str(d / "etcd"),
                             "--listen-client-urls", f"http://127.0.0.1:{client}",
                             "--advertise-client-urls", f"http://127.0.0.1:{client}",
                             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                             "--initial-cluster", f"bench=http://127.0.0.1:{peer}"])
        command = [str(self.apiserver_bin), f"--etcd-servers=http://127.0.0.1:{client}", "--bind-address=127.0.0.1",
                   "--advertise-address=127.0.0.1", f"--secure-port={port}",
                   f"--tls-cert-file={d / 'apiserver.crt'}", f"--tls-private-key-file={d / 'apiserver.key'}",
                   f"--client-ca-file={d / 'ca.crt'}", f"--token-auth-file={d / 'tokens.csv'}",
                   "--authorization-mode=RBAC", f"--service-account-key-file={d / 'sa.pub'}",
                   f"--service-account-signing-key-file={d / 'sa.key'}",
                   "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                   "--service-cluster-ip-range=10.0.0.0/24"]
        if self.audit_policy is not None:
            (d / "audit-policy.json").write_text(json.dumps(self.audit_policy))
            command += [f"--audit-policy-file={d / 'audit-policy.json'}", f"--audit-log-path={self.audit_log}",
                        "--audit-log-format=json",
                        "--audit-log-maxsize=100000"]  # MB: one file (0 would mean 100 MB, then rotate)
        self._start("kube-apiserver", command)
        self.server = f"https://127.0.0.1:{port}"
        self.kubeconfig.write_text(json.dumps(kubeconfig(self.server, d / "ca.crt", admin, "bench-admin")))
        self._wait_ready(admin)
        if with_scheduler:
            sched_kubeconfig = d / "scheduler.kubeconfig"
            sched_kubeconfig.write_text(json.dumps(kubeconfig(self.server, d / "ca.crt", sched, SCHEDULER_USER)))
            config = d / "scheduler.yaml"
            config.write_text(json.dumps({
                "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": str(sched_kubeconfig)}, "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": "default-scheduler"}]}))
            self._start("kube-scheduler", [str(self.scheduler_bin), "--config", str(config),
                                           f"--authentication-kubeconfig={sched_kubeconfig}",
                                           f"--authorization-kubeconfig={sched_kubeconfig}",
                                           f"--secure-port={free_port()}", "--bind-address=127.0.0.1"])

    def _wait_ready(self, token: str, timeout: float = 120.0) -> None:
        context = ssl.create_default_context(cafile=str(self.directory / "ca.crt"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}: see {self.directory / name}.log")
            request = urllib.request.Request(self.server + "/readyz", headers={"Authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(request, context=context, timeout=5) as answer:
                    if answer.read().strip() == b"ok":
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"kube-apiserver not ready after {timeout:g} s")

    def stop(self, name: str) -> int | None:
        proc = self.processes.pop(name, None)
        if proc is None:
            return None
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def stop_all(self) -> None:
        for name in ("kube-scheduler", "kube-apiserver", "etcd"):
            self.stop(name)


def temporary_stack(**options: Any) -> Stack:
    return Stack(Path(tempfile.mkdtemp(prefix="kube-stack-")), **options)


def remove(stack: Stack) -> None:
    """Stop everything and delete the stack's directory (copy out what is to be kept first)."""
    stack.stop_all()
    shutil.rmtree(stack.directory, ignore_errors=True)
