"""The CLI's numeric flags, checked as the configs check their fields (`config_values`)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from gym_motion import config_values as cv

__all__ = ["cli_number"]


def cli_number(kind: type, low: float | None, *, low_open: bool = False) -> Callable[[str], Any]:
    """An argparse ``type``: parses `kind` (int or float) and checks it is finite and >= `low`
    (> `low` with `low_open`; None: any finite value); argparse then names the flag in its
    error, e.g. ``argument --episodes: must be an integer >= 1, got '0'``."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str) -> Any:
        try:
            value = kind(text)
            ok = math.isfinite(value) and (
                low is None or (value > low if low_open else value >= low)
            )
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not ok:
            raise argparse.ArgumentTypeError(
                f"must be {cv.range_text(what, low, None, low_open)}, got {text!r}"
            )
        return value

    return parse
