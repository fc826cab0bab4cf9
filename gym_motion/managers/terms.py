"""Term functions bound once to their buffers, so that a step calls only their kernels.

A term is ``term(state, out, **params)``: it reads the MDP state and writes `out`. A manager
evaluates it every step; the state's buffers, the output view and the params never change, so
for the built-in terms the per-step work of slicing the state and unpacking the params is done
once: `bound_term` makes a term from a *binder* ``binder(state, out, **params) -> Callable[[],
None]`` that returns the evaluation with its arguments fixed (its kernel and array views).
Calling the term still works as before (bind, then evaluate). Managers use `bind_term`, which
also takes plain term functions (user terms), called with their arguments each step.

At one env a bound term costs ~0.5 us a step against ~1.4 us called directly
(``python benchmarks/small_batch.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["bound_term", "bind_term"]


def bound_term(binder: Callable[..., Callable[[], None]]) -> Callable[..., None]:
    """Decorator: the term ``term(state, out, **params)`` of `binder` (see the module
    docstring); ``term.bind`` is `binder`. Every array the evaluation uses must be a buffer (or
    a view of one) that lives as long as the state."""

    @functools.wraps(binder)
    def term(state: Any, out: Any, **params: Any) -> None:
        binder(state, out, **params)()

    term.bind = binder
    return term


def bind_term(
    func: Callable[..., None], state: Any, out: Any, params: dict[str, Any]
) -> Callable[[], None]:
    """The evaluation of term `func` on `state` into `out` with `params`, as a call without
    arguments: ``func.bind(state, out, **params)`` for a `bound_term`, else
    ``partial(func, state, out, **params)``."""
    binder = getattr(func, "bind", None)
    if binder is not None:
        return binder(state, out, **params)
    return functools.partial(func, state, out, **params)
