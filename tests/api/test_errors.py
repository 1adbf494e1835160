from __future__ import annotations

import pickle

import pytest

from kubesched.api.errors import InvalidQuantity, KubeschedError, ManifestError


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        (
            {"file": "examples/x.yaml", "document": 3, "object_ref": "Pod default/web",
             "path": "spec.containers[0].resources.requests.cpu"},
            'examples/x.yaml: document 3 (Pod default/web): spec.containers[0].resources.requests.cpu: '
            'invalid quantity "12x"',
        ),
        ({"file": "x.yaml"}, 'x.yaml: invalid quantity "12x"'),
        ({"file": "x.yaml", "document": 2}, 'x.yaml: document 2: invalid quantity "12x"'),
        ({"path": "spec.x"}, 'spec.x: invalid quantity "12x"'),
        ({"object_ref": "Node n1"}, '(Node n1): invalid quantity "12x"'),
        ({}, 'invalid quantity "12x"'),
    ],
)
def test_manifest_error_text_names_file_document_object_and_path(kwargs: dict, text: str) -> None:
    err = ManifestError('invalid quantity "12x"', **kwargs)
    assert str(err) == text
    assert err.message == 'invalid quantity "12x"'


def test_aggregated_manifest_error_lists_the_first_then_the_rest() -> None:
    second = ManifestError("bad b", file="f.yaml", document=2, path="b")
    err = ManifestError("bad a", file="f.yaml", document=1, path="a", related=[second])
    lines = str(err).splitlines()
    assert lines[0] == "f.yaml: document 1: a: bad a"
    assert lines[-1] == "  f.yaml: document 2: b: bad b"
    assert err.errors == [err, second]


def test_manifest_error_survives_pickling() -> None:
    err = ManifestError("m", file="f", document=1, path="p", object_ref="Pod a/b")
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err)


@pytest.mark.parametrize("cls", [ManifestError, InvalidQuantity])
def test_errors_share_the_kubesched_base(cls: type) -> None:
    assert issubclass(cls, KubeschedError)


def test_invalid_quantity_is_a_value_error() -> None:
    assert issubclass(InvalidQuantity, ValueError)
