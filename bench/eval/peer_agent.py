"""One eval task through mini-swe-agent; runs inside the peer venv (setup_peer.sh).

    .peer-venv/bin/python peer_agent.py SPEC.json   ->   one JSON line on stdout

SPEC: {"prompt", "cwd", "api_base", "model", "step_limit", "max_tokens", "trajectory"}.
Uses mini-swe-agent's own text-based configuration (`mini_textbased.yaml`: one
```mswea_bash_command``` block per reply) unchanged except for limits, because that is
the mode meant for models without native tool calling, which SmolLM2 behind
llama_cpp.server is. Its DefaultAgent, LitellmTextbasedModel and LocalEnvironment run as
the `mini` CLI wires them, minus the interactive confirmation.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# litellm fetches a price list over the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")

import yaml
from minisweagent import package_dir
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel


def count(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Steps, format errors and tokens, read back from the transcript mini-swe-agent keeps."""
    format_errors = actions = prompt_tokens = completion_tokens = 0
    for m in messages:
        extra = m.get("extra") or {}
        if extra.get("interrupt_type") == "FormatError":
            format_errors += 1
        actions += len(extra.get("actions") or [])
        usage = (extra.get("response") or {}).get("usage") or {}
        if isinstance(usage, dict):
            prompt_tokens += usage.get("prompt_tokens") or 0
            completion_tokens += usage.get("completion_tokens") or 0
    return {
        "format_errors": format_errors,
        "actions": actions,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
    }


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    config = yaml.safe_load((package_dir / "config" / "mini_textbased.yaml").read_text())
    agent_cfg = {k: v for k, v in config["agent"].items() if k != "mode"}
    agent_cfg.update(step_limit=spec["step_limit"], cost_limit=0, output_path=None)
    model_cfg = dict(config.get("model", {}))
    model_cfg["model_kwargs"] = {
        **model_cfg.get("model_kwargs", {}),
        "api_base": spec["api_base"],
        "api_key": "not-needed",
        "max_tokens": spec["max_tokens"],
        "temperature": 0.0,
    }
    model = LitellmTextbasedModel(
        model_name=f"openai/{spec['model']}", cost_tracking="ignore_errors", **model_cfg
    )
    env = LocalEnvironment(cwd=spec["cwd"], **config.get("environment", {}))
    agent = DefaultAgent(model, env, **agent_cfg)
    started = time.perf_counter()
    error = ""
    try:
        info = agent.run(spec["prompt"])
    except Exception as exc:  # reported, not raised: one task must not stop the suite
        info, error = {"exit_status": type(exc).__name__}, str(exc)[:400]
    seconds = time.perf_counter() - started
    Path(spec["trajectory"]).write_text(json.dumps(agent.messages, default=str), encoding="utf-8")
    result = {
        "exit_status": info.get("exit_status", ""),
        "steps": agent.n_calls,
        "seconds": seconds,
        "error": error,
        **count(agent.messages),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
