"""The end of a control step, per env: flags, masked reward, episode length and time limit."""

from __future__ import annotations

import numpy as np
from numba import prange

from gym_motion.kernels.dispatch import row_kernel


@row_kernel
def end_step(any_term, nonfinite, term_reward, past_clip_end, held, episode_length,
             time_limit_offset, max_episode_steps, terminated, truncated, reward, clip_end, done,
             teleport):  # fmt: skip
    """The step's results of each env (`TrackingVecEnv.step`, steps 4 and 6):

    - terminated = a termination term fired or the physics state went non-finite;
    - reward = the terms' reward, 0 where the state went non-finite;
    - episode_length += 1; truncated = episode_length + time_limit_offset >= max_episode_steps
      and not terminated (the time limit);
    - rows `held` (being autoreset, NEXT_STEP mode: the step is not theirs) get reward 0 and no
      flags;
    - done = terminated or truncated; teleport = past the clip's end and not done.

    any_term, nonfinite, past_clip_end, held (N,) bool; term_reward (N,) float32;
    episode_length, time_limit_offset (N,) int32 (episode_length updated); max_episode_steps
    int. Written: terminated, truncated, clip_end, done, teleport (N,) bool; reward (N,)
    float32.

    Returns (number of done rows, number of teleport rows).
    """
    num_done = 0
    num_teleport = 0
    for i in prange(reward.shape[0]):
        term = any_term[i] or nonfinite[i]
        r = np.float32(0.0) if nonfinite[i] else term_reward[i]
        episode_length[i] += 1
        trunc = episode_length[i] + time_limit_offset[i] >= max_episode_steps and not term
        end = past_clip_end[i]
        if held[i]:
            r = np.float32(0.0)
            term = trunc = end = False
        terminated[i] = term
        truncated[i] = trunc
        reward[i] = r
        clip_end[i] = end
        d = term or trunc
        done[i] = d
        teleport[i] = end and not d
        num_done += d
        num_teleport += end and not d
    return num_done, num_teleport


@row_kernel
def count_down(timer, dt):
    """``timer -= dt`` (N,) float64, s; returns how many timers are now <= 0 (due)."""
    due = 0
    for i in prange(timer.shape[0]):
        timer[i] -= dt
        due += timer[i] <= 0.0
    return due
