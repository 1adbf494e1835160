"""The numaplacement codec: LEB89, container hashes, payloads and their metadata, decoding, checked
against the values the numaplacement library's own tests give; and reading the attributes off a
NodeResourceTopology object."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.testkit.builders import make_nrt, make_nrt_zone
from kubesched.topology.nrt import PodData, parse_nrt, placement_of
from kubesched.topology.numaplacement import (
    ENCODING_LEB89,
    Payload,
    PlacementError,
    container_hash,
    decode,
    decode_vector,
    encode,
    encode_vector,
    leb89,
    leb89_values,
    parse_metadata,
)


# -- LEB89 ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, length", [
    (0, 1), (63, 1),          # one terminal character
    (64, 2), (1663, 2),       # one continuation character, then a terminal one
    (1664, 3), (40063, 3),
    (40064, 4), (100000, 4),
])
def test_leb89_lengths_at_the_edges(value: int, length: int) -> None:
    text = leb89(value)
    assert len(text) == length
    assert leb89_values(text) == [value]


def test_leb89_characters_need_no_json_escaping() -> None:
    text = "".join(leb89(v) for v in range(0, 50000, 7))
    used = set(text)
    assert len(set("".join(leb89(v) for v in range(2000)))) == 89
    assert used.isdisjoint('"&<>\\ ') and all(0x21 <= ord(c) <= 0x7E for c in used)
    assert json.dumps(text) == f'"{text}"'


@pytest.mark.parametrize("offsets, text", [
    # the numaplacement library's known vectors
    ([1, 3, 7, 42], "#$'H"),
    ([0, 4, 8, 10], "!''$"),
    ([100, 108, 116], "fI++"),
    ([2000, 2008], "gk3+"),
    ([], ""),
])
def test_vectors_are_delta_encoded(offsets: list[int], text: str) -> None:
    assert encode_vector(offsets) == text
    assert decode_vector(text) == offsets


@pytest.mark.parametrize("text", ["#\\", "f", "!g", "é"])
def test_malformed_vectors_are_refused(text: str) -> None:
    with pytest.raises(PlacementError, match="corrupted NUMA vector"):
        decode_vector(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**31 - 1)))
def test_leb89_round_trip(values: list[int]) -> None:
    assert leb89_values("".join(leb89(v) for v in values)) == values
    offsets = sorted(set(values))
    assert decode_vector(encode_vector(offsets)) == offsets


# -- container hashes and payloads ------------------------------------------------------------------------
def test_container_hash_is_xxh64_of_the_nul_separated_names() -> None:
    # the library's test vectors
    assert container_hash("", "", "") == 11145182160106660097
    assert container_hash("ns", "pod", "cnt") == 9468815510407277218


def ids(*rows: tuple[str, str, str, int]) -> dict[tuple[str, str, str], int]:
    return {(ns, pod, c): zone for ns, pod, c, zone in rows}


@pytest.mark.parametrize("numa_nodes, placements, busiest, vectors", [
    (2, ids(), 0, {}),
    (2, ids(("ns1", "pod1", "cnt1", 0), ("ns1", "pod2", "cnt1", 0), ("ns1", "pod3", "cnt1", 0)), 0, {}),
    (2, ids(("ns1", "pod1", "cnt1", 0), ("ns1", "pod2", "cnt1", 0), ("ns1", "pod3", "cnt1", 0),
            ("ns2", "pod1", "cnt1", 1)), 0, {1: "#"}),
    # a tie: the lowest zone is the busiest
    (2, ids(("ns1", "pod1", "cnt1", 0), ("ns1", "pod2", "cnt1", 0), ("ns2", "pod1", "cnt1", 1),
            ("ns2", "pod2", "cnt1", 1)), 0, {1: "!%"}),
    (2, ids(("ns1", "pod1", "cnt1", 0), ("ns2", "pod1", "cnt1", 1), ("ns2", "pod2", "cnt1", 1),
            ("ns2", "pod3", "cnt1", 1)), 1, {0: "$"}),
    (4, ids(("ns1", "pod1", "cnt1", 0), ("ns1", "pod2", "cnt1", 0), ("ns1", "pod3", "cnt1", 0),
            ("ns2", "pod4", "cnt1", 1), ("ns3", "pod5", "cnt1", 2)), 0, {1: "!", 2: "'"}),
])
def test_encoder_results_match_the_library(numa_nodes: int, placements: dict[tuple[str, str, str], int],
                                           busiest: int, vectors: dict[int, str]) -> None:
    payload = encode(numa_nodes, placements)
    assert payload == Payload(len(placements), numa_nodes, busiest, ENCODING_LEB89, vectors)
    assert payload.metadata() == f"npv0v001::ve=leb89::cc={len(placements)}::nn={numa_nodes}::bn={busiest}"


def test_metadata_parsing() -> None:
    assert parse_metadata("npv0v001::ve=leb89::cc=4::nn=2::bn=1") == Payload(4, 2, 1, "leb89")
    assert parse_metadata("npv0v001::nn=8::bn=3") == Payload(-1, 8, 3, "")  # missing fields: unknown
    for bad in ("", "XXXXv001::cc=1", "npv0v999::cc=1", "npv0v001cc=1", "npv0v001::cc=1::xx=0",
                "npv0v001::cc=abc", "npv0v001::cc1", "npv0v001::cc=", "npv0v001::nn=2::=5"):
        with pytest.raises(PlacementError):
            parse_metadata(bad)


def test_decoding_refuses_inconsistent_payloads() -> None:
    known = [("ns", "a", "c"), ("ns", "b", "c")]
    good = encode(2, {known[0]: 0, known[1]: 1})
    assert decode(good, known).zone_of("ns", "b", "c") == 1
    with pytest.raises(PlacementError, match="inconsistent container set"):
        decode(good, known[:1])
    with pytest.raises(PlacementError, match="inconsistent container set"):
        decode(good, [*known, ("ns", "c", "c")])
    for payload in (Payload(2, 2, 0, "plain", good.vectors),          # another vector encoding
                    Payload(2, 2, 0, ENCODING_LEB89, {0: "!", 1: "!"}),  # a vector for every zone
                    Payload(2, 2, 1, ENCODING_LEB89, {1: "!"}),        # a vector for the busiest zone
                    Payload(2, 2, 2, ENCODING_LEB89, {}),              # no such busiest zone
                    Payload(2, 2, 0, ENCODING_LEB89, {1: "$"}),        # offset 2 of 2 containers
                    Payload(2, 3, 0, ENCODING_LEB89, {1: "!", 2: "!"})):  # one container in two zones
        with pytest.raises(PlacementError):
            decode(payload, known)


containers = st.tuples(st.sampled_from(["default", "kube-system", "ns-é"]), st.text(min_size=1, max_size=12),
                       st.sampled_from(["main", "sidecar", "app"]))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=8).flatmap(
    lambda n: st.tuples(st.just(n), st.dictionaries(containers, st.integers(min_value=0, max_value=n - 1)))),
    st.randoms())
def test_round_trip_through_the_attributes(case: tuple[int, dict[tuple[str, str, str], int]],
                                           rnd: random.Random) -> None:
    numa_nodes, placements = case
    payload = encode(numa_nodes, placements)
    read = parse_metadata(payload.metadata())
    read.vectors = dict(payload.vectors)
    order = list(placements)
    rnd.shuffle(order)
    placement = decode(read, order)
    assert len(placement) == len(placements)
    assert {cid: placement.zone_of(*cid) for cid in placements} == placements


# -- reading an object ------------------------------------------------------------------------------------
ZONES = [make_nrt_zone(0, {"cpu": "8"}), make_nrt_zone(1, {"cpu": "8"})]
PODS = [PodData("default", "a", ("main",)), PodData("default", "b", ("main", "side")), PodData("default", "c")]
PLACED = {"default/a/main": 1, "default/b/main": 0, "default/b/side": 1}


def test_placement_of_an_object() -> None:
    placement = placement_of(parse_nrt(make_nrt("n1", ZONES, placement=PLACED)), PODS)
    assert placement is not None
    assert [placement.zone_of("default", p, c) for p, c in (("a", "main"), ("b", "main"), ("b", "side"))] == [1, 0, 1]
    assert placement.zone_of("default", "c", "main") is None


def test_no_placement_without_pods_attributes_or_single_numa_node() -> None:
    assert placement_of(parse_nrt(make_nrt("n1", ZONES, placement=PLACED)), []) is None
    assert placement_of(parse_nrt(make_nrt("n1", ZONES)), PODS) is None
    assert placement_of(parse_nrt(make_nrt("n1", ZONES, policy="restricted", placement=PLACED)), PODS) is None
    # a vector on a zone whose name has no NUMA id spoils the whole object, as upstream
    obj = make_nrt("n1", ZONES, placement=PLACED)
    obj["zones"].append({"name": "socket-0", "type": "Socket",
                         "attributes": [{"name": "topology.node.k8s.io/numaplacement-vector", "value": "!"}]})
    assert placement_of(parse_nrt(obj), PODS) is None
