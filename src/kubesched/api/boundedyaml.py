"""YAML reading with bounds, so that no input can crash the process or make it work for minutes.

Two shapes of hostile (or broken) input are refused with a :class:`YamlLimitError` that names the
limit, before any Python object is built:

* **deep nesting** (``[[[[...]]]]`` thousands of levels deep): libyaml's composer recurses in C and
  overflows the thread's stack; it therefore runs on a worker thread with a large stack, and the
  composed node graph is then measured without recursion. Kubernetes objects nest a few dozen levels
  at most (:data:`MAX_DEPTH` leaves ample room).
* **alias bombs** ("billion laughs": anchors whose aliases repeat each other): the node graph
  shares aliased nodes, but building Python objects and walking them (validation, copies, error
  messages) would expand every reference. The expanded size is computed from the shared graph, and
  a document is refused when aliases add too large a share of it, the rule Go's YAML decoder
  (gopkg.in/yaml.v3, which kubectl and the API server read YAML with) applies as "excessive
  aliasing": past 1,000 nodes and 100 added by aliases, at most 99 % of the nodes may come from
  aliases up to 400,000 nodes, 10 % from 4,000,000 nodes on, and a share in between in between.
  A document without aliases is never refused for its size, however big.
"""

from __future__ import annotations

import threading
from typing import Any

import yaml

#: deepest nesting of mappings and sequences accepted in one document
MAX_DEPTH = 200
#: the excessive-aliasing rule (see the module's description)
ALIAS_RATIO_LOW, ALIAS_RATIO_HIGH = 400_000, 4_000_000
MIN_NODES_CHECKED, MIN_ALIAS_NODES_CHECKED = 1_000, 100
#: the composer's stack (virtual memory, only touched as deep as the input goes)
_COMPOSE_STACK_BYTES = 512 * 1024 * 1024


class YamlLimitError(ValueError):
    """The document is over one of the bounds above; ``document`` is its 1-based index."""

    def __init__(self, message: str, document: int) -> None:
        super().__init__(message)
        self.document = document


def compose_documents(loader: Any) -> tuple[list[yaml.Node | None], BaseException | None]:
    """The documents of ``loader``'s stream as node graphs, composed on a worker thread with a large
    stack: the documents composed before any failure, and the composer's exception
    (``yaml.YAMLError``) if one stopped it, for the caller to raise once it has used the others."""
    nodes: list[yaml.Node | None] = []
    failure: list[BaseException] = []

    def compose() -> None:
        try:
            while loader.check_node():
                nodes.append(loader.get_node())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failure.append(exc)

    previous = threading.stack_size(_COMPOSE_STACK_BYTES)
    try:
        worker = threading.Thread(target=compose, name="yaml-compose")
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    return nodes, (failure[0] if failure else None)


def allowed_alias_share(nodes: int) -> float:
    """The largest share of a document's ``nodes`` (counted with aliases expanded) that aliases may add."""
    if nodes <= ALIAS_RATIO_LOW:
        return 0.99
    if nodes >= ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW)


def check_bounds(root: yaml.Node, document: int) -> None:
    """Refuse a node graph nested deeper than :data:`MAX_DEPTH` or aliasing excessively (see the
    module's description). Iterative, and each shared node is measured once: safe and linear on any
    input (a recursive alias counts as too deep). Scalars are counted in bulk, only collections are
    visited."""
    if not isinstance(root, yaml.CollectionNode):
        return
    measured: dict[int, tuple[int, int]] = {}  # id(collection) -> (expanded size, height), once known
    distinct = 0  # nodes in the graph, each shared one once
    stack: list[tuple[yaml.CollectionNode, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if id(node) in measured:
            continue
        if depth > MAX_DEPTH:
            raise YamlLimitError(f"nested more than {MAX_DEPTH} levels deep", document)
        children = _children(node)
        if not children_done:
            pending = [c for c in children if isinstance(c, yaml.CollectionNode) and id(c) not in measured]
            if pending:
                stack.append((node, depth, True))
                stack.extend((child, depth + 1, False) for child in pending)
                continue
        size, height = 1, 1
        distinct += 1
        for child in children:
            if isinstance(child, yaml.CollectionNode):
                child_size, child_height = measured[id(child)]
                size += child_size
                if child_height >= height:
                    height = child_height + 1
            else:
                size += 1
                distinct += 1
                if height < 2:
                    height = 2
        if height > MAX_DEPTH:
            raise YamlLimitError(f"nested more than {MAX_DEPTH} levels deep", document)
        measured[id(node)] = (size, height)
    expanded = measured[id(root)][0]
    added = expanded - distinct
    if expanded > MIN_NODES_CHECKED and added > MIN_ALIAS_NODES_CHECKED \
            and added / expanded > allowed_alias_share(expanded):
        raise YamlLimitError(f"excessive aliasing: aliases make {added:,} of its {expanded:,} nodes "
                             f"(at most {allowed_alias_share(expanded):.0%} may come from aliases at that size)", document)


def _children(node: yaml.CollectionNode) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value)
