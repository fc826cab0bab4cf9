"""Set any field of a run's config by its dotted path: ``gym-motion train --set PATH=VALUE``.

A path walks dataclass fields and dict keys from a `RunConfig`, e.g. ``num_envs``,
``env.episode_length_s``, ``env.rewards.action_rate.weight``,
``env.observations.policy.joint_vel.scale``, ``curricula.reset_noise.params.steps`` or
``ppo.learning_rate``. Values are JSON. In a dict of term configs, a JSON object gives the
fields that change (``{"weight": -0.2}``), or a whole new term with its function as
``"module:name"`` (``{"func": "my_terms:feet_air_time", "weight": 0.5}``; the module is
imported); ``null`` removes the entry. Each config checks the value it is given, so a bad
one is refused with the field's name.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import typing
from typing import Any

__all__ = ["apply_settings", "parse_setting", "with_setting"]


def parse_setting(item: str) -> tuple[str, Any]:
    """``"PATH=VALUE"`` -> (path, value): the value parsed as JSON, else kept as text (a
    value that starts like a JSON object, list or string must be valid JSON).

    Raises:
        ValueError: an item without ``=``, with an empty path, or with a value that is not
            valid JSON though it starts like JSON.
    """
    path, sep, text = item.partition("=")
    if not sep or not path:
        raise ValueError(f"expected PATH=VALUE (e.g. env.episode_length_s=5), got {item!r}")
    try:
        return path, json.loads(text)
    except json.JSONDecodeError as exc:
        if text.strip()[:1] in ("{", "[", '"'):
            raise ValueError(
                f"{path}: {text!r} is not valid JSON ({exc.msg}, column {exc.colno}); e.g. "
                "'{\"weight\": -0.2}' with double quotes, quoted for the shell"
            ) from None
        return path, text


def apply_settings(obj: Any, settings: list[tuple[str, Any]]) -> Any:
    """`obj` with each (path, value) of `settings` set (`with_setting`). A setting that a
    config refuses only because of one not yet made (e.g. a term removed before the
    curriculum that switches it) is retried after the others, so their order does not
    matter.

    Raises:
        ValueError: the first error of a setting that no order makes valid.
    """
    pending = list(settings)
    while pending:
        failed, first = [], None
        for path, value in pending:
            try:
                obj = with_setting(obj, path, value)
            except ValueError as exc:
                failed.append((path, value))
                first = first or exc
        if len(failed) == len(pending):
            assert first is not None
            raise first
        pending = failed
    return obj


def with_setting(obj: Any, path: str, value: Any) -> Any:
    """A copy of `obj` (a config dataclass or dict) with the field or key at dotted `path` set
    to `value` (see the module docstring); `obj` itself is not changed.

    Raises:
        ValueError: a path through a field or key that does not exist (the message names it
            and lists the valid ones), a term function that cannot be imported, or a value
            the config refuses (the message starts with the path).
    """
    if path.startswith("env.robot.") and path != "env.robot.mjcf_path":
        raise ValueError(
            f"{path}: config.json records the robot by name and MJCF only, so a run could not "
            "be evaluated or resumed with it; set env.robot.mjcf_path, or add a RobotSpec "
            "(docs/architecture.md, 'A robot')"
        )
    try:
        return _set(obj, path.split("."), value, path, None)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        raise ValueError(text if text.startswith(path) else f"{path}: {text}") from None


def _set(obj: Any, parts: list[str], value: Any, path: str, hint: Any) -> Any:
    """`obj` with `parts` set; `hint` is `obj`'s annotated type (None: unknown), whose value
    type builds a new dict entry when no sibling shows it."""
    head, rest = parts[0], parts[1:]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = [f.name for f in dataclasses.fields(obj) if f.init]
        if head not in names:
            raise ValueError(f"{path}: {type(obj).__name__} has no field {head!r}; it has {names}")
        current, field_hint = getattr(obj, head), typing.get_type_hints(type(obj)).get(head)
        if rest:
            new = _set(current, rest, value, path, field_hint)
        else:
            new = _value(current, value, path, field_hint)
        return dataclasses.replace(obj, **{head: new})
    if isinstance(obj, dict):
        args = typing.get_args(hint)
        entry_hint = args[1] if typing.get_origin(hint) is dict and len(args) == 2 else None
        if rest:
            if head not in obj:
                raise ValueError(f"{path}: no key {head!r}; there are {sorted(obj)}")
            return {**obj, head: _set(obj[head], rest, value, path, entry_hint)}
        if value is None and head in obj:
            return {k: v for k, v in obj.items() if k != head}
        if head in obj:
            return {**obj, head: _value(obj[head], value, path, entry_hint)}
        return {**obj, head: _new_entry(obj, value, path, entry_hint)}
    raise ValueError(f"{path}: {head!r} is inside a {type(obj).__name__} value, not a config")


def _value(template: Any, value: Any, path: str, hint: Any) -> Any:
    """`value` in the form of `template`, the value it replaces: the config dataclass with the
    fields of a JSON object changed, a tuple from a JSON list, a whole float such as ``1e6`` as
    an int where the field is an int, else `value` as it is."""
    if dataclasses.is_dataclass(template) and isinstance(value, dict):
        return dataclasses.replace(template, **_fields(value, path))
    if isinstance(template, tuple) and isinstance(value, list):
        return _plain(value)
    if hint is int and isinstance(value, float) and value.is_integer():
        return int(value)  # e.g. total_steps=1e6
    if isinstance(template, dict) and isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, entry in value.items():  # e.g. a whole term dict: each entry built as new
            out[key] = _set(out, [key], entry, f"{path}.{key}", hint)[key]
        return out
    return value


def _new_entry(siblings: dict[str, Any], value: Any, path: str, hint: Any) -> Any:
    """A new dict entry from `value`: a config dataclass (the annotated entry type, else a
    sibling's type) from a JSON object that names its function."""
    cls = hint if dataclasses.is_dataclass(hint) else None
    if cls is None:
        sibling = next(iter(siblings.values()), None)
        cls = type(sibling) if dataclasses.is_dataclass(sibling) else None
    if cls is None or not isinstance(value, dict):
        return _plain(value) if isinstance(value, list) else value
    fields = _fields(value, path)
    if "func" not in fields:
        raise ValueError(f'{path}: a new term needs its function, e.g. {{"func": "module:name", '
                         "...}")  # fmt: skip
    return cls(**fields)


def _fields(value: dict[str, Any], path: str) -> dict[str, Any]:
    return {k: _function(v, path) if k == "func" else _plain(v) for k, v in value.items()}


def _plain(value: Any) -> Any:
    """JSON lists as tuples (configs hold tuples)."""
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _function(name: Any, path: str) -> Any:
    """The function ``"module:name"`` names, its module imported.

    Raises:
        ValueError: not such a string, or a module or name that cannot be imported.
    """
    from gym_motion.envs.cfg_json import decode

    if not isinstance(name, str) or ":" not in name:
        raise ValueError(f"{path}: a term function is given as 'module:name', got {name!r}")
    module = name.partition(":")[0]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"{path}: cannot import {module!r} for {name!r} ({exc})") from None
    return decode({"__func__": name})
