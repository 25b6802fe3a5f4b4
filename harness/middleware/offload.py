"""Offloading: oversized tool results and human messages go to files, the model gets a preview.

A tool result over `tool_token_limit` tokens is written whole to
`/large_tool_results/{tool_call_id}` before it enters the conversation (`{tool_call_id}-2`, ...
when a provider repeated the id for a different result). The model sees a notice,
the path, how to page through it with `read_file`, and the first and last lines. A human message
over `human_token_limit` tokens gets the same treatment under `/conversation_history/`. The
message carrying the preview names the original's blob in `full_ref` (the text is held once,
in the file's blob, which stays while a message names it), so the transcript loses nothing;
`meta["offload_path"]` names the file for later middleware (masking).

The file tools are exempt: offloading `read_file`'s output would send the model in circles.

A result may be hundreds of megabytes: it is never split, encoded or tokenized whole. The
offload decision is exact but reads only a bounded prefix (`TokenCounter.count_over`); the
size recorded on the event is an estimate (the event says so), the preview finds its lines
with `find`, and the file is written chunk by chunk.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from harness.files.filesystem import FileSystem
from harness.files.paths import safe_segment
from harness.files.storage import delete_content, line_count
from harness.files.tools import FILE_TOOL_NAMES
from harness.messages import Message
from harness.middleware.base import Middleware, ToolCallRequest, ToolHandler
from harness.middleware.params import number_or_none, whole
from harness.store import now

if TYPE_CHECKING:
    from harness.state import RunState

TOOL_RESULTS_DIR = "/large_tool_results"
HUMAN_DIR = "/conversation_history"
# Event actions; retention finds the files this middleware wrote through them.
OFFLOAD_TOOL = "offload_tool_result"
OFFLOAD_HUMAN = "offload_human_message"


def preview_lines(text: str, head: int, tail: int, line_chars: int) -> str:
    """The first `head` and last `tail` lines, numbered from 1 as `read_file` numbers them,
    each cut to `line_chars`. Only the lines shown are sliced out of `text`."""
    total = line_count(text)
    if total <= head + tail:
        return "\n".join(_numbered(n, text, span, line_chars)
                         for n, span in enumerate(_spans(text), start=1))  # fmt: skip
    out = [_numbered(n, text, span, line_chars)
           for n, span in zip(range(1, head + 1), _spans(text), strict=False)]  # fmt: skip
    out.append(f"... [{total - head - tail} lines truncated] ...")
    last = list(zip(range(total, total - tail, -1), _rspans(text), strict=False))
    out.extend(_numbered(n, text, span, line_chars) for n, span in reversed(last))
    return "\n".join(out)


def _spans(text: str) -> Iterator[tuple[int, int]]:
    """`(start, end)` of each line as `split_lines` cuts them, first to last."""
    pos = 0
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl
        yield pos, _drop_cr(text, pos, end)
        if nl < 0:
            return
        pos = nl + 1


def _rspans(text: str) -> Iterator[tuple[int, int]]:
    """`(start, end)` of each line as `split_lines` cuts them, last to first."""
    end = len(text) - 1 if text.endswith("\n") else len(text)
    while end >= 0:
        nl = text.rfind("\n", 0, end)
        yield nl + 1, _drop_cr(text, nl + 1, end)
        end = nl if nl >= 0 else -1


def _drop_cr(text: str, start: int, end: int) -> int:
    return end - 1 if end > start and text[end - 1] == "\r" else end


def _numbered(n: int, text: str, span: tuple[int, int], cap: int) -> str:
    start, end = span
    line = text[start : start + min(cap, end - start)]
    if end - start > cap:
        line = f"{line} [... {end - start - cap} more characters]"
    return f"{n:6d}\t{line}"


class OffloadLargeResults(Middleware):
    """Moves oversized tool results and human messages out of the window into files."""

    name = "offload"

    def __init__(
        self,
        *,
        tool_token_limit: int = 20_000,
        human_token_limit: int = 50_000,
        head_lines: int = 5,
        tail_lines: int = 5,
        line_chars: int = 1_000,
        exempt_tools: Iterable[str] | None = None,
        retention_days: float | None = None,
    ) -> None:
        """Parameters:
        tool_token_limit: a tool result over this many tokens is offloaded (default 20,000).
        human_token_limit: a human message over this many tokens is offloaded (default 50,000).
        head_lines, tail_lines: lines shown from the start and the end of the text (5 + 5).
        line_chars: each preview line is cut to this many characters (1,000).
        exempt_tools: tool names never offloaded (default: the file tools).
        retention_days: at run start, delete files this middleware wrote for runs that ended
            more than this many days ago; None (default) keeps them forever.
        """
        self.tool_token_limit = whole("offload.tool_token_limit", tool_token_limit)
        self.human_token_limit = whole("offload.human_token_limit", human_token_limit)
        self.head_lines = whole("offload.head_lines", head_lines)
        self.tail_lines = whole("offload.tail_lines", tail_lines)
        self.line_chars = whole("offload.line_chars", line_chars, minimum=1)
        exempt = FILE_TOOL_NAMES if exempt_tools is None else exempt_tools
        self.exempt_tools = frozenset(exempt)
        self.retention_days = number_or_none("offload.retention_days", retention_days)

    # -- tool results ----------------------------------------------------------------------

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Message:
        result = await handler(request)
        if request.call.name in self.exempt_tools:
            return result
        state = request.state
        tokens = _tokens_over(state, result.content, self.tool_token_limit)
        if tokens is None:
            return result
        return await state.run_step("offload", self._offload_tool_result, state, result, tokens)

    async def _offload_tool_result(self, state: RunState, result: Message, tokens: int) -> Message:
        start = time.perf_counter()
        stem = f"{TOOL_RESULTS_DIR}/{safe_segment(result.tool_call_id or result.id)}"
        path, new = _free_path(state.files, stem, "", result.content)
        notice = (
            f"The result of {result.name or 'this tool'} was too large for the conversation "
            f"(more than {self.tool_token_limit:,} tokens), so it was saved in full to the file "
            f"{path}"
        )
        message = self._move_to_file(state, result, path, notice, new=new)
        state.event(
            self.name, "wrap_tool_call", OFFLOAD_TOOL,
            tokens_before=tokens, tokens_after=state.counter.count_message(message),
            detail={"path": path, "tool": result.name, "tool_call_id": result.tool_call_id,
                    "tokens_estimated": True},
            ms=state.elapsed_ms(start),
        )  # fmt: skip
        return message

    # -- human messages --------------------------------------------------------------------

    async def before_model(self, state: RunState) -> None:
        checked: set[str] = state.scratch.setdefault(self.name, {}).setdefault("checked", set())
        large: list[tuple[int, int]] = []
        first = state.unscanned(self.name)
        for i, message in enumerate(state.messages[first:], start=first):
            if message.role != "user" or message.id in checked:
                continue
            checked.add(message.id)
            if message.full_content is not None or message.full_ref is not None:
                continue  # already a preview
            count = _tokens_over(state, message.content, self.human_token_limit)
            if count is not None:
                large.append((i, count))
        if large:
            await state.run_step("offload", self._offload_human_messages, state, large)
        state.scanned(self.name)

    async def _offload_human_messages(self, state: RunState, large: list[tuple[int, int]]) -> None:
        window = list(state.messages)
        for i, tokens in large:
            start = time.perf_counter()
            original = window[i]
            path, new = _free_path(state.files, f"{HUMAN_DIR}/{safe_segment(original.id)}",
                                   ".md", original.content)  # fmt: skip
            notice = (
                f"The user's message was too long to keep in the conversation (more than "
                f"{self.human_token_limit:,} tokens), so it was saved in full to the file {path}"
            )
            window[i] = self._move_to_file(state, original, path, notice, new=new)
            state.scratch[self.name]["checked"].add(window[i].id)
            state.event(
                self.name, "before_model", OFFLOAD_HUMAN,
                tokens_before=tokens, tokens_after=state.counter.count_message(window[i]),
                detail={"path": path, "message_id": original.id, "tokens_estimated": True},
                ms=state.elapsed_ms(start),
            )  # fmt: skip
        state.replace_window(window, reason="offload")

    def _move_to_file(
        self, state: RunState, message: Message, path: str, notice: str, *, new: bool
    ) -> Message:
        """Writes `message`'s text to `path`; returns the message that carries the notice and a
        preview in its place, naming the blob that holds the original (`full_ref`): neither the
        message nor its row keeps a second copy."""
        blob_id = state.files.write_blob(path, message.content, new=new)
        preview = self._preview(message.content, notice, path)
        return message.with_content(
            preview, full_content=None, full_ref=blob_id,
            meta={**message.meta, "offload_path": path},
        )  # fmt: skip

    def _preview(self, text: str, notice: str, path: str) -> str:
        n_lines = line_count(text)
        shown = (
            f"the first {self.head_lines} and last {self.tail_lines} are shown below"
            if n_lines > self.head_lines + self.tail_lines
            else "they are shown below"
        )
        return (
            f"{notice}\n"
            f'Read it in pages with read_file(file_path="{path}", offset=0, limit=100) '
            "(offset is the 0-based line to start from), or search it with grep. "
            f"It has {n_lines:,} lines; {shown}, each cut to {self.line_chars:,} characters.\n\n"
            + preview_lines(text, self.head_lines, self.tail_lines, self.line_chars)
        )

    # -- retention -------------------------------------------------------------------------

    async def before_agent(self, state: RunState) -> None:
        if self.retention_days is None:
            return
        cutoff = now() - timedelta(days=self.retention_days)
        # Files this middleware wrote for runs that ended before the cutoff.
        expired = state.store.files.expired(self.name, (OFFLOAD_TOOL, OFFLOAD_HUMAN), cutoff)
        if expired:
            await state.run_step("offload.retention", self._delete_expired, state, expired)

    async def _delete_expired(self, state: RunState, expired: list[dict[str, Any]]) -> None:
        start = time.perf_counter()
        with state.store.unit() as uow:
            delete_content(uow.files, [(f["namespace"], f["path"]) for f in expired])
        state.event(
            self.name, "before_agent", "retention_delete",
            detail={
                "retention_days": self.retention_days,
                "files": len(expired),
                "bytes": sum(f["size"] for f in expired),
                "paths": [f["path"] for f in expired[:50]],
            },
            ms=state.elapsed_ms(start),
        )  # fmt: skip


def _tokens_over(state: RunState, text: str, limit: int) -> int | None:
    """None if `text` has at most `limit` tokens, else a lower bound above `limit`: text that
    is offloaded is never counted whole (its preview is). A token is at least one UTF-8 byte,
    so short texts are cleared without running the tokenizer."""
    if len(text) * 4 <= limit or len(text.encode("utf-8", "surrogatepass")) <= limit:
        return None
    return state.counter.count_over(text, limit)


def _free_path(files: FileSystem, stem: str, suffix: str, content: str) -> tuple[str, bool]:
    """`stem + suffix`, or `stem-2 + suffix`, ...: the first path that is free or already
    holds exactly `content` (a step replayed after a crash writes the same path again), and
    whether it is free. A provider that repeats tool-call ids must not send an earlier
    preview to later data. One query finds every candidate taken (and a file where a
    directory above them should be: then the path is not called free, and the write names
    the clash)."""
    taken, blocked = files.paths_at(stem)
    path = stem + suffix
    n = 1
    while path in taken or any(t.startswith(path + "/") for t in taken):
        if path in taken and _holds(files, path, content):
            return path, False
        n += 1
        path = f"{stem}-{n}{suffix}"
    return path, not blocked


def _holds(files: FileSystem, path: str, content: str) -> bool:
    stored = files.open(path)
    if not stored.is_text or stored.chars != len(content):
        return False
    at = 0
    for piece in stored.text_from(0):
        if content[at : at + len(piece)] != piece:
            return False
        at += len(piece)
    return at == len(content)
