"""Go ``time.Duration`` syntax: ``250ms``, ``5s``, ``2m``, ``1h30m``, ``1.5h``, ``300us``, ``0``."""

from __future__ import annotations

import math
import re
from fractions import Fraction

_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_SEGMENT_RE = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_NS_PER_S = 1_000_000_000


def _error(text: object) -> ValueError:
    return ValueError(
        f"invalid duration {text!r}: expected a Go duration such as 250ms, 5s, 2m, 1h30m or 1.5h"
    )


def parse_duration(s: str | int | float) -> float:
    """Seconds denoted by a Go duration string; a bare number (YAML int/float) is taken as seconds.

    Raises ValueError with a clear message for anything else (missing unit, unknown unit, empty…).
    """
    if isinstance(s, bool):
        raise _error(s)
    if isinstance(s, int | float):
        if isinstance(s, float) and not math.isfinite(s):
            raise _error(s)
        return float(s)
    if not isinstance(s, str):
        raise _error(s)
    text = s
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise _error(s)
    total = Fraction(0)
    pos = 0
    while pos < len(text):
        m = _SEGMENT_RE.match(text, pos)
        if m is None:
            raise _error(s)
        whole, frac, unit = m.group(1), m.group(2) or "", m.group(3)
        if not whole and not frac:
            raise _error(s)
        value = Fraction(int(whole or "0"))
        if frac:
            value += Fraction(int(frac), 10 ** len(frac))
        total += value * _UNIT_NS[unit]
        pos = m.end()
    return sign * float(total / _NS_PER_S)


def _decimal(ns: int, unit_ns: int) -> str:
    """``ns / unit_ns`` as an exact decimal without trailing zeros (``unit_ns`` a power of ten)."""
    whole, rest = divmod(ns, unit_ns)
    if rest == 0:
        return str(whole)
    digits = len(str(unit_ns)) - 1
    return f"{whole}.{rest:0{digits}d}".rstrip("0")


def format_duration(seconds: float) -> str:
    """Short Go-style text for a duration in seconds: ``"0s"``, ``"250ms"``, ``"1.5s"``, ``"2m"``,
    ``"1h30m"``, ``"1m30.5s"``, ``"300us"``.  Rounded to whole nanoseconds;
    :func:`parse_duration` of the result gives the value back (to the nanosecond)."""
    if not math.isfinite(seconds):
        raise ValueError(f"cannot format non-finite duration {seconds!r}")
    ns = round(Fraction(seconds) * _NS_PER_S)
    if ns == 0:
        return "0s"
    if ns < 0:
        return "-" + format_duration(-seconds)
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{_decimal(ns, 1_000)}us"
    if ns < _NS_PER_S:
        return f"{_decimal(ns, 1_000_000)}ms"
    hours, rest = divmod(ns, 3600 * _NS_PER_S)
    minutes, rest = divmod(rest, 60 * _NS_PER_S)
    out = ""
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if rest:
        out += f"{_decimal(rest, _NS_PER_S)}s"
    return out
