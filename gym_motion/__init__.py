"""gym_motion: Gymnasium-native vectorized humanoid motion-tracking environments."""

__version__ = "0.1.0"
