"""`shares_mdp_device`: the device MDP's Warp device against a torch learner's device."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from gym_motion.adapters.torch_device import shares_mdp_device  # noqa: E402


@pytest.mark.parametrize(
    ("mdp", "learner", "shares"),
    [
        (None, "cpu", False),  # the host MDP
        ("cpu", "cpu", True),
        ("cpu", torch.device("cpu"), True),
        ("cpu", "cuda:0", False),
        ("cuda:0", "cpu", False),
        ("cuda:0", "cuda:0", True),
        ("cuda:1", "cuda:0", False),
        ("cuda:0", "cuda", True),  # torch's current CUDA device is 0 here
        ("cuda:1", "cuda", False),
    ],
)
def test_cuda_without_an_index_is_torchs_current_device(monkeypatch, mdp, learner, shares):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert shares_mdp_device(SimpleNamespace(mdp_device=mdp), learner) is shares
