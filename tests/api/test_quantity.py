from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.errors import InvalidQuantity
from kubesched.api.quantity import (
    format_quantity,
    int_value,
    milli_value,
    parse_quantity,
    resource_amount,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", Fraction(0)),
        ("1", Fraction(1)),
        ("+3", Fraction(3)),
        ("-3", Fraction(-3)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("1.", Fraction(1)),
        ("100m", Fraction(1, 10)),
        ("250u", Fraction(1, 4000)),
        ("5n", Fraction(5, 10**9)),
        ("1k", Fraction(1000)),
        ("2M", Fraction(2 * 10**6)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("1Mi", Fraction(1024**2)),
        ("1.5Gi", Fraction(3 * 1024**3, 2)),
        ("1Ti", Fraction(1024**4)),
        ("1Pi", Fraction(1024**5)),
        ("1Ei", Fraction(1024**6)),
        ("129e6", Fraction(129 * 10**6)),
        ("1E3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("1e+2", Fraction(100)),
        ("-1.5k", Fraction(-1500)),
    ],
)
def test_parse_quantity_accepts_kubernetes_syntax(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(2, Fraction(2)), (0.5, Fraction(1, 2)), (0.1, Fraction(1, 10)), (1e-05, Fraction(1, 100000))],
)
def test_parse_quantity_accepts_yaml_numbers(value: int | float, expected: Fraction) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    "bad",
    ["", "12x", "1e", "1.2.3", ".", "Ki", "1 Gi", " 1", "1KI", "1ki", "--1", "1e1.5", "m", "1mi", "0x10",
     True, None, float("nan"), float("inf"), [1]],
)
def test_parse_quantity_rejects_invalid_input(bad: object) -> None:
    with pytest.raises(InvalidQuantity):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_invalid_quantity_is_a_value_error_naming_the_text() -> None:
    with pytest.raises(ValueError, match='invalid quantity "12x"'):
        parse_quantity("12x")


@pytest.mark.parametrize(
    ("q", "milli", "value"),
    [
        ("1", 1000, 1),
        ("100m", 100, 1),
        ("0.1", 100, 1),
        ("1.5", 1500, 2),
        ("1n", 1, 1),
        ("1u", 1, 1),
        ("1500u", 2, 1),
        ("-1.5", -1500, -2),
        ("-1n", -1, -1),
        ("0", 0, 0),
        ("1Ki", 1024000, 1024),
    ],
)
def test_milli_and_int_values_round_up_away_from_zero(q: str, milli: int, value: int) -> None:
    assert milli_value(q) == milli
    assert int_value(q) == value


@pytest.mark.parametrize(
    ("name", "q", "amount"),
    [
        ("cpu", "2", 2000),
        ("cpu", "250m", 250),
        ("cpu", 0.5, 500),
        ("requests.cpu", "1", 1000),
        ("memory", "1Gi", 1024**3),
        ("memory", "129e6", 129_000_000),
        ("pods", 110, 110),
        ("nvidia.com/gpu", "2", 2),
        ("ephemeral-storage", "1.5Ki", 1536),
        ("memory", "0.5", 1),
    ],
)
def test_resource_amount_uses_milli_for_cpu_and_units_otherwise(name: str, q: str | int | float, amount: int) -> None:
    assert resource_amount(name, q) == amount


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        ("cpu", 2000, "2"),
        ("cpu", 500, "500m"),
        ("cpu", 0, "0"),
        ("cpu", 1500, "1500m"),
        ("cpu", -250, "-250m"),
        ("memory", 1024**3, "1Gi"),
        ("memory", 512 * 1024**2, "512Mi"),
        ("memory", 1536 * 1024**2, "1536Mi"),
        ("memory", 2000, "2k"),
        ("memory", 10**9, "1G"),
        ("memory", 10**12, "1T"),
        ("memory", 1024000, "1024k"),
        ("memory", 3 * 1024, "3Ki"),
        ("memory", 1024**2 * 1000, "1000Mi"),
        ("memory", 1500, "1500"),
        ("memory", 0, "0"),
        ("memory", 209715200, "200Mi"),
        ("ephemeral-storage", 10 * 1024**3, "10Gi"),
        ("hugepages-2Mi", 4 * 1024**2, "4Mi"),
        ("pods", 110, "110"),
        ("pods", 1000, "1000"),
        ("nvidia.com/gpu", 1024, "1024"),
    ],
)
def test_format_quantity_gives_canonical_text(name: str, amount: int, text: str) -> None:
    assert format_quantity(name, amount) == text


@given(
    name=st.sampled_from(["cpu", "memory", "ephemeral-storage", "pods", "example.com/foo", "hugepages-1Gi"]),
    amount=st.one_of(
        st.integers(min_value=-(10**20), max_value=10**20),
        st.builds(lambda m, k: m * 1024**k, st.integers(-(10**6), 10**6), st.integers(0, 6)),
        st.builds(lambda m, k: m * 1000**k, st.integers(-(10**6), 10**6), st.integers(0, 6)),
    ),
)
def test_format_then_parse_round_trips(name: str, amount: int) -> None:
    assert resource_amount(name, format_quantity(name, amount)) == amount


@given(st.decimals(min_value=-(10**12), max_value=10**12, allow_nan=False, allow_infinity=False, places=3))
def test_decimal_strings_parse_exactly(value: object) -> None:
    assert parse_quantity(str(value)) == Fraction(str(value))
