"""Where hooks run in a session, and what their answers do (Claude Code's semantics).

A hook gets one JSON object on stdin: session_id, workspace (and cwd, the same),
hook_event_name, and per event the tool's name and input (and its result for
PostToolUse), the prompt, SessionStart's source, PreCompact's trigger or Stop's
stop_hook_active. Its answer:

- exit 0: go on. Stdout that is a JSON object may say {"decision": "block", "reason": …}
  (or Claude Code's hookSpecificOutput.permissionDecision "deny"), add context
  ("additionalContext", top level or in hookSpecificOutput) or say something to the
  user ("systemMessage"). Plain stdout of UserPromptSubmit and SessionStart is context.
- exit 2: block, stderr is the reason the model and the user see.
- anything else (another code, a signal, the time limit, JSON that does not parse): a
  diagnostic for the user, and the request goes on as if the hook had not been there.

Blocking means, per event: UserPromptSubmit, the request never reaches the model;
PreToolUse, the tool never runs and the reason is its error result; PostToolUse, the
reason is appended to the result the model reads; Stop, the model is asked to go on
with the reason (at most MAX_STOP_BLOCKS times a request). SessionStart and PreCompact
cannot block. Hooks of one event run one after the other, in the order configured; the
first block ends the round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent import events as ev
from agent.history import Message, ToolCall, ToolResult, User
from agent.tools.hooks.runner import Ran, run_hook
from agent.tools.hooks.spec import HookSpec
from agent.untrusted import TooDeep, json_line, loads

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy

BLOCKING = frozenset({"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"})
CONTEXT_FROM_STDOUT = frozenset({"UserPromptSubmit", "SessionStart"})
MAX_SAID = 8000  # characters of a reason or context that reach the model
MAX_STOP_BLOCKS = 3  # Stop hooks that send the model back to work, per request


class _Flag(Protocol):
    def is_set(self) -> bool: ...


class _Ended(Protocol):
    @property
    def declined(self) -> bool: ...


class Trust(Protocol):
    """Whether the workspace's hooks may run now (agent.run.hooks owns the answer)."""

    def admit(self, workspace: Path) -> str | None:
        """None: they may run; else why not, in one line."""
        ...

    def settled(self, workspace: Path) -> None:
        """They ran: what they wrote themselves is theirs, not a change to ask about."""
        ...

    def sandbox(self) -> SandboxPolicy | None:
        """The sandbox they run in (the one bash has now)."""
        ...


class HookBlocked(Exception):
    """A UserPromptSubmit hook kept the request from the model; the message is why."""


@dataclass(frozen=True)
class Verdict:
    """What the hooks of one event said, together."""

    blocked: bool = False
    reason: str = ""
    context: str = ""


def clip(text: str, limit: int = MAX_SAID) -> str:
    text = text.strip()
    return (
        text if len(text) <= limit else text[:limit] + f"\n[… {len(text) - limit} more characters]"
    )


@dataclass
class Hooks:
    """A session's hooks (those trusted at its start: agent.run.hooks decides), and the
    little state they need: the session's id and context waiting for the next prompt.

    The workspace's hooks are repository content the model may have rewritten since:
    `admit` is asked before each round of them (None: they may run; else why not), and
    they run in the sandbox of the moment, as the model's bash would (`trust` says
    both). The user's own hooks run as the user."""

    specs: Sequence[HookSpec]
    workspace: Path
    emit: ev.Emit = lambda _e: None
    session_id: str = ""
    pending: list[str] = field(default_factory=list)  # SessionStart's context
    stops: int = 0  # Stop blocks in this request
    trust: Trust | None = None  # None: the workspace's hooks never run

    # --- the hook points ---------------------------------------------------------

    def start(self, session_id: str, source: str, workspace: Path | None = None) -> None:
        """SessionStart (source: startup or resume; `workspace`: a resumed session's
        own); its context joins the next prompt."""
        self.session_id = session_id
        self.workspace = workspace or self.workspace
        verdict = self.fire("SessionStart", source, {"source": source})
        if verdict.context:
            self.pending.append(verdict.context)

    def prompt(self, prompt: str) -> str:
        """UserPromptSubmit: the prompt as the model gets it (context appended), or
        HookBlocked."""
        self.stops = 0
        verdict = self.fire("UserPromptSubmit", None, {"prompt": prompt})
        if verdict.blocked:
            raise HookBlocked(f"a UserPromptSubmit hook blocked the request: {verdict.reason}")
        context = [*self.pending, verdict.context]
        self.pending.clear()
        said = "\n\n".join(c for c in context if c)
        return f"{prompt}\n\n[hook context]\n{said}" if said else prompt

    def before_tool(self, call: ToolCall) -> Verdict:
        return self.fire("PreToolUse", call.name, _tool(call), call.id)

    def after_tool(self, call: ToolCall, result: ToolResult, before: Verdict) -> ToolResult:
        """PostToolUse: the result the model reads, with what the hooks (this one and
        PreToolUse's context) had to add; a block marks it an error."""
        response = {"content": result.content, "is_error": result.is_error}
        after = self.fire(
            "PostToolUse", call.name, {**_tool(call), "tool_response": response}, call.id
        )
        notes = [before.context, after.context, after.reason if after.blocked else ""]
        said = "\n".join(n for n in notes if n)
        if not said:
            return result
        content = f"{result.content}\n\n[PostToolUse hook]\n{said}"
        return ToolResult(result.call_id, content, result.is_error or after.blocked)

    def pre_compact(self, trigger: str) -> None:
        """PreCompact (trigger: auto or manual): told, it cannot stop the compaction."""
        self.fire("PreCompact", trigger, {"trigger": trigger})

    def go_on(self, add: Callable[[Message], None], cancel: _Flag, state: _Ended) -> bool:
        """At the end of a request (not a declined or interrupted one): whether a Stop
        hook sends the model back to work; its reason is then added as a user message."""
        if state.declined or cancel.is_set():
            return False
        again = self.stop()
        if again is not None:
            add(User(again))
        return again is not None

    def stop(self) -> str | None:
        """Stop, at the natural end of a request: what the model is asked to go on
        with, where a hook blocked (None: the request ends)."""
        if not self.has("Stop") or self.stops >= MAX_STOP_BLOCKS:
            return None
        verdict = self.fire("Stop", None, {"stop_hook_active": self.stops > 0})
        if not verdict.blocked:
            return None
        self.stops += 1
        return f"A Stop hook asks you to go on: {verdict.reason}"

    # --- running them ------------------------------------------------------------

    def has(self, event: str) -> bool:
        return any(s.event == event for s in self.specs)

    def fire(
        self, event: str, subject: str | None, fields: dict[str, Any], call_id: str = ""
    ) -> Verdict:
        """Every hook of `event` for `subject`, in order, until one blocks."""
        chosen = [s for s in self.specs if s.event == event and s.matches(subject)]
        if not chosen:
            return Verdict()
        payload = {
            "session_id": self.session_id,
            "workspace": str(self.workspace),
            "cwd": str(self.workspace),
            "hook_event_name": event,
            **fields,
        }
        data = (json_line(payload) + "\n").encode("utf-8")
        env = {
            "BOSUN_WORKSPACE": str(self.workspace),
            "CLAUDE_PROJECT_DIR": str(self.workspace),
            "BOSUN_SESSION_ID": self.session_id,
            "BOSUN_HOOK_EVENT": event,
        }
        tool = (subject or "") if event in ("PreToolUse", "PostToolUse") else ""
        theirs = any(s.origin == "workspace" for s in chosen)
        refused = self._refused() if theirs else None
        try:
            return self._round(event, tool, chosen, data, env, refused)
        finally:
            if theirs and refused is None and self.trust is not None:
                self.trust.settled(self.workspace)

    def _round(
        self,
        event: str,
        tool: str,
        chosen: Sequence[HookSpec],
        data: bytes,
        env: dict[str, str],
        refused: str | None,
    ) -> Verdict:
        contexts: list[str] = []
        for spec in chosen:
            sandbox = None
            if spec.origin == "workspace":
                if refused is not None:
                    self.emit(ev.Diagnostic(f"hook {spec.name!r} ({event}) not run: {refused}"))
                    self.emit(ev.HookRan(spec.name, event, "untrusted", 0, tool))
                    continue
                assert self.trust is not None
                sandbox = self.trust.sandbox()
            ran = run_hook(spec.command, data, self.workspace, spec.timeout, env, sandbox)
            verdict, decision = self._read(spec, ran)
            self.emit(ev.HookRan(spec.name, event, decision, ran.ms, tool))
            if verdict.context:
                contexts.append(verdict.context)
            if verdict.blocked:
                return Verdict(True, verdict.reason, "\n".join(contexts))
        return Verdict(context="\n".join(contexts))

    def _refused(self) -> str | None:
        """Why the workspace's hooks may not run now (asked once a round, right before
        it: a script the model rewrote a moment ago counts)."""
        if self.trust is None:
            return "the workspace's hooks are not trusted here"
        return self.trust.admit(self.workspace)

    def _say(self, spec: HookSpec, what: str) -> None:
        self.emit(ev.Diagnostic(f"hook {spec.name!r} ({spec.event}) {what}; the request goes on"))

    def _read(self, spec: HookSpec, ran: Ran) -> tuple[Verdict, str]:
        """One hook's answer: (what it says, the decision its event records)."""
        if ran.cut:
            self._say(spec, "wrote more than 64 kB; the rest was dropped")
        if ran.failed:
            self._say(spec, f"could not be started: {ran.failed}")
            return Verdict(), "error"
        if ran.timed_out:
            self._say(spec, f"timed out after {spec.timeout:g} s and was killed")
            return Verdict(), "timeout"
        assert ran.status is not None
        if ran.status < 0:
            self._say(spec, f"was killed by signal {-ran.status}")
            return Verdict(), "error"
        if ran.status == 2:
            reason = clip(ran.stderr) or "(the hook gave no reason)"
            if spec.event in BLOCKING:
                self.emit(ev.Diagnostic(f"hook {spec.name!r} blocked {spec.event}: {reason}"))
                return Verdict(True, reason), "block"
            self._say(spec, f"exited with 2, which cannot block {spec.event}: {reason}")
            return Verdict(), "error"
        if ran.status != 0:
            first = ran.stderr.strip().splitlines()[:1]
            self._say(spec, f"exited with code {ran.status}" + (f": {first[0]}" if first else ""))
            return Verdict(), "error"
        return self._reply(spec, ran.stdout)

    def _reply(self, spec: HookSpec, stdout: str) -> tuple[Verdict, str]:
        """Exit 0: a JSON object's decision and context, or plain text."""
        text = stdout.strip()
        if not text.startswith("{"):
            if text and spec.event in CONTEXT_FROM_STDOUT:
                return Verdict(context=clip(text)), "context"
            return Verdict(), "allow"
        try:
            reply = loads(text)
        except (ValueError, TooDeep) as exc:
            self._say(spec, f"wrote invalid JSON ({str(exc)[:80]}); its answer was ignored")
            return Verdict(), "error"
        if not isinstance(reply, dict):
            self._say(spec, "wrote JSON that is not an object; its answer was ignored")
            return Verdict(), "error"
        specific = reply.get("hookSpecificOutput")
        specific = specific if isinstance(specific, dict) else {}
        message = reply.get("systemMessage")
        if isinstance(message, str) and message.strip():
            self.emit(ev.Diagnostic(f"hook {spec.name!r}: {clip(message, 500)}"))
        context = _text(reply.get("additionalContext")) or _text(specific.get("additionalContext"))
        denied = specific.get("permissionDecision") == "deny"
        if (reply.get("decision") == "block" or denied) and spec.event in BLOCKING:
            why = _text(reply.get("reason")) or _text(specific.get("permissionDecisionReason"))
            reason = why or "(the hook gave no reason)"
            self.emit(ev.Diagnostic(f"hook {spec.name!r} blocked {spec.event}: {reason}"))
            return Verdict(True, reason, context), "block"
        return Verdict(context=context), "context" if context else "allow"


def _text(value: Any) -> str:
    return clip(value) if isinstance(value, str) else ""


def _tool(call: ToolCall) -> dict[str, Any]:
    return {"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id}
