"""YAML reading with bounds, so that no input can crash the process or make it work for minutes.

Two shapes of hostile (or broken) input are refused with a :class:`YamlLimitError` that names the
limit, before any Python object is built:

* **deep nesting** (``[[[[...]]]]`` thousands of levels deep): libyaml's composer recurses in C and
  overflows the thread's stack; it therefore runs on a worker thread with a large stack, and the
  composed node graph is then measured without recursion. Kubernetes objects nest a few dozen levels
  at most (:data:`MAX_DEPTH` leaves ample room).
* **alias bombs** ("billion laughs": anchors whose aliases repeat each other): the node graph
  shares aliased nodes, but building Python objects and walking them (validation, copies, error
  messages) would expand every reference. The expanded size is computed from the shared graph and
  refused past :data:`MAX_EXPANDED_NODES`, as Go's YAML decoders refuse "excessive aliasing".
"""

from __future__ import annotations

import threading
from typing import Any

import yaml

#: deepest nesting of mappings and sequences accepted in one document
MAX_DEPTH = 200
#: most nodes a document may have once its aliases are expanded
MAX_EXPANDED_NODES = 2_000_000
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


def check_bounds(root: yaml.Node, document: int) -> None:
    """Refuse a node graph nested deeper than :data:`MAX_DEPTH` or expanding (through aliases) to
    more than :data:`MAX_EXPANDED_NODES` nodes. Iterative, and each shared node is measured once:
    safe and linear on any input (a recursive alias counts as too deep). Scalars are counted in
    bulk, only collections are visited."""
    if not isinstance(root, yaml.CollectionNode):
        return
    measured: dict[int, tuple[int, int]] = {}  # id(collection) -> (expanded size, height), once known
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
        for child in children:
            if isinstance(child, yaml.CollectionNode):
                child_size, child_height = measured[id(child)]
                size += child_size
                if child_height >= height:
                    height = child_height + 1
            else:
                size += 1
                if height < 2:
                    height = 2
        if height > MAX_DEPTH:
            raise YamlLimitError(f"nested more than {MAX_DEPTH} levels deep", document)
        if size > MAX_EXPANDED_NODES:
            raise YamlLimitError(
                f"expands to more than {MAX_EXPANDED_NODES:,} nodes through aliases (excessive aliasing)", document)
        measured[id(node)] = (size, height)


def _children(node: yaml.CollectionNode) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value)
