"""The torch device a run learns on: ``--device cpu | cuda | cuda:N | auto``.

`resolve_device` turns what the user asked for into a device torch lists, or refuses it in one
line naming the devices torch does list (a CPU build of torch lists none but the CPU).
"""

from __future__ import annotations

__all__ = ["available_devices", "resolve_device"]

AUTO = "auto"


def available_devices() -> list[str]:
    """The devices torch lists here: ``"cpu"``, then ``"cuda:0"`` ... ``"cuda:{n-1}"``."""
    import torch

    return ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]


def resolve_device(name: str) -> str:
    """The device a run named `name` learns on, as torch names it.

    ``"auto"``: ``"cuda:0"`` when torch lists a CUDA device (the first one
    ``CUDA_VISIBLE_DEVICES`` leaves), else ``"cpu"``. ``"cuda"``: ``"cuda:0"``. ``"cpu"`` and
    ``"cuda:N"`` are kept when torch lists them.

    Raises:
        ValueError: a name torch does not parse, or a device torch does not list here (the
            message names the devices it lists and, for CUDA on a CPU build, why).
    """
    import torch

    listed = available_devices()
    if name == AUTO:
        return "cuda:0" if len(listed) > 1 else "cpu"
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ValueError(f"device {name!r} is not a torch device; use one of "
                         f"{[AUTO, *listed]}") from None  # fmt: skip
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", 0)
    resolved = str(device)
    if resolved not in listed:
        why = ""
        if device.type == "cuda" and torch.version.cuda is None:
            why = (f" (torch {torch.__version__} is a CPU build: docs/training.md, 'Training on a "
                   "GPU')")  # fmt: skip
        elif device.type == "cuda":
            why = f" (torch sees {torch.cuda.device_count()} CUDA device(s))"
        raise ValueError(f"device {name!r} is not available here{why}; torch lists {listed}")
    return resolved
