"""JSON form of the task config (`TrackingEnvCfg.to_json` / `from_json`), so that a run's
``config.json`` rebuilds the same env.

Frozen dataclasses are written as objects tagged with ``"__type__": "module:Class"``, term
functions as ``{"__func__": "module:name"}``, the robot as ``{"__robot__": name, "mjcf_path":
path}`` (a robot of `gym_motion.robots.ROBOTS`; the path is null for the robot's own MJCF),
tuples as lists (read back as tuples: configs hold no lists). Reading imports nothing new and
runs no code but config constructors: a ``__type__`` must name a dataclass and a ``__func__`` a
Python function, each by its own ``module:qualname`` (no path through another module's
attributes), from ``gym_motion`` or from a module that is already imported and is not part of
Python's standard library (import your own term module before `from_json`). The functions a
config names run when an env is built from it: load configs you trust.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from gym_motion.robots import ROBOTS, RobotSpec


def dumps(cfg: Any) -> str:
    """`cfg` (a config dataclass) as indented JSON text."""
    return json.dumps(_encode(cfg), indent=2)


def encode(obj: Any) -> Any:
    """`obj` (config dataclasses, term functions, dicts, tuples, numbers) as JSON values."""
    return _encode(obj)


def decode(value: Any) -> Any:
    """The object `encode` wrote (see `loads`)."""
    return _decode(value)


def loads(text: str) -> Any:
    """The object `dumps` wrote.

    Raises:
        ValueError: an unknown robot, a field its class does not have (a config of another
            version), or a ``__type__`` / ``__func__`` that is not a
            dataclass / function of ``gym_motion`` or of an imported non-standard-library
            module, named by its own path (the message names it).
    """
    return _decode(json.loads(text))


def _path_of(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _encode(obj: Any) -> Any:
    if isinstance(obj, RobotSpec):
        shipped = ROBOTS.get(obj.name)
        own_mjcf = shipped is not None and obj.mjcf_path == shipped.mjcf_path
        return {"__robot__": obj.name, "mjcf_path": None if own_mjcf else str(obj.mjcf_path)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"__type__": _path_of(type(obj))}
        out.update({f.name: _encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
        return out
    if callable(obj) and hasattr(obj, "__qualname__"):
        return {"__func__": _path_of(obj)}
    if isinstance(obj, dict):
        return {str(k): _encode(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [_encode(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalar
        return obj.item()
    return obj


def _resolve(path: Any, kind: str) -> Any:
    """The dataclass (`kind` "__type__") or function ("__func__") named ``module:qualname``.

    Raises:
        ValueError: not a "module:qualname" string, a module that is neither ``gym_motion``'s
            nor imported, a standard-library module, a name that does not exist, an object
            whose own path differs (reached through another module), or the wrong kind of
            object (the message names the path).
    """
    if not isinstance(path, str) or ":" not in path:
        raise ValueError(f"config {kind} must be a 'module:name' string, got {path!r}")
    module, _, name = path.partition(":")
    top = module.partition(".")[0]
    if top in sys.stdlib_module_names or top == "__future__":
        raise ValueError(
            f"config names {path!r} from Python's standard library; a config may only name "
            "config dataclasses and term functions"
        )
    if top != "gym_motion" and module not in sys.modules:
        raise ValueError(
            f"config names {path!r} from module {module!r}, which is not imported: import it "
            "before loading the config (configs do not import code by themselves; on the "
            f"command line: gym-motion --import {module} ...)"
        )
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ValueError(f"config names {path!r}, which does not exist")
    wanted = (
        isinstance(obj, type) and dataclasses.is_dataclass(obj)
        if kind == "__type__"
        else inspect.isfunction(obj)
    )
    if not wanted or _path_of(obj) != path:
        what = "a dataclass" if kind == "__type__" else "a Python function"
        raise ValueError(
            f"config {kind} {path!r} is not {what} defined there (a config may only name "
            "config dataclasses and term functions by their own module:name)"
        )
    return obj


def _decode(obj: Any) -> Any:
    if isinstance(obj, list):
        return tuple(_decode(v) for v in obj)
    if not isinstance(obj, dict):
        return obj
    if "__robot__" in obj:
        name = obj["__robot__"]
        if name not in ROBOTS:
            raise ValueError(f"config names robot {name!r}; known robots: {sorted(ROBOTS)}")
        robot = ROBOTS[name]
        mjcf = obj.get("mjcf_path")  # absent or null: the robot's own MJCF
        return robot if mjcf is None else robot.with_mjcf(mjcf)
    if "__func__" in obj:
        return _resolve(obj["__func__"], "__func__")
    if "__type__" in obj:
        cls = _resolve(obj["__type__"], "__type__")
        kwargs = {k: _decode(v) for k, v in obj.items() if k != "__type__"}
        try:
            return cls(**kwargs)
        except TypeError as exc:  # a key this version's class does not have
            known = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(k for k in kwargs if k not in known)
            raise ValueError(
                f"config {cls.__name__} has no field {unknown[0] if unknown else ''!r} "
                f"({' '.join(str(exc).split())}): written by another version of gym_motion?"
            ) from None
    return {k: _decode(v) for k, v in obj.items()}
