"""The MDP's per-step kernels for a GPU, in Warp: the twins of `gym_motion.kernels`' Numba
kernels, for a device MDP that reads MuJoCo Warp's arrays where they are.

Each kernel has its host twin's name, arguments and math (the same float32 operations in the
same order where Warp allows), one Warp thread per env row, and is checked against the same
float64 NumPy oracle (``tests/kernels/oracle.py``) on Warp's CPU device
(``tests/kernels/test_device_kernels.py``). Two sources, not one: why, and where the device MDP
stands, is in docs/backends.md ("The MDP on the GPU"). Importing this package imports Warp.
"""
