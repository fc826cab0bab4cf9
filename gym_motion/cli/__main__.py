"""``python -m gym_motion.cli ...``: the ``gym-motion`` command, for a Python without the
console script on its PATH."""

from gym_motion.cli import main

raise SystemExit(main())
