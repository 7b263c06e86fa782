"""NeMo Gym 0.7.0 run as its users run it: `gym env start` and `ng_collect_rollouts` from a venv where NeMo Gym
is installed with its dependencies (`make gym-venv`), against a replay policy server on loopback
(tests/replay_policy.py). Used by tests/test_gym_launcher.py (`make gym-check`) and bench/bench_gym.py.

What it does that a user would do too, and why:
- every server's venv is the one venv (NeMo Gym's `uv_venv_dir/<type>/<name>/.venv`, linked to it, with
  `skip_venv_if_present`): NeMo Gym would otherwise build a venv per server with uv from the network;
- Ray is confined to loopback (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`: Ray's single-machine mode, every Ray
  process on 127.0.0.1), and the head server listens on a free port (`+head_server.port`), so two runs or
  other work on the machine never collide;
- the policy is NeMo Gym's own `openai_model` server pointed at the replay server (`+policy_base_url`);
- stopping: SIGTERM to `gym env start` (it stops its servers), then SIGKILL to whatever of its process group
  is left (Ray's dashboard and runtime-env agents outlive it in 0.7.0).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVERS = (
    "resources_servers/mcqa",
    "responses_api_agents/simple_agent",
    "responses_api_models/openai_model",
    "environment_servers/legacy_agent",
)
MODEL_CONFIG = "responses_api_models/openai_model/configs/openai_model.yaml"
MCQA_CONFIG = "resources_servers/mcqa/configs/mcqa.yaml"
AGENT = "mcqa_simple_agent"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def site_packages(venv: Path) -> Path:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import nemo_gym, pathlib; print(pathlib.Path(nemo_gym.__file__).parents[1])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(out.stdout.strip())


class Replay:
    """tests/replay_policy.py on a free loopback port, answering from `recording`."""

    def __init__(self, python: Path, recording: dict[str, list[str]], work: Path) -> None:
        path = work / "replay.json"
        path.write_text(json.dumps({"responses": recording}), encoding="utf-8")
        port_file = work / "replay.port"
        port_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen([str(python), str(HERE / "replay_policy.py"), str(path), str(port_file)])
        for _ in range(600):
            if port_file.is_file() and port_file.read_text():
                break
            if self.proc.poll() is not None:
                raise RuntimeError("the replay policy server exited")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{int(port_file.read_text())}/v1"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


class GymEnv:
    """One `gym env start` (context manager): its servers, its head server, its log."""

    def __init__(self, venv: Path, work: Path, name: str) -> None:
        self.venv, self.work, self.name = venv, work, name
        self.log = work / f"{name}.gym.log"
        self.head_port = free_port()
        self.proc: subprocess.Popen | None = None
        for server in SERVERS:
            link = work / "venvs" / server / ".venv"
            if not link.exists():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(venv.resolve())

    def env(self, extra_root: Path | None) -> dict[str, str]:
        env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "PYTHONUNBUFFERED": "1"}
        env.pop("RAY_ADDRESS", None)
        if extra_root is not None:
            env["NEMO_GYM_EXTRA_ROOTS"] = str(extra_root)
        else:
            env.pop("NEMO_GYM_EXTRA_ROOTS", None)
        return env

    def common(self, observability: bool) -> list[str]:
        args = [f"+head_server.port={self.head_port}"]
        if observability:
            args += ["+observability_enabled=true", f"+model_call_capture_dir={self.work / 'capture'}"]
        return args

    def start(
        self,
        configs: list[str],
        policy_url: str,
        *,
        extra_root: Path | None = None,
        observability: bool = True,
        timeout: float = 900,
    ) -> GymEnv:
        self.extra_root, self.observability = extra_root, observability
        cmd = [str(self.venv / "bin" / "gym"), "env", "start"]
        for c in configs:
            cmd += ["--config", c]
        cmd += [
            f"+policy_base_url={policy_url}", "+policy_api_key=replay", "+policy_model_name=replay",
            "+skip_venv_if_present=true", f"+uv_venv_dir={self.work / 'venvs'}", *self.common(observability),
        ]  # fmt: skip
        self.command = cmd
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=self.work, env=self.env(extra_root), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        t0 = time.monotonic()
        while True:
            text = self.log.read_text(errors="replace")
            if "servers ready!" in text:
                self.start_seconds = time.monotonic() - t0
                return self
            if self.proc.poll() is not None or time.monotonic() - t0 > timeout:
                self.stop()
                raise RuntimeError(f"gym env start ({self.name}) did not get ready:\n{text[-6000:]}")
            time.sleep(1)

    def instances(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.head_port}/server_instances", timeout=30) as r:
            return json.loads(r.read())

    def url(self, config_path: str) -> str:
        return next(i["url"] for i in self.instances() if i["config_path"] == config_path)

    def collect(self, rows: Path, out: Path, repeats: int) -> dict[str, Any]:
        """ng_collect_rollouts over `rows` (`repeats` each, the rollout index as the seed): the rollouts,
        the aggregate metrics NeMo Gym wrote, the command and the key lines of its output."""
        cmd = [
            str(self.venv / "bin" / "ng_collect_rollouts"), f"+agent_name={AGENT}", f"+input_jsonl_fpath={rows}",
            f"+output_jsonl_fpath={out}", f"+num_repeats={repeats}", "+num_repeats_add_seed=true",
            *self.common(self.observability),
        ]  # fmt: skip
        t0 = time.monotonic()
        p = subprocess.run(cmd, cwd=self.work, env=self.env(self.extra_root), capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(
                f"ng_collect_rollouts failed ({p.returncode}):\n{(p.stdout + p.stderr)[-6000:]}"
            )
        rollouts = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        aggregate = json.loads(out.with_name(out.stem + "_aggregate_metrics.json").read_text())
        lines = [
            ln
            for ln in (p.stdout + p.stderr).splitlines()
            if ln.startswith(("Found ", "Finished ", "Rollouts:", "Aggregate metrics:"))
        ]
        return {
            "command": cmd,
            "seconds": round(time.monotonic() - t0, 1),
            "rollouts": rollouts,
            "aggregate": aggregate,
            "transcript": lines[-4:],
        }

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its process group: Ray's leftover agents
        except ProcessLookupError:
            pass
        self.proc.wait(30)

    def __enter__(self) -> GymEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def stock_aggregate(venv: Path, rollouts: list[dict[str, Any]], work: Path) -> Any:
    """NeMo Gym's own /aggregate_metrics answer for these rollouts, stripped as its rollout collection strips
    them (tests/gym_golden.py --aggregate, in the NeMo Gym venv)."""
    path = work / "aggregate_request.json"
    path.write_text(json.dumps(rollouts), encoding="utf-8")
    p = subprocess.run(
        [str(venv / "bin" / "python"), str(HERE / "gym_golden.py"), "--aggregate", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(p.stdout)


if __name__ == "__main__":  # pragma: no cover - a manual run: python tests/gym_launch.py VENV
    print(site_packages(Path(sys.argv[1])))
