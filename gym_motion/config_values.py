"""Checks of config values, with one error form: ``<Owner>.<field> must be ..., got <value>``
(`gym_motion.cli.numbers.cli_number` makes the same check an argparse type for the CLI's
numeric flags).

The config dataclasses (`gym_motion.envs.config`, the managers' term configs) call these in
``__post_init__``, so a bad value is refused where it is written (or read from JSON), by name,
instead of failing later inside a kernel or giving NaN rewards.
"""

from __future__ import annotations

import inspect
import math
import numbers
from typing import Any


def real(
    where: str, value: Any, *, low: float | None = None, high: float | None = None,
    low_open: bool = False,
) -> float:  # fmt: skip
    """`value` as a float: a finite real number (not a bool or a string) in [low, high]
    ((low, high] with `low_open`).

    Raises:
        ValueError: otherwise, naming `where` (e.g. "SimCfg.physics_dt") and the value.
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    try:
        x = float(value) if ok else math.nan
    except OverflowError:  # an int beyond float's range
        x = math.nan
    ok = ok and math.isfinite(x)
    if ok and low is not None:
        ok = x > low if low_open else x >= low
    if ok and high is not None:
        ok = x <= high
    if not ok:
        raise ValueError(f"{where} must be {range_text('a finite number', low, high, low_open)}"
                         f", got {value!r}")  # fmt: skip
    return x


def integer(where: str, value: Any, *, low: int | None = None) -> int:
    """`value` as an int: an integral number (not a bool, not 2.5) >= `low`.

    Raises:
        ValueError: otherwise, naming `where` and the value.
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or (low is not None and int(value) < low):
        raise ValueError(f"{where} must be {range_text('an integer', low, None, False)}, "
                         f"got {value!r}")  # fmt: skip
    return int(value)


def interval(
    where: str, value: Any, *, low: float | None = None, low_open: bool = False
) -> tuple[float, float]:
    """`value` as a (low, high) pair of finite numbers with low <= high (both >= `low`, or
    > `low` with `low_open`).

    Raises:
        ValueError: otherwise, naming `where` and the value.
    """
    if not _pair(value):
        raise ValueError(f"{where} must be a (low, high) pair of numbers, got {value!r}")
    a = real(f"{where}[0]", value[0], low=low, low_open=low_open)
    b = real(f"{where}[1]", value[1], low=low, low_open=low_open)
    if a > b:
        raise ValueError(f"{where} must have low <= high, got {value!r}")
    return a, b


def intervals(where: str, value: Any, count: int) -> tuple[tuple[float, float], ...]:
    """`value` as `count` (low, high) pairs (see `interval`).

    Raises:
        ValueError: not `count` pairs, or a bad pair, naming `where` and the value.
    """
    if not _sequence(value) or len(value) != count:
        raise ValueError(f"{where} must be {count} (low, high) pairs, got {value!r}")
    return tuple(interval(f"{where}[{i}]", v) for i, v in enumerate(value))


def term_dict(where: str, value: Any, cls: type) -> None:
    """Check that `value` is a dict of str -> `cls` (a term config).

    Raises:
        ValueError: otherwise, naming `where`, the offending entry and the expected type.
    """
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a dict of name -> {cls.__name__}, got {value!r}")
    for name, term in value.items():
        if not isinstance(name, str) or not isinstance(term, cls):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise ValueError(
                f"{where}[{name!r}] must be {article} {cls.__name__} under a str name, got "
                f"{type(term).__name__}"
            )


def params(where: str, value: Any, func: Any = None, leading: int = 0) -> None:
    """Check a term's keyword arguments: a dict with str keys; a ``"std"`` entry (the kernel
    width of the exp rewards) a finite number > 0; a ``"bodies"`` entry None or a non-empty
    tuple of names. With `func`, also that `func` takes each key (``"bodies"`` as the
    ``body_ids`` the managers resolve it to) and gets every argument it needs after its first
    `leading` ones (those the manager passes).

    Raises:
        ValueError: otherwise, naming `where`, the entry and the value.
    """
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{where} must be a dict of keyword arguments, got {value!r}")
    if func is not None:
        _signature_takes(where, value, func, leading)
    if "std" in value:
        real(f"{where}['std']", value["std"], low=0.0, low_open=True)
    bodies = value.get("bodies")
    if "bodies" in value and bodies is not None:
        if (not isinstance(bodies, (tuple, list)) or not bodies
                or not all(isinstance(b, str) for b in bodies)):  # fmt: skip
            raise ValueError(
                f"{where}['bodies'] must be None (all tracked bodies) or a non-empty tuple of "
                f"body names, got {bodies!r}"
            )


def _signature_takes(where: str, value: dict, func: Any, leading: int) -> None:
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # a builtin or C function: nothing to check against
        return
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return
    rest = [p for p in parameters[leading:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    known = {p.name for p in rest}
    given = {("body_ids" if k == "bodies" and "bodies" not in known else k): k for k in value}
    name = getattr(func, "__name__", repr(func))
    unknown = sorted(given[k] for k in given if k not in known)
    if unknown:
        raise ValueError(f"{where} has {unknown}, which {name} does not take; it takes "
                         f"{sorted(known)}")  # fmt: skip
    missing = [p.name for p in rest if p.default is p.empty and p.name not in given]
    if missing:
        raise ValueError(f"{where} lacks {missing}, which {name} needs")


def callable_(where: str, value: Any) -> None:
    """Check that `value` is callable.

    Raises:
        ValueError: otherwise, naming `where` and the value.
    """
    if not callable(value):
        raise ValueError(f"{where} must be a function, got {value!r}")


def _sequence(value: Any) -> bool:
    """A tuple, list or 1-D-or-more array (not a str or a dict)."""
    return isinstance(value, (tuple, list)) or (hasattr(value, "shape") and len(value.shape) >= 1)


def _pair(value: Any) -> bool:
    return _sequence(value) and len(value) == 2


def range_text(kind: str, low: float | None, high: float | None, low_open: bool) -> str:
    if low is not None and high is not None:
        return f"{kind} in {'(' if low_open else '['}{low:g}, {high:g}]"
    if low is not None:
        return f"{kind} {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{kind} <= {high:g}"
    return kind
