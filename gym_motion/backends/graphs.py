"""`GraphLauncher`: named launch sequences replayed as graphs (CUDA graphs on a GPU, Warp's
recorded CPU graphs on its CPU device), for the MuJoCo Warp backend and the device MDP."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import warp as wp

__all__ = ["GraphLauncher"]


class GraphLauncher:
    """Named launch sequences (callables that queue Warp launches, memsets and copies whose
    arguments stay the same): the first run of each is eager (its kernels load or compile
    then), the second is captured as a graph and replayed, and later runs replay it.

    A capture that fails (nothing of it has run: captured launches run at replay) warns once
    with the error and turns capturing off; every sequence then runs eagerly.

    Args:
        device: the Warp device ("cuda:0", "cpu").
        stream: the CUDA stream captures and replays go to; None: the device's current one
            (always on the CPU device).
        capture: whether to capture at all.
        who: who launches, for the warning (e.g. "MuJoCo Warp on cuda:0").
        warning: the warning's category.

    Attributes:
        capture: whether sequences are (still) captured.
        capture_s: seconds each captured sequence took to capture, by name.
    """

    def __init__(
        self,
        device: str,
        stream: wp.Stream | None,
        capture: bool,
        who: str,
        warning: type[Warning] = UserWarning,
    ):
        self.device, self.stream = device, stream
        self.capture = bool(capture)
        self.capture_s: dict[str, float] = {}
        self.graphs: dict[str, wp.Graph] = {}
        self._warm: set[str] = set()  # sequences that ran once eagerly
        self._who, self._warning = who, warning

    def run(self, name: str, sequence: Callable[[], None]) -> None:
        """Run `sequence` under `name`: replay its graph; or capture it on its second run,
        when capturing; or run it eagerly."""
        graph = self.graphs.get(name)
        if graph is None and self.capture and name in self._warm:
            t0 = time.perf_counter()
            try:
                with wp.ScopedCapture(device=self.device, stream=self.stream) as capture:
                    sequence()
            except Exception as exc:  # noqa: BLE001 - Warp and the CUDA driver raise several
                self.capture, self.graphs = False, {}
                warnings.warn(
                    f"{self._who}: capturing the {name!r} launches failed ({type(exc).__name__}:"
                    f" {exc}); every kernel is launched eagerly from now on (slower)",
                    self._warning,
                    stacklevel=3,
                )
            else:
                graph = self.graphs[name] = capture.graph
                self.capture_s[name] = time.perf_counter() - t0
        if graph is not None:
            wp.capture_launch(graph, stream=self.stream)
        else:
            sequence()
            self._warm.add(name)

    def forget(self, name: str) -> None:
        """Drop the graph of `name` (its launches changed): its next run captures it again."""
        self.graphs.pop(name, None)

    def clear(self) -> None:
        """Drop every graph (their memory returns to Warp)."""
        self.graphs = {}
