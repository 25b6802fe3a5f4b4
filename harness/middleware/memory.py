"""Long-term memory: plain markdown files the agent reads on every call and updates itself.

Memory files (default `/memories/AGENTS.md`) live in the durable part of the virtual
filesystem, shared by every thread, whatever the model or provider. The middleware grants its
run's filesystem the right to change `/memories/` (a run without it cannot) and records every
change as a version, in the change's own transaction: its run, time and author (`agent` for the
run's tools, `user` for a change made outside the agent and seen at run start, `import` for
`import_memory`). A deletion is a version too (`deleted`, empty content). Memory must be UTF-8
text: a file that is not is shown as unreadable and never overwritten. The content is loaded at
every run start, reloaded when the agent changes it, and injected into the system prompt of
every model call, escaped inside its `<agent_memory>` block.

How memory is kept small and current is its `policy`:
- `append` (the peers' default, and ctxlab's until a year of weekly runs measured it): the
  files grow as the agent appends; the prompt shows the first `max_chars` characters, so the
  newest entries, appended last, are the first hidden.
- `consolidate`: at run start, files past `budget_tokens` are rewritten by the summarizer model
  into a shorter file that keeps what is still true, the newest entry winning a contradiction
  (a `model` step: retried, journaled; the rewrite is a version by `consolidate`, so every
  earlier version stays readable). The prompt shows at most `budget_tokens` tokens of memory,
  the newest lines first kept when a file is still over it.
- `off`: memory is versioned as ever but never shown to the model.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from harness.errors import HarnessError, ModelError
from harness.files.filesystem import FileSystem
from harness.files.mounts import MountedFileSystem
from harness.files.paths import FileError, normalize
from harness.messages import ModelResponse, user
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.blocks import attribute
from harness.middleware.memory_io import export_memory, import_memory
from harness.middleware.memory_prompt import GUIDELINES, render_memory
from harness.middleware.memory_versions import (
    MEMORY_PREFIX,
    Content,
    OnVersion,
    Unreadable,
    latest_version,
    memory_text,
    record_version,
    versioning,
)
from harness.middleware.params import whole
from harness.models.base import Model, ModelSettings, RequestParams
from harness.store import Store

if TYPE_CHECKING:
    from harness.state import RunState

DEFAULT_PATHS = ("/memories/AGENTS.md",)
POLICIES = ("append", "consolidate", "off")
CONSOLIDATE_SUFFIX = "#consolidate"
# Marks a consolidation request, so a model (the simulated one) can tell it from a turn.
CONSOLIDATION_TAG = "memory-consolidation"

CONSOLIDATE_PROMPT = """\
You maintain an AI agent's long-term memory: a markdown file the agent reads at the start of \
every conversation. It has grown past its budget. Rewrite it into a shorter file that keeps \
what is still true and useful next time:
- Entries lower in the file are newer. When two entries say different things about the same \
subject (a preference, a fact's value, a decision, a correction), keep only the newest one.
- Keep every current preference, correction and decision; keep facts at their latest value, \
with the date they were last confirmed.
- Drop superseded values and old logs of past work first; keep the file's entry format \
(`- [subject] value (date)`), one entry a line.
- Stay within the token budget the request gives. Never add anything that is not in the file.
Reply with the new file only."""


class Memory(Middleware):
    """Grants its run `/memories/`, versions every change, loads memory files at run start
    and injects them on every model call."""

    name = "memory"

    def __init__(
        self,
        paths: Iterable[str] = DEFAULT_PATHS,
        *,
        max_chars: int = 20_000,
        guidelines: str = GUIDELINES,
        policy: str = "consolidate",
        budget_tokens: int = 800,
        model: str | Model | None = None,
        prompt: str = CONSOLIDATE_PROMPT,
    ) -> None:
        """Parameters:
        paths: memory files in the virtual filesystem (default `/memories/AGENTS.md`; paths
            under `/memories/` are shared by all threads).
        max_chars: under `append`, at most this many characters of memory go into the system
            prompt (default 20,000), cut from the end; a cut is marked in the prompt.
        guidelines: the text placed before the memory blocks (default `GUIDELINES`).
        policy: `consolidate` (default), `append` or `off` (see the module doc).
        budget_tokens: under `consolidate`, the most tokens of memory shown (default 800)
            and the size past which a file is rewritten. Chosen by measurement over 52
            weekly runs: the smallest budget tried (800, 1,000, 1,200, 1,500) is as accurate
            as the others and the only one keeping week 52's input within 1.25x of week 4's
            (evals/README.md, "A year of Mondays").
        model: the consolidating model, a spec ("openai:...") or a `Model`; None uses the
            agent's.
        prompt: the consolidator's instructions (default `CONSOLIDATE_PROMPT`).
        """
        if policy not in POLICIES:
            raise ValueError(f"memory.policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        self.paths = tuple(normalize(p) for p in paths)
        self.max_chars = whole("memory.max_chars", max_chars)
        self.guidelines = guidelines
        self.policy = policy
        self.budget_tokens = whole("memory.budget_tokens", budget_tokens, minimum=50)
        self.model = model
        self.prompt = prompt

    async def before_agent(self, state: RunState) -> None:
        start = time.perf_counter()
        state.files.grant(MEMORY_PREFIX, versioning(state.run_id, "agent", self._on_version(state)))
        if self._none_stored(state):
            contents: dict[str, Content] = dict.fromkeys(self.paths)
            changed: dict[str, str | None] = {}
        else:
            contents = {p: _read(state.files, p) for p in self.paths}
            changed = {
                p: text
                for p, text in contents.items()
                if not isinstance(text, Unreadable) and _differs(state.store, p, text)
            }
        if changed:
            await state.run_step("memory", self._record, state, changed)
        if self.policy == "consolidate":
            contents = await self._consolidate_over_budget(state, contents)
        self._set(state, contents)
        unreadable = {p: t.reason for p, t in contents.items() if isinstance(t, Unreadable)}
        state.event(
            self.name, "before_agent", "loaded",
            tokens_after=state.counter.count_text(state.scratch[self.name]["section"]),
            detail={
                "chars": {p: len(t) if isinstance(t, str) else 0 for p, t in contents.items()},
                "unreadable": unreadable,
                "policy": self.policy,
                # What the memory blocks cost on every call, the guidelines aside.
                "memory_tokens": state.scratch[self.name]["memory_tokens"],
            },
            ms=state.elapsed_ms(start),
        )  # fmt: skip

    def _none_stored(self, state: RunState) -> bool:
        """True when there is no memory to read: every path is in the store (none mounted
        from disk) and the store holds no memory file nor version. What reading would give
        then (every file missing, nothing changed), without a read when the store can tell
        (`Store.holds_memory`)."""
        return (
            not isinstance(state.files, MountedFileSystem)
            and all(p.startswith(MEMORY_PREFIX) for p in self.paths)
            and not state.store.holds_memory()
        )

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        section = request.state.scratch.get(self.name, {}).get("section", "")
        return await handler(request.with_system_section(section))

    async def _record(self, state: RunState, changed: dict[str, str | None]) -> None:
        """Versions, by `user`, of changes made outside any run (seen at run start)."""
        on_version = self._on_version(state, "before_agent", "user")
        for path, text in changed.items():
            with state.store.unit() as uow:
                version, previous = record_version(uow.memory, path, text, state.run_id, "user")
            if version is not None:
                on_version(path, version, previous, text)

    def _on_version(
        self, state: RunState, hook: str = "wrap_tool_call", author: str = "agent"
    ) -> OnVersion:
        def recorded(path: str, version: int, previous: str | None, text: str | None) -> None:
            state.event(
                self.name, hook, "version",
                tokens_before=state.counter.count_text(previous or ""),
                tokens_after=state.counter.count_text(text or ""),
                detail={"path": path, "version": version, "author": author,
                        "deleted": text is None},
            )  # fmt: skip
            current = state.scratch.get(self.name)
            if current is not None and path in self.paths:
                self._set(state, {**current["contents"], path: text})

        return recorded

    def _set(self, state: RunState, contents: Mapping[str, Content]) -> None:
        if self.policy == "off":
            section, shown = "", 0
        else:
            budget = self.budget_tokens if self.policy == "consolidate" else None
            count = state.counter.count_text
            section = render_memory(
                contents, self.max_chars, self.guidelines, budget_tokens=budget, count=count
            )
            shown = count(section) - count(self.guidelines)
        state.scratch[self.name] = {
            "contents": dict(contents),
            "section": section,
            "memory_tokens": max(shown, 0),
        }

    # -- consolidation ---------------------------------------------------------------------

    async def _consolidate_over_budget(
        self, state: RunState, contents: dict[str, Content]
    ) -> dict[str, Content]:
        """`contents` with every file past its share of the budget rewritten shorter."""
        texts = {p: t for p, t in contents.items() if isinstance(t, str) and t.strip()}
        if not texts:
            return contents
        share = max(self.budget_tokens // len(texts), 50)
        out = dict(contents)
        for path, text in texts.items():
            tokens = state.counter.count_text(text)
            if tokens > share:
                out[path] = await state.run_step(
                    "memory", self._consolidate, state, path, text, tokens, share
                )
        return out

    async def _consolidate(
        self, state: RunState, path: str, text: str, tokens: int, target: int
    ) -> str:
        """Ask the model for a shorter `path`, record it as a version by `consolidate`, and
        return what memory now holds (the old text when the rewrite is unusable)."""
        start = time.perf_counter()
        model = self._resolve(state)
        request = (
            f'<{CONSOLIDATION_TAG} path="{attribute(path)}" budget_tokens="{target}">\n'
            f"{text.rstrip()}\n</{CONSOLIDATION_TAG}>"
        )
        messages = [user(request)]
        settings = ModelSettings(
            max_tokens=max(target * 2, 256), timeout_s=state.config.settings.timeout_s
        )
        params = RequestParams(system_prompt=self.prompt)
        context = state.counter.count_request(self.prompt, messages, [])
        response = await state.run_step("model", model.request, messages, settings, params)
        state.record_model_call(
            model, response, context_tokens=context, latency_ms=state.elapsed_ms(start),
            encoding=state.counter.encoding_name, label=CONSOLIDATE_SUFFIX,
        )  # fmt: skip
        rewritten = response.text.strip()
        if not rewritten:
            raise ModelError(f"the memory consolidator {model.name} returned an empty file")
        after = state.counter.count_text(rewritten)
        kept = after < tokens
        if kept:
            agent_hook = versioning(state.run_id, "agent", self._on_version(state))
            state.files.grant(
                MEMORY_PREFIX,
                versioning(state.run_id, "consolidate",
                           self._on_version(state, "before_agent", "consolidate")),
            )  # fmt: skip
            try:
                state.files.write(path, rewritten + "\n")
            finally:
                state.files.grant(MEMORY_PREFIX, agent_hook)
        state.event(
            self.name, "before_agent", "consolidated" if kept else "consolidation_refused",
            tokens_before=tokens, tokens_after=after,
            detail={"path": path, "budget_tokens": target, "model": model.name},
            ms=state.elapsed_ms(start),
        )  # fmt: skip
        return rewritten + "\n" if kept else text

    def _resolve(self, state: RunState) -> Model:
        if self.model is None:
            return state.config.model
        if isinstance(self.model, str):
            from harness.models import resolve_model  # SDK adapters load only when named

            try:
                self.model = resolve_model(self.model)
            except HarnessError as exc:
                raise HarnessError(f"memory.model: {exc}") from None
        return self.model


def _read(files: FileSystem, path: str) -> Content:
    try:
        return memory_text(path, files.read_bytes(path))
    except FileNotFoundError:
        return None
    except FileError as exc:
        return Unreadable(str(exc))


def _differs(store: Store, path: str, text: str | None) -> bool:
    latest = latest_version(store.memory, path)
    if latest is None:
        return text is not None
    return latest[1] != text


__all__ = [
    "CONSOLIDATE_SUFFIX",
    "CONSOLIDATION_TAG",
    "DEFAULT_PATHS",
    "MEMORY_PREFIX",
    "POLICIES",
    "Memory",
    "export_memory",
    "import_memory",
    "render_memory",
]
