"""`DeviceBodyState`: a `BodyState` whose arrays live on a Warp device, and `itemsize` (imports
Warp)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

__all__ = ["DeviceBodyState", "itemsize"]


def itemsize(arr: wp.array) -> int:
    """Bytes of one element of `arr` (its dtype's size), for counting what a copy moves."""
    return wp.types.type_size_in_bytes(arr.dtype)


@dataclass(frozen=True)
class DeviceBodyState:
    """The `BodyState` of N envs on a Warp device: float32 arrays pos_w, lin_vel_w, ang_vel_w
    (N, B, 3) and quat_w (N, B, 4) wxyz, joint_pos, joint_vel (N, J); world frame, SI units.
    The arrays may be strided views of a backend's own buffer (`of_rows`)."""

    pos_w: wp.array
    quat_w: wp.array
    lin_vel_w: wp.array
    ang_vel_w: wp.array
    joint_pos: wp.array
    joint_vel: wp.array

    @classmethod
    def zeros(cls, n: int, b: int, j: int, device: str) -> DeviceBodyState:
        """Zeroed state of `n` envs, `b` bodies, `j` joints (unit quaternions) on `device`."""
        quat = np.zeros((n, b, 4), np.float32)
        quat[..., 0] = 1.0
        return cls(
            pos_w=wp.zeros((n, b, 3), dtype=float, device=device),
            quat_w=wp.array(quat, dtype=float, device=device),
            lin_vel_w=wp.zeros((n, b, 3), dtype=float, device=device),
            ang_vel_w=wp.zeros((n, b, 3), dtype=float, device=device),
            joint_pos=wp.zeros((n, j), dtype=float, device=device),
            joint_vel=wp.zeros((n, j), dtype=float, device=device),
        )

    @classmethod
    def of_rows(cls, rows: wp.array, b: int, j: int) -> DeviceBodyState:
        """Views of a contiguous (N, C) float32 buffer whose row i holds env i as positions
        (3B), quaternions (4B), linear (3B) and angular (3B) velocities, joint positions (J)
        and velocities (J), then any further columns (C >= 13B + 2J). The views share the
        buffer's memory and keep it alive.

        Raises:
            ValueError: not a contiguous 2-D float32 buffer with enough columns.
        """
        if rows.ndim != 2 or rows.dtype != wp.float32 or not rows.is_contiguous:
            raise ValueError(f"of_rows needs a contiguous (N, C) float32 buffer, got "
                             f"{rows.ndim}-D {rows.dtype}")  # fmt: skip
        n, c = rows.shape
        if c < 13 * b + 2 * j:
            raise ValueError(f"of_rows: {c} columns hold fewer than 13 B + 2 J = "
                             f"{13 * b + 2 * j} (B = {b}, J = {j})")  # fmt: skip
        item, row = 4, 4 * c

        def view(start: int, shape: tuple[int, ...]) -> wp.array:
            strides = (row, *(item * int(np.prod(shape[k + 1 :])) for k in range(1, len(shape))))
            arr = wp.array(ptr=rows.ptr + item * start, shape=(n, *shape[1:]), strides=strides,
                           dtype=float, device=rows.device)  # fmt: skip
            arr._ref = rows  # the view keeps the buffer alive
            return arr

        return cls(
            pos_w=view(0, (n, b, 3)),
            quat_w=view(3 * b, (n, b, 4)),
            lin_vel_w=view(7 * b, (n, b, 3)),
            ang_vel_w=view(10 * b, (n, b, 3)),
            joint_pos=view(13 * b, (n, j)),
            joint_vel=view(13 * b + j, (n, j)),
        )
