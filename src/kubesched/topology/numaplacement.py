"""Which NUMA zone each container's exclusive resources are in, as NodeResourceTopology attributes:
the ``numaplacement`` wire format (github.com/k8stopologyawareschedwg/numaplacement, ``npv0v001``)
that exporters write and scheduler-plugins' NodeResourceTopologyMatch reads for preemption.

- A container is identified by the XXH64 hash (seed 0) of ``namespace NUL pod NUL container``.
- Producer and consumer both sort the hashes of the containers they know; a container is named by its
  *offset* in that list. Per zone, the sorted offsets of its containers are written as deltas (the
  first offset as is) in LEB89, in the zone's ``topology.node.k8s.io/numaplacement-vector`` attribute.
  The zone holding the most containers (ties: the lowest id) is the *busiest*: its vector is left out,
  every container no vector names is in it.
- The object's ``topology.node.k8s.io/numaplacement-metadata`` attribute is
  ``npv0v001::ve=leb89::cc=<containers>::nn=<zones>::bn=<busiest zone>``.
- LEB89 writes a non-negative integer with 89 printable ASCII characters that JSON does not escape
  (``!`` to ``~`` without ``" & < > \\``): the first 64 end a number, the other 25 continue it. 0-63
  take one character; larger values ``v`` are ``v - 64`` split into a last base-64 digit (a
  terminal character) preceded by its quotient in base 25 (continuation characters, most significant
  first): 64-1663 take two characters, 1664-40063 three.

Decoding needs the set of containers the producer encoded (the consumer rebuilds it from the pods it
knows) and refuses a payload whose container count differs from that set's size. Where the library
would index out of range on a malformed vector (a character outside the alphabet, a number cut
short), :func:`decode` refuses the payload instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import xxhash

from kubesched.api.selectors import parse_int64

ATTR_METADATA = "topology.node.k8s.io/numaplacement-metadata"
ATTR_VECTOR = "topology.node.k8s.io/numaplacement-vector"
PREFIX = "npv0"
VERSION = "v001"
ENCODING_LEB89 = "leb89"
UNKNOWN = -1  # a metadata field the string did not give
_SEPARATOR = "::"

_ALPHABET = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"&<>\\')
_TERMINALS = 64
_CONTINUATIONS = len(_ALPHABET) - _TERMINALS  # 25
_INDEX = {ch: i for i, ch in enumerate(_ALPHABET)}

#: (namespace, pod name, container name)
ContainerID = tuple[str, str, str]


class PlacementError(ValueError):
    """A payload that cannot be decoded (the library's error values, as messages)."""


def container_hash(namespace: str, pod: str, container: str) -> int:
    return xxhash.xxh64_intdigest(f"{namespace}\0{pod}\0{container}".encode())


# -- LEB89 ----------------------------------------------------------------------------------------
def leb89(value: int) -> str:
    """One non-negative integer in LEB89."""
    if value < 0:
        raise ValueError(f"LEB89 encodes non-negative integers, not {value}")
    if value < _TERMINALS:
        return _ALPHABET[value]
    quotient, last = divmod(value - _TERMINALS, _TERMINALS)
    digits = []
    while True:
        quotient, digit = divmod(quotient, _CONTINUATIONS)
        digits.append(_ALPHABET[_TERMINALS + digit])
        if quotient == 0:
            break
    return "".join(reversed(digits)) + _ALPHABET[last]


def leb89_values(text: str) -> list[int]:
    """Every integer of a LEB89 string, in order."""
    out: list[int] = []
    high = 0
    continued = False
    for ch in text:
        index = _INDEX.get(ch)
        if index is None:
            raise PlacementError(f"corrupted NUMA vector: {ch!r} is not a LEB89 character")
        if index >= _TERMINALS:
            high = high * _CONTINUATIONS + index - _TERMINALS
            continued = True
            continue
        out.append(_TERMINALS + high * _TERMINALS + index if continued else index)
        high, continued = 0, False
    if continued:
        raise PlacementError("corrupted NUMA vector: it ends inside a number")
    return out


def encode_vector(offsets: Iterable[int]) -> str:
    """Ascending offsets as LEB89 deltas (the first one as is)."""
    out = []
    previous = 0
    for offset in offsets:
        if offset < previous:
            raise ValueError("offsets must be in ascending order")
        out.append(leb89(offset - previous))
        previous = offset
    return "".join(out)


def decode_vector(text: str) -> list[int]:
    offsets = []
    total = 0
    for delta in leb89_values(text):
        total += delta
        offsets.append(total)
    return offsets


# -- payload --------------------------------------------------------------------------------------
@dataclass(slots=True)
class Payload:
    containers: int = UNKNOWN
    numa_nodes: int = UNKNOWN
    busiest_node: int = UNKNOWN
    encoding: str = ""
    #: zone id -> vector (every zone with containers but the busiest)
    vectors: dict[int, str] = field(default_factory=dict)

    def metadata(self) -> str:
        """The ``numaplacement-metadata`` attribute's value."""
        fields = (f"ve={self.encoding}", f"cc={self.containers}", f"nn={self.numa_nodes}", f"bn={self.busiest_node}")
        return PREFIX + VERSION + _SEPARATOR + _SEPARATOR.join(fields)


def parse_metadata(value: str) -> Payload:
    """The payload a ``numaplacement-metadata`` value describes (no vectors yet); a field it does not
    give stays :data:`UNKNOWN` (``ve``: empty)."""
    head = PREFIX + VERSION + _SEPARATOR
    if not value.startswith(head):
        raise PlacementError("malformed metadata")
    payload = Payload()
    for pair in value[len(head):].split(_SEPARATOR):
        key, eq, raw = pair.partition("=")
        if not eq:
            raise PlacementError(f"malformed metadata pair {pair!r}")
        if not key:
            raise PlacementError(f"missing metadata key in {pair!r}")
        if not raw:
            raise PlacementError(f"missing metadata value in {pair!r}")
        if key == "ve":
            payload.encoding = raw
            continue
        number = parse_int64(raw)  # Go's strconv.Atoi
        if number is None:
            raise PlacementError(f"metadata value of {pair!r} is not an integer")
        if key == "cc":
            payload.containers = number
        elif key == "nn":
            payload.numa_nodes = number
        elif key == "bn":
            payload.busiest_node = number
        else:
            raise PlacementError(f"unknown metadata field {key!r}")
    return payload


def encode(numa_nodes: int, placements: Mapping[ContainerID, int]) -> Payload:
    """The payload of ``placements`` (container -> zone id) on a machine of ``numa_nodes`` zones."""
    if numa_nodes <= 0:
        raise ValueError("inconsistent NUMA node count")
    if any(not 0 <= zone < numa_nodes for zone in placements.values()):
        raise ValueError("wrong NUMA affinity")
    zone_of = {container_hash(*cid): zone for cid, zone in placements.items()}
    per_zone: dict[int, list[int]] = {}
    for offset, h in enumerate(sorted(zone_of)):
        per_zone.setdefault(zone_of[h], []).append(offset)
    busiest = min(per_zone, key=lambda z: (-len(per_zone[z]), z), default=0)
    vectors = {zone: encode_vector(offsets) for zone, offsets in sorted(per_zone.items()) if zone != busiest}
    return Payload(len(zone_of), numa_nodes, busiest, ENCODING_LEB89, vectors)


def validate(payload: Payload) -> None:
    """What the library's decoder checks before decoding (not the vectors' content)."""
    if payload.encoding != ENCODING_LEB89:
        raise PlacementError("unsupported vector encoding")
    if len(payload.vectors) >= payload.numa_nodes:
        raise PlacementError("inconsistent NUMA vector data")
    if payload.busiest_node in payload.vectors:
        raise PlacementError("corrupted NUMA vector")
    if payload.containers < 0:
        raise PlacementError("inconsistent container set")
    if payload.numa_nodes <= 0:
        raise PlacementError("inconsistent NUMA node count")
    if not 0 <= payload.busiest_node < payload.numa_nodes:
        raise PlacementError("inconsistent busiest node data")
    if payload.containers == 0 and payload.vectors:
        raise PlacementError("inconsistent NUMA vector data")
    if any(not 0 <= zone < payload.numa_nodes for zone in payload.vectors):
        raise PlacementError("corrupted NUMA vector")


@dataclass(frozen=True, slots=True)
class Placement:
    """Decoded: the zone of each container the consumer named."""

    zones: Mapping[int, int]  # container hash -> zone id

    def __len__(self) -> int:
        return len(self.zones)

    def zone_of(self, namespace: str, pod: str, container: str) -> int | None:
        return self.zones.get(container_hash(namespace, pod, container))


def decode(payload: Payload, containers: Iterable[ContainerID]) -> Placement:
    """Where each of ``containers`` (the set the producer encoded) is."""
    validate(payload)
    hashes = sorted({container_hash(*cid) for cid in containers})
    if len(hashes) != payload.containers:
        raise PlacementError("inconsistent container set")
    zones: dict[int, int] = {}
    for zone, vector in payload.vectors.items():
        for offset in decode_vector(vector):
            if offset >= len(hashes):
                raise PlacementError("corrupted NUMA vector")
            if hashes[offset] in zones:
                raise PlacementError("duplicated data in multiple NUMA vectors")
            zones[hashes[offset]] = zone
    for h in hashes:
        zones.setdefault(h, payload.busiest_node)
    return Placement(zones)
