"""Motion data: clips, CSV conversion, the clip library and reset-state sampling.

Public API:
    MotionClip, load_clip, save_clip, MotionFormatError, FORMAT_VERSION  (clip.py)
    convert_csv                                                           (convert.py)
    MotionLibrary, Playback                                               (library.py)
    MotionSampler, SamplingMode                                           (sampler.py)
    DEFAULT_MOTION_PATH, make_default_motion                              (default.py)
"""

from gym_motion.motion.clip import (
    FORMAT_VERSION,
    MotionClip,
    MotionFormatError,
    load_clip,
    save_clip,
    validate_clip,
)
from gym_motion.motion.convert import convert_csv
from gym_motion.motion.default import DEFAULT_MOTION_PATH, make_default_motion
from gym_motion.motion.library import MotionLibrary, Playback
from gym_motion.motion.sampler import MotionSampler, SamplingMode

__all__ = [
    "DEFAULT_MOTION_PATH",
    "FORMAT_VERSION",
    "MotionClip",
    "MotionFormatError",
    "MotionLibrary",
    "MotionSampler",
    "Playback",
    "SamplingMode",
    "convert_csv",
    "load_clip",
    "make_default_motion",
    "save_clip",
    "validate_clip",
]
