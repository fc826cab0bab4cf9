"""Regenerate the embedded default motion ``gym_motion/assets/motions/default.npz``.

Usage (repo root, package installed or ``PYTHONPATH=.``):
``python scripts/make_default_motion.py [OUT.npz]``. Deterministic: rerunning it with the same
MuJoCo and numpy reproduces the file byte for byte (tests/motion/test_default_motion.py).
"""

from __future__ import annotations

import sys

from gym_motion.motion.default import DEFAULT_MOTION_PATH, write_default_motion


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    path = write_default_motion(argv[0] if argv else DEFAULT_MOTION_PATH)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
