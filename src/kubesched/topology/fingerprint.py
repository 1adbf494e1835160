"""The pod set fingerprint of NodeResourceTopology objects (``nodeTopologyPodsFingerprint``), in the
format topology exporters and scheduler-plugins use (``pfp0`` + version ``v001`` + 16 hex digits):
each pod hashes to XXH64(name, seed=XXH64(namespace)); the sorted hashes, as little-endian 64-bit
words, are hashed again with XXH64 (seed 0), written big-endian in hex. Any order of the same pods
gives the same fingerprint.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import xxhash

PREFIX = "pfp0"
VERSION = "v001"


def pod_hash(namespace: str, name: str) -> int:
    return xxhash.xxh64_intdigest(name.encode(), seed=xxhash.xxh64_intdigest(namespace.encode()))


def fingerprint(pods: Iterable[tuple[str, str]]) -> str:
    """The fingerprint of a set of ``(namespace, name)`` pods."""
    hashes = sorted(pod_hash(ns, name) for ns, name in pods)
    digest = xxhash.xxh64_intdigest(b"".join(struct.pack("<Q", h) for h in hashes))
    return f"{PREFIX}{VERSION}{digest:016x}"
