"""What a run was asked for, resolved once: one record for every face.

Flags are read by `agent.cli`, config files by `agent.run.config`, and one resolver
(`agent.run.config.settings_for`) layers them: defaults < the user's `config.toml` <
the workspace's `.bosun.toml` (stricter only) < flags. What comes out is a `Settings`,
and every face (run, each `--tasks` task, chat, acp, mcp serve) takes it as it is. A
chat changes its settings mid-session only through `ChatSession.apply`, which compares
the new record with the old one, so no face writes fields into the agent.

The fields a config file may set are marked here with `key(...)` and carry their own
one-line description: this record is the one list of keys, which the files' parser,
`bosun config` and the reference in the manual are all made from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from drivers.bundled import DEFAULT_MODEL

if TYPE_CHECKING:
    from agent.mcp.servers import ServerSpec
    from agent.tools.checks import CheckCmd
    from agent.tools.hooks import HookSpec
    from agent.tools.sandbox import SandboxPolicy

# Who may set a key: "any" config file; "stricter": a workspace file only to make it
# safer (agent.run.config checks how); "user": the user's own file alone.
Scope = Literal["any", "stricter", "user"]


def key(default: Any, doc: str, *, scope: Scope = "any", name: str | None = None) -> Any:
    """A field that config files may set, as `name` (default: the field's own name)."""
    meta = {"doc": doc, "scope": scope, "name": name}
    if isinstance(default, list | dict | set):  # pragma: no cover - no such default yet
        raise TypeError("mutable default")
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    model: str = key(
        DEFAULT_MODEL,
        "The model: a bundled name, a GGUF path, openai:URL#NAME. A workspace file may"
        " name only a bundled model or a server on this machine.",
    )
    # the model a workspace's .bosun.toml chose (agent.run.config): a server it names
    # is opened without the user's API key; None when the user chose the model
    workspace_model: str | None = None
    workspace: Path = field(default_factory=Path.cwd)
    approve: str = key(
        "ask",
        "What runs unasked: read-only, ask, auto-edit, auto.",
        scope="stricter",
    )
    constrain: str = key("auto", "Grammar-constrained tool calls: auto, always, never.")
    api: str | None = None  # chat | completions, for openai: models
    request_timeout: float | None = 600.0  # seconds a server may stay silent; None: no limit
    speculate: str = key(
        "auto", "Prompt-lookup speculation in the in-process driver: auto, on, off."
    )
    context_size: int | None = key(
        None, "The context window in tokens (at least 256); unset: the model's own."
    )
    compact_at: float | None = key(
        None, "Compact the conversation at this fraction of the context (0.3 to 0.95)."
    )
    # bash in bubblewrap under this policy (None: as the user); the knobs below are what
    # `/sandbox on` builds a policy from when there was none at the start
    sandbox: SandboxPolicy | None = None
    sandbox_mode: str = key(
        "auto",
        "bash in bubblewrap: auto (where it works), on, off.",
        scope="stricter",
        name="sandbox",
    )
    allow_net: bool = key(False, "The sandbox's network.", scope="stricter")
    allow_git_writes: bool = key(
        False, "The workspace's .git/ writable in the sandbox.", scope="stricter"
    )
    sandbox_read: tuple[str, ...] = key(
        (), "Hidden folders shown read-only in the sandbox (absolute paths).", scope="user"
    )
    mcp_servers: tuple[ServerSpec, ...] = key(
        (), "[mcp_servers.NAME] tables: MCP servers (a workspace's are asked about)."
    )
    # the user's changes to the model's tool set ("+apply_patch", "-edit_file"): --tools,
    # or `tools` in a config file; applied after the profile's own (agent.tools.tool_set)
    tools: tuple[str, ...] = key((), 'Changes to the model\'s tool set: "+apply_patch,-edit_file".')
    allow_workspace_mcp: bool = False  # start servers the workspace names, unapproved
    # the lint/test loop (agent.loop.checks; config: agent.run.config)
    lint_cmd: tuple[CheckCmd, ...] = key(
        (), "The linter for edited files: a command, or a table by extension or language."
    )
    test_cmd: CheckCmd | None = key(None, "The test command (/test; --auto-test).")
    auto_lint: bool = key(False, "Lint the files of every edit.")
    auto_test: bool = key(False, "Run the tests after a request that edited files.")
    test_rounds: int = key(2, "Test failures sent back to the model per request (0 to 10).")
    test_timeout: int = key(300, "Seconds the test command may run (1 to 3600).")
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
    checkpoint_max_mb: float = key(
        10.0,
        "Files bigger than this (MB) are left out of the snapshots; a workspace may only raise it.",
        scope="stricter",
    )
    hooks: tuple[HookSpec, ...] = key(
        (), "[[hooks.EVENT]] tables: commands run at points of a session."
    )
    allow_workspace_hooks: bool = False  # run hooks the workspace names, unapproved
    # the repository map's tokens in the prompt; None: by the context (agent.loop.repomap)
    repo_map_tokens: int | None = key(
        None, "The repository map's tokens in the prompt (0: off); unset: by the context."
    )
    otel: bool = key(False, "OpenTelemetry spans over OTLP/HTTP.", scope="user")
    otel_content: bool = key(
        False, "With prompts, replies and tool contents in the spans.", scope="user"
    )

    @classmethod
    def from_config(cls, config: Settings, **given: Any) -> Settings:
        """The config files' values (a `load_config` record) under the ones given here."""
        return replace(config, **given)

    def but(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def config_keys() -> dict[str, Any]:
    """Each config key -> its `Settings` field (name, default, metadata: doc, scope)."""
    return {f.metadata["name"] or f.name: f for f in fields(Settings) if "doc" in f.metadata}
