"""What a run was asked for, resolved once: one record for every face.

Flags are read by `agent.cli`, config files by `agent.run.config`; what comes out of
both is a `Settings`, and `bosun run`, each `--tasks` task and `bosun chat` take it as it
is. A chat changes its settings mid-session only through `ChatSession.apply`, which
compares the new record with the old one, so no face writes fields into the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drivers.bundled import DEFAULT_MODEL

if TYPE_CHECKING:
    from agent.mcp.servers import ServerSpec
    from agent.run.config import Config
    from agent.tools.checks import CheckCmd
    from agent.tools.hooks import HookSpec
    from agent.tools.sandbox import SandboxPolicy


@dataclass(frozen=True)
class Settings:
    model: str = DEFAULT_MODEL
    # the model a workspace's .bosun.toml chose (agent.run.config): a server it names
    # is opened without the user's API key; None when the user chose the model
    workspace_model: str | None = None
    workspace: Path = field(default_factory=Path.cwd)
    approve: str = "ask"
    constrain: str = "auto"
    api: str | None = None  # chat | completions, for openai: models
    request_timeout: float | None = 600.0  # seconds a server may stay silent; None: no limit
    speculate: str = "auto"  # the in-process driver's prompt-lookup speculation: auto | off
    context_size: int | None = None  # None: the model's own (a server's: no budget)
    compact_at: float | None = None  # None: agent.loop.context's default
    # bash in bubblewrap under this policy (None: as the user); the knobs below are what
    # `/sandbox on` builds a policy from when there was none at the start
    sandbox: SandboxPolicy | None = None
    allow_net: bool = False
    allow_git_writes: bool = False
    sandbox_read: tuple[str, ...] = ()
    mcp_servers: tuple[ServerSpec, ...] = ()  # from the config files (agent.run.config)
    # the user's changes to the model's tool set ("+apply_patch", "-edit_file"): --tools,
    # or `tools` in a config file; applied after the profile's own (agent.tools.tool_set)
    tools: tuple[str, ...] = ()
    allow_workspace_mcp: bool = False  # start servers the workspace names, unapproved
    # the lint/test loop (agent.loop.checks; config: agent.run.config)
    lint_cmd: tuple[CheckCmd, ...] = ()
    test_cmd: CheckCmd | None = None
    auto_lint: bool = False
    auto_test: bool = False
    test_rounds: int = 2
    test_timeout: int = 300
    # budgets of one request (a task's own line may lower or raise them)
    max_turns: int = 30  # model calls
    max_tokens: int = 1024  # per model call
    trace: Path | None = None
    ablate: frozenset[str] = frozenset()  # bench/eval only: "salvage", "retention"
    output: str = "text"  # headless: text | jsonl
    jobs: int = 1  # batch: tasks at once (the backend may allow fewer)
    strict: bool = False  # batch: any bad line refuses the whole file
    shard: str | None = None  # batch: "K/N" (None: Slurm's or Kubernetes' own, or all)
    results: Path | None = None  # batch: one result file per task; a rerun skips them
    redo: bool = False  # batch: run tasks again even where --results has them
    executor: str = "local"  # batch: local (threads here) | ray
    ray_address: str | None = None  # batch, --executor ray: the cluster (None: ray's own)
    checkpoint_max_mb: float = 10.0  # bigger files are left out of the snapshots
    hooks: tuple[HookSpec, ...] = ()  # from the config files (agent.run.config)
    allow_workspace_hooks: bool = False  # run hooks the workspace names, unapproved
    # the repository map's tokens in the prompt; None: by the context (agent.loop.repomap)
    repo_map_tokens: int | None = None
    otel: bool = False  # OpenTelemetry spans (agent.run.telemetry; OTEL_* may turn it on)
    otel_content: bool = False  # with prompts, replies and tool contents in them

    @classmethod
    def from_config(cls, config: Config, **given: Any) -> Settings:
        """The config files' values (agent.run.config) under the ones given here. The
        config's `sandbox` is a mode; the caller resolves it into `sandbox=`, a policy."""
        mine = {f.name for f in fields(cls)} - {"sandbox"}
        taken = {f.name: getattr(config, f.name) for f in fields(config) if f.name in mine}
        return cls(**{**taken, **given})

    def but(self, **changes: Any) -> Settings:
        return replace(self, **changes)
