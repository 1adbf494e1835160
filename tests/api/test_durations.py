from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("0s", 0.0),
        ("250ms", 0.25),
        ("5s", 5.0),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("300us", 0.0003),
        ("300\u00b5s", 0.0003),
        ("300\u03bcs", 0.0003),
        ("10ns", 1e-8),
        ("1m30.5s", 90.5),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("-5s", -5.0),
        ("+5s", 5.0),
        ("1h1m1s1ms", 3661.001),
        (5, 5.0),
        (2.5, 2.5),
    ],
)
def test_parse_duration_accepts_go_syntax(text: str | int | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "5", "1.5", "s", "5x", "5 s", "1d", ".s", "1h 30m", "-", "5S", True, None, [1]])
def test_parse_duration_rejects_invalid_text_with_clear_message(bad: object) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.25, "250ms"),
        (5, "5s"),
        (120, "2m"),
        (5400, "1h30m"),
        (90.5, "1m30.5s"),
        (0.0003, "300us"),
        (1e-8, "10ns"),
        (1.5, "1.5s"),
        (3661, "1h1m1s"),
        (-3, "-3s"),
        (0.0015, "1.5ms"),
    ],
)
def test_format_duration_gives_short_form(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_format_then_parse_round_trips_to_the_nanosecond(ns: int) -> None:
    seconds = ns / 1e9
    assert abs(parse_duration(format_duration(seconds)) - seconds) <= 1e-9 + abs(seconds) * 1e-15
