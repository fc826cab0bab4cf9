"""An ONNX tracking policy run with onnxruntime inside a gym_motion env, whatever trained it.

    from gym_motion.deploy import OnnxPolicy
    from gym_motion.evaluate import evaluate_policy_on_clips

    policy = OnnxPolicy("B_Fence1.onnx")               # metadata from the file
    cfg = policy.env_cfg()                             # the observation it reads
    result = evaluate_policy_on_clips(["B_Fence1.npz"], policy, cfg, playback="frame_per_step")

The policy's deploy metadata (`gym_motion.deploy.metadata`; from the ONNX ``metadata_props``,
or from a YAML/JSON file given as `meta`, whose keys win) says its joint order, default pose,
action scale and observation terms; `OnnxPolicy.bind` maps them onto an env and returns the
plain policy callable (obs -> actions) that `gym_motion.evaluate` runs.

The graph: one observation input (named ``obs``, or the only input but ``time_step``), (B, D)
float32; optionally ``time_step`` (B, 1) float32, fed the env's current motion frame (mjlab's
exporter bakes the clip into the policy and looks its reference up by it); the actions are
the output named ``actions`` (else the only float (B, J) output), (B, J). A graph with a fixed
batch of 1 runs once per env.

Threads: onnxruntime's default session runs a pool of one intra-op thread per core, whose
workers spin after each run; for the one-row policy of an evaluation that doubled the CPU time
of the whole env step for no gain (B_Fence1 on 2 cores: 0.67-0.89 ms CPU per step against
0.35-0.39 ms on one thread; docs/measurements.md, `benchmarks/onnx_threads.py`). The session
is therefore sized to the batch (`session_threads`: one thread, i.e. the calling thread alone,
below `ROWS_PER_ORT_THREAD` rows per extra thread; never more than the process's CPUs; pool
workers do not spin) when the policy is bound to an env, unless the user fixes
``intra_op_threads``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gym_motion.backends.threads import available_cpus
from gym_motion.deploy.metadata import (
    ROOT_ORIGIN_VELOCITY,
    PolicyMapping,
    PolicyMeta,
    read_meta_file,
)
from gym_motion.envs.config import (
    TrackingEnvCfg,
    with_anchor_velocity,
    with_root_origin_velocity,
)

if TYPE_CHECKING:
    from gym_motion.envs.tracking import TrackingVecEnv
    from gym_motion.policy import Obs, Policy

__all__ = ["OBS_INPUT", "ROWS_PER_ORT_THREAD", "TIME_STEP_INPUT", "OnnxPolicy", "session_threads"]

OBS_INPUT = "obs"
TIME_STEP_INPUT = "time_step"
ACTIONS_OUTPUT = "actions"

# Rows each intra-op thread must get before the session grows a thread: in a batch a row of a
# tracking MLP costs ~5 us of one thread (the shipped tracker: 1.2-1.5 ms CPU for 256 rows), so
# 256 rows give each thread ~1.3 ms a run, well above a sleeping pool's wake-up (~0.1 ms). On
# the loaded 2-core machine a second thread gained nothing even at 4096 rows (measurements.md).
ROWS_PER_ORT_THREAD = 256


def session_threads(num_rows: int, cpus: int | None = None) -> int:
    """Intra-op threads for runs of `num_rows` rows: ``clamp(num_rows // ROWS_PER_ORT_THREAD,
    1, cpus)``, `cpus` defaulting to the process's CPUs (`available_cpus`)."""
    cpus = len(available_cpus()) if cpus is None else int(cpus)
    return max(1, min(cpus, int(num_rows) // ROWS_PER_ORT_THREAD))


class OnnxPolicy:
    """An ONNX policy with its deploy metadata, to bind to an env (`bind`).

    Args:
        path: the ONNX file.
        meta: a YAML/JSON metadata file (`PolicyMeta.from_file`) for a policy without
            metadata, or to override some of its keys (a null value drops the key).
        intra_op_threads: onnxruntime's intra-op threads, the calling thread included (1: no
            pool); None sizes them to the batch (`session_threads`): 1 until `bind` or
            `size_for` sees a larger batch.

    Attributes:
        path, meta (`PolicyMeta`), session (``onnxruntime.InferenceSession``), obs_input,
        obs_dim (int, or None when symbolic), takes_time_step (bool), actions_output,
        intra_op_threads (the user's choice or None), threads (the session's intra-op threads).

    Raises:
        FileNotFoundError: no ONNX or metadata file.
        ValueError: an unreadable model, inputs it cannot be fed (other than the observation and
            ``time_step``, or not float32), no single actions output, metadata that is
            missing or malformed (one line naming the file and key), or intra_op_threads < 1.
    """

    policy_name = "onnx"  # what `gym_motion.evaluate` results call it

    def __init__(
        self,
        path: str | os.PathLike,
        meta: str | os.PathLike | None = None,
        intra_op_threads: int | None = None,
    ):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"ONNX policy not found: {self.path}")
        if intra_op_threads is not None and int(intra_op_threads) < 1:
            raise ValueError(f"intra_op_threads must be >= 1 or None, got {intra_op_threads}")
        self.intra_op_threads = None if intra_op_threads is None else int(intra_op_threads)
        self.threads = 0
        self._open_session(self.intra_op_threads or 1)
        props = dict(self.session.get_modelmeta().custom_metadata_map)
        source = str(self.path)
        if meta is not None:
            props.update(read_meta_file(meta))
            source = f"{self.path} with {meta}"
        self.meta = PolicyMeta.from_mapping(props, source)

        inputs = {i.name: i for i in self.session.get_inputs()}
        self.takes_time_step = TIME_STEP_INPUT in inputs
        others = [n for n in inputs if n != TIME_STEP_INPUT]
        if OBS_INPUT in inputs:
            self.obs_input = OBS_INPUT
        elif len(others) == 1:
            self.obs_input = others[0]
        else:
            raise ValueError(
                f"{self.path}: cannot tell the observation input among {others}; name it "
                f"{OBS_INPUT!r}"
            )
        extra = [n for n in others if n != self.obs_input]
        if extra:
            raise ValueError(
                f"{self.path}: inputs {extra} cannot be fed (only {OBS_INPUT!r} and "
                f"{TIME_STEP_INPUT!r} are)"
            )
        shape = inputs[self.obs_input].shape
        if len(shape) != 2:
            raise ValueError(f"{self.path}: input {self.obs_input!r} has shape {shape}, not (B, D)")
        for name in (self.obs_input, TIME_STEP_INPUT):
            if name in inputs and inputs[name].type != "tensor(float)":
                raise ValueError(
                    f"{self.path}: input {name!r} is {inputs[name].type}; gym_motion feeds "
                    "tensor(float) (float32)"
                )
        self.obs_dim = shape[1] if isinstance(shape[1], int) else None
        self._batch_one = shape[0] == 1
        self.actions_output = self._actions_output(len(self.meta.joint_names))

    def _open_session(self, threads: int) -> None:
        """(Re)create the onnxruntime session with `threads` intra-op threads."""
        import onnxruntime as ort  # the [onnx] extra

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1  # the graph runs sequentially: no second pool
        if threads > 1:  # idle workers sleep, leaving the CPUs to physics between runs
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            msg = " ".join(str(exc).split())[:300]
            raise ValueError(f"{self.path}: onnxruntime cannot load it ({msg})") from None
        self.threads = threads

    def size_for(self, num_rows: int) -> int:
        """Size the session's intra-op threads for runs of `num_rows` rows (one row at a time
        for a graph of batch 1): the user's `intra_op_threads`, else `session_threads`; the
        session is rebuilt only when that changes. Returns the threads now used."""
        if self.intra_op_threads is not None:
            return self.threads
        want = session_threads(1 if self._batch_one else num_rows)
        if want != self.threads:
            self._open_session(want)
        return self.threads

    def _actions_output(self, num_joints: int) -> str:
        """The output holding the (B, J) actions: the one named ``"actions"``, else the only
        (B, J) float output (J = the metadata's joint count). Shapes ONNX Runtime cannot infer
        (rank or width unknown) are taken on trust; float64 is cast.

        Raises:
            ValueError: none or several candidates, or an ``"actions"`` output whose known
                shape or type cannot be the actions (outputs and shapes named).
        """
        outputs = {o.name: o for o in self.session.get_outputs()}

        def fits(o) -> bool:
            if o.type not in ("tensor(float)", "tensor(double)"):
                return False
            if not o.shape:  # rank unknown
                return True
            return len(o.shape) == 2 and (
                not isinstance(o.shape[1], int) or o.shape[1] == num_joints
            )

        if ACTIONS_OUTPUT in outputs:
            chosen = [ACTIONS_OUTPUT]
        else:
            chosen = [n for n, o in outputs.items() if fits(o) and o.shape]
        if len(chosen) != 1 or not fits(outputs[chosen[0]]):
            listed = ", ".join(f"{n} {o.type} {o.shape}" for n, o in outputs.items())
            raise ValueError(
                f"{self.path}: cannot tell the actions output: expected one named "
                f"{ACTIONS_OUTPUT!r}, or a single (B, {num_joints}) float output, among {listed}"
            )
        return chosen[0]

    @property
    def state_estimation(self) -> bool:
        """Whether the policy needs the 160-value observation (its observation terms include
        one only state estimation gives; `PolicyMeta.needs_state_estimation`)."""
        return self.meta.needs_state_estimation()

    def env_cfg(self, state_estimation: bool | None = None) -> TrackingEnvCfg:
        """The default task with the observation this policy reads: the 160-value policy
        observation if it observes a term only state estimation gives (`state_estimation`),
        else the 154-value one, unless `state_estimation` says which; ``anchor_vel`` appended
        when it observes the reference anchor's velocity (`PolicyMeta.needs_anchor_velocity`);
        the reference frame it observes (`PolicyMeta.observed_frame`), and the root origin's
        velocity for ``base_lin_vel`` when it observes that (`with_root_origin_velocity`)."""
        if state_estimation is None:
            state_estimation = self.state_estimation
        cfg = TrackingEnvCfg(observed_frame=self.meta.observed_frame)
        cfg = cfg.updated(state_estimation=state_estimation)
        if ROOT_ORIGIN_VELOCITY in self.meta.observation_names:
            cfg = with_root_origin_velocity(cfg)
        return with_anchor_velocity(cfg) if self.meta.needs_anchor_velocity() else cfg

    def mapping(self, cfg: TrackingEnvCfg, env_name: str = "the env") -> PolicyMapping:
        """The mapping of this policy onto an env of `cfg` (`PolicyMeta.mapping`), with its
        observation size checked against the graph's input.

        Raises:
            ValueError: what `PolicyMeta.mapping` refuses, an input size other than the
                metadata's observation terms make, or a task with residual actions.
        """
        if cfg.action_offset != "default":
            raise ValueError(
                f"{self.meta.source}: ONNX policies act in BeyondMimic's convention (target = "
                "default pose + scale x action); evaluate them in a task with action_offset "
                f"'default', not {cfg.action_offset!r}"
            )
        m = self.meta.mapping(cfg, env_name)
        if self.obs_dim is not None and self.obs_dim != m.obs_dim:
            names = ",".join(self.meta.observation_names)
            raise ValueError(
                f"{self.meta.source}: input {self.obs_input!r} takes {self.obs_dim} values but "
                f"its observation terms ({names}) make {m.obs_dim} in {env_name}"
            )
        return m

    def run(self, obs: np.ndarray, time_step: np.ndarray | None = None) -> np.ndarray:
        """The graph's raw actions: obs (B, D) float32 (policy layout), time_step (B, 1)
        float32 when the graph takes it -> (B, J) float32 in the policy's joint order."""
        obs = np.ascontiguousarray(obs, np.float32)
        if self._batch_one and len(obs) != 1:
            rows = [
                self.run(obs[i : i + 1], None if time_step is None else time_step[i : i + 1])
                for i in range(len(obs))
            ]
            return np.concatenate(rows, axis=0)
        feed: dict[str, Any] = {self.obs_input: obs}
        if self.takes_time_step:
            if time_step is None:
                raise ValueError(f"{self.path} takes {TIME_STEP_INPUT!r}; pass the motion frame")
            feed[TIME_STEP_INPUT] = np.ascontiguousarray(time_step, np.float32)
        (actions,) = self.session.run([self.actions_output], feed)
        return np.asarray(actions, np.float32)

    def bind(self, env: TrackingVecEnv, env_name: str | None = None) -> Policy:
        """The policy callable for `env`: env observation (N, D_env) float32 (or the env's dict
        observation, whose "policy" group is read) -> env actions (N, J) float32.

        Observations are mapped into the policy's layout, ``time_step`` is the env's current
        motion frame (``env.command.frames``, (N, 1) float32), and the outputs are mapped back
        onto the env's joints (`PolicyMapping`, also the callable's ``mapping`` attribute).
        The session's threads are sized to the env's batch (`size_for`).

        Raises:
            ValueError: the policy cannot be mapped onto `env` (see `mapping`).
        """
        width = sum(t.dim for t in env.cfg.observations["policy"].values())
        name = env_name or f"the env ({env.cfg.robot.name}, {width}-value policy observation)"
        m = self.mapping(env.cfg, name)
        self.size_for(env.num_envs)
        command = env.command

        def act(obs: Obs) -> np.ndarray:
            flat = obs["policy"] if isinstance(obs, dict) else obs
            time_step = None
            if self.takes_time_step:
                time_step = command.frames.astype(np.float32)[:, None]
            return m.actions(self.run(m.observation(flat), time_step))

        act.mapping = m  # type: ignore[attr-defined]
        return act
