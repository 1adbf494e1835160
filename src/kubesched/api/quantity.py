"""Exact Kubernetes ``resource.Quantity`` arithmetic (no floating point).

Grammar accepted (as the API server's): ``[+-]<number><suffix>`` where ``<number>`` is ``12``, ``1.5``,
``1.`` or ``.5`` and ``<suffix>`` is empty, a decimal SI suffix (n u m k M G T P E), a binary SI
suffix (Ki Mi Gi Ti Pi Ei) or a decimal exponent (``e3``, ``E-2``, ``e+6``).  Note ``1E`` is one exa,
``1E3`` is one thousand.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from kubesched.api.errors import InvalidQuantity

_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)"
    r"(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?[0-9]+)|(?P<dec>[numkMGTPE])?)"
)

_BINARY_EXP = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXP = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

#: resource names whose amounts are counted in milli-units by :func:`resource_amount`
CPU_RESOURCE_NAMES = frozenset({"cpu", "requests.cpu", "limits.cpu"})

# exponents above this are refused: they cannot be a sensible resource amount and would make
# the exact arithmetic arbitrarily expensive
_MAX_ABS_EXPONENT = 100


@lru_cache(maxsize=65536)
def _parse_str(text: str) -> Fraction:
    m = _QUANTITY_RE.fullmatch(text)
    if m is None:
        raise InvalidQuantity(f'invalid quantity "{text}"')
    int_part = m.group("int")
    frac_part = m.group("frac") or ""
    if not int_part and not frac_part:
        raise InvalidQuantity(f'invalid quantity "{text}"')
    value = Fraction(int(int_part or "0"))
    if frac_part:
        value += Fraction(int(frac_part), 10 ** len(frac_part))
    if m.group("bin"):
        value *= 2 ** _BINARY_EXP[m.group("bin")]
    elif m.group("exp") is not None:
        exp = int(m.group("exp"))
        if abs(exp) > _MAX_ABS_EXPONENT:
            raise InvalidQuantity(f'invalid quantity "{text}": exponent out of range')
        value *= Fraction(10) ** exp
    elif m.group("dec"):
        value *= Fraction(10) ** _DECIMAL_EXP[m.group("dec")]
    return -value if m.group("sign") == "-" else value


def parse_quantity(q: str | int | float) -> Fraction:
    """The exact value of quantity ``q`` (``"1.5Gi"``, ``"250m"``, ``"129e6"``, ``2``, ``0.5``).

    YAML numbers are accepted as the API server accepts JSON numbers.  Raises :class:`InvalidQuantity`.
    """
    if isinstance(q, bool):
        raise InvalidQuantity(f"invalid quantity {q!r}: expected a string or a number")
    if isinstance(q, int):
        return Fraction(q)
    if isinstance(q, float):
        if not math.isfinite(q):
            raise InvalidQuantity(f"invalid quantity {q!r}")
        return _parse_str(repr(q))
    if isinstance(q, str):
        return _parse_str(q)
    raise InvalidQuantity(f"invalid quantity {q!r}: expected a string or a number")


def _round_away_from_zero(value: Fraction) -> int:
    if value >= 0:
        return math.ceil(value)
    return -math.ceil(-value)


def milli_value(q: str | int | float) -> int:
    """``q`` × 1000 as an integer, rounded up (away from zero), like ``Quantity.MilliValue``."""
    return _round_away_from_zero(parse_quantity(q) * 1000)


def int_value(q: str | int | float) -> int:
    """``q`` as an integer, rounded up (away from zero), like ``Quantity.Value``."""
    return _round_away_from_zero(parse_quantity(q))


def is_cpu_resource(resource_name: str) -> bool:
    """True for ``cpu`` (and the quota keys ``requests.cpu`` / ``limits.cpu``)."""
    return resource_name in CPU_RESOURCE_NAMES


@lru_cache(maxsize=8192)
def resource_amount(resource_name: str, q: str | int | float) -> int:
    """The integer amount the scheduler works with: milli-cpu for cpu, the plain integer value
    (bytes, counts) for every other resource."""
    if resource_name in CPU_RESOURCE_NAMES:
        return milli_value(q)
    return int_value(q)


def is_byte_resource(resource_name: str) -> bool:
    """Whether a resource is measured in bytes (memory, storage, hugepages)."""
    name = resource_name.removeprefix("requests.").removeprefix("limits.")
    return name in ("memory", "ephemeral-storage", "storage") or name.startswith("hugepages-")


def _suffixed(amount: int, base: int, suffixes: tuple[str, ...]) -> str | None:
    """``amount`` with the largest suffix of ``base**k`` (k ≥ 1) dividing it exactly, or None."""
    best: str | None = None
    unit = base
    for suffix in suffixes:
        if amount % unit != 0 or amount < unit:
            break
        best = f"{amount // unit}{suffix}"
        unit *= base
    return best


def format_quantity(resource_name: str, amount: int) -> str:
    """A canonical human string for an amount as returned by :func:`resource_amount`.

    cpu (milli): ``2000`` → ``"2"``, ``500`` → ``"500m"``.  Byte resources: the shortest exact form
    among a binary suffix (``"1Gi"``, ``"512Mi"``), a decimal suffix (``"2k"``, ``"1G"``) and the plain
    integer, binary winning ties.  Everything else (pods, extended resources): the plain integer.
    ``parse``/``resource_amount`` of the result gives ``amount`` back.
    """
    if amount < 0:
        return "-" + format_quantity(resource_name, -amount)
    if is_cpu_resource(resource_name):
        if amount % 1000 == 0:
            return str(amount // 1000)
        return f"{amount}m"
    plain = str(amount)
    if amount == 0 or not is_byte_resource(resource_name):
        return plain
    candidates = [
        c
        for c in (
            _suffixed(amount, 1024, ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")),
            _suffixed(amount, 1000, ("k", "M", "G", "T", "P", "E")),
            plain,
        )
        if c is not None
    ]
    return min(candidates, key=len)  # min() keeps the first of equal lengths: binary, then decimal


#: the binary units a byte amount is shown in, largest first (as ``kubectl top`` and ``describe`` read)
_READABLE_BYTES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _few_digits(value: float, decimals: int) -> str:
    """``value`` with at most ``decimals`` decimals, trailing zeros (and a trailing point) dropped."""
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def readable_quantity(resource_name: str, amount: int) -> str:
    """An amount as returned by :func:`resource_amount` for a person to read, not to parse back:
    cpu below a core in millicores (``250m``), from a core on in cores (``1.5``, ``7.25``, ``9662``:
    two decimals below 10 cores, one below 100, none above); bytes in the largest binary unit they
    reach (``512Mi``, ``1.5Gi``, ``9.9Ti``: one decimal below 10 of the unit, none above); anything
    else as the plain integer. :func:`format_quantity` gives the exact form."""
    if amount < 0:
        return "-" + readable_quantity(resource_name, -amount)
    if is_cpu_resource(resource_name):
        if amount < 1000:
            return f"{amount}m" if amount else "0"
        cores = amount / 1000
        return _few_digits(cores, 2 if cores < 10 else 1 if cores < 100 else 0)
    if not is_byte_resource(resource_name):
        return str(amount)
    for unit, size in _READABLE_BYTES:
        if amount >= size:
            value = amount / size
            return _few_digits(value, 1 if value < 10 else 0) + unit
    return str(amount)


def readable_share(resource_name: str, requested: int, allocatable: int) -> str:
    """``requested / allocatable`` of one resource for a person to read (:func:`readable_quantity`
    each): ``9.9Ti / 60Ti``, ``9662 / 15360 cores``, ``500m / 8 cores``, ``5 / 12``."""
    text = f"{readable_quantity(resource_name, requested)} / {readable_quantity(resource_name, allocatable)}"
    return text + " cores" if is_cpu_resource(resource_name) and allocatable >= 1000 else text
