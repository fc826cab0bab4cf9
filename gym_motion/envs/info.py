"""The info dict of `TrackingVecEnv.step`: the one place its schema is built and documented.

Every value is a per-env array of length N with a ``_<key>`` bool mask (gymnasium's vector
convention: the value is meaningful where the mask is True). Keys are namespaced; ``episode``
is left to gymnasium's `RecordEpisodeStatistics`.

=============================== ======= ===========================================================
key                             dtype   meaning (mask)
=============================== ======= ===========================================================
``reward/<term>``               float32 this step's weighted reward term, before dt (every env that
                                        stepped; rows being autoreset in NEXT_STEP mode are masked)
``clip_end``                    bool    the env passed its clip's end and was re-initialised on a
                                        new frame; the episode goes on (mask: all True)
``final/return``                float32 episode return (envs whose episode ended on this step)
``final/length``                int32   episode length, control steps
``final/reward/<term>``         float32 episode sum of the term, dt-scaled
``final/termination/<cause>``   bool    why it ended: each termination term, ``nonfinite`` (the
                                        physics state blew up) and ``time_out`` (truncation)
``final/error/<name>``          float32 episode mean of each tracking error of
                                        `gym_motion.kernels.metrics.TRACKING_ERRORS` (m, rad)
``final_obs``, ``final_info``   -       SAME_STEP mode only: the last observation of the ended
                                        episodes and the ``final/*`` keys (gymnasium's names)
=============================== ======= ===========================================================
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

REWARD = "reward/"
FINAL = "final/"
CLIP_END = "clip_end"


def step_info(
    term_names: Sequence[str], columns: np.ndarray, stepped: np.ndarray
) -> dict[str, Any]:
    """Per-step keys: ``reward/<term>``, the rows of `columns` (K, N) float32 (the step's
    weighted terms, a new array: `RewardManager.accumulate`), masked by `stepped` (N,) bool."""
    keys, mask_keys = _reward_keys(tuple(term_names))
    info: dict[str, Any] = dict(zip(keys, columns, strict=True))
    info.update(dict.fromkeys(mask_keys, stepped))
    return info


@functools.cache
def _final_keys(keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``final/<key>`` and ``_final/<key>`` keys of episode results `keys` (built once)."""
    return tuple(FINAL + k for k in keys), tuple("_" + FINAL + k for k in keys)


@functools.cache
def _reward_keys(term_names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``reward/<term>`` and ``_reward/<term>`` keys of the terms (built once)."""
    return tuple(REWARD + n for n in term_names), tuple("_" + REWARD + n for n in term_names)


def add_episode_results(
    info: dict[str, Any], done: np.ndarray, episode: dict[str, np.ndarray]
) -> None:
    """Add ``final/<key>`` for each (N,) array of `episode`, masked by `done` (N,) bool."""
    keys, mask_keys = _final_keys(tuple(episode))
    info.update(zip(keys, episode.values(), strict=True))
    info.update(dict.fromkeys(mask_keys, done))


def add_clip_end(info: dict[str, Any], clip_end: np.ndarray) -> None:
    """Add ``clip_end`` (N,) bool, valid for every env."""
    valid = np.empty_like(clip_end)
    valid.fill(True)
    info[CLIP_END], info["_" + CLIP_END] = clip_end, valid


def add_same_step_final(info: dict[str, Any], final_obs: Any, done: np.ndarray) -> None:
    """SAME_STEP mode: ``final_obs`` and ``final_info`` (the ``final/*`` keys and masks) of the
    envs whose episode ended, masked by `done` (N,) bool."""
    info["final_obs"], info["_final_obs"] = final_obs, done.copy()
    final = {k: v for k, v in info.items() if k.startswith((FINAL, "_" + FINAL))}
    info["final_info"], info["_final_info"] = final, done.copy()
