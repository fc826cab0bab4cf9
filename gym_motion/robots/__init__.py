"""Robots as values: `RobotSpec` and the shipped instances (`gym_motion.robots.g1.G1`);
`JointLayout`, a robot's joints in one compiled model (`RobotSpec.layout`).

`ROBOTS` maps a spec's name to the shipped spec, so a saved config can name its robot.
"""

from gym_motion.robots.g1 import G1
from gym_motion.robots.layout import JointLayout
from gym_motion.robots.spec import RobotSpec

ROBOTS: dict[str, RobotSpec] = {G1.name: G1}

__all__ = ["G1", "ROBOTS", "JointLayout", "RobotSpec"]
