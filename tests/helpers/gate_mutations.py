"""Regressions the CI gate must catch, and harmless changes it must let pass, each patched into
the harness or a scenario through a `pytest.MonkeyPatch` (no clone of the repo, no file
changed): the gate's mutation test (tests/evals/gate/test_evals_gate.py) runs the gate on the
patched stack against a baseline written from the unpatched code in the same session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evals.scenarios import competitive_analysis
from harness.middleware import skills
from harness.middleware.context_edit import ContextEdit
from harness.middleware.cutoff import Threshold
from harness.middleware.mask import ObservationMask
from harness.middleware.memory import Memory
from harness.middleware.offload import OffloadLargeResults
from harness.middleware.summarization import Summarization
from harness.middleware.summarizer import Summarizer

Mutation = Callable[[pytest.MonkeyPatch], None]


def half_summarizer_input(mp: pytest.MonkeyPatch) -> None:
    """The summarizer is handed only the older half of the messages it condenses."""
    condense = Summarizer.condense

    async def halved(self, state, previous, fresh, path):
        return await condense(self, state, previous, fresh[: len(fresh) // 2], path)

    mp.setattr(Summarizer, "condense", halved)


def pathless_offload_preview(mp: pytest.MonkeyPatch) -> None:
    """The offload preview no longer names the file the result went to."""
    preview = OffloadLargeResults._preview

    def pathless(self, text, notice, path):
        return preview(self, text, notice, path).replace(path, "")

    mp.setattr(OffloadLargeResults, "_preview", pathless)


def memory_on_first_call_only(mp: pytest.MonkeyPatch) -> None:
    """Memory reaches the system prompt of a run's first model call, and of no later one."""
    wrap = Memory.wrap_model_call

    async def once(self, request, handler):
        mine = request.state.scratch.setdefault(self.name, {})
        if mine.get("injected"):
            return await handler(request)
        mine["injected"] = True
        return await wrap(self, request, handler)

    mp.setattr(Memory, "wrap_model_call", once)


def keep_no_recent_messages(mp: pytest.MonkeyPatch) -> None:
    """Summarization keeps none of the recent messages verbatim (whatever `keep` says); only
    the latest exchange, which the cut always spares, stays."""
    keep_cut = Summarization._keep_cut

    def nothing(self, state, messages, ok):
        keep, self.keep = self.keep, Threshold("messages", 0)
        try:
            return keep_cut(self, state, messages, ok)
        finally:
            self.keep = keep

    mp.setattr(Summarization, "_keep_cut", nothing)


def menu_without_descriptions(mp: pytest.MonkeyPatch) -> None:
    """The skills menu lists each skill's name and path, not its description."""
    render = skills.render_menu

    def bare(found):
        menu = render(found)
        for s in found:
            description = skills.escape_block_text(" ".join(s.header.description.split()))
            menu = menu.replace(f"**{s.name}**: {description}", f"**{s.name}**")
        return menu

    mp.setattr(skills, "render_menu", bare)


def context_edit_ignores_keep(mp: pytest.MonkeyPatch) -> None:
    """Context editing clears every tool result, the newest `keep` included."""
    plan = ContextEdit._plan

    def everything(self, state, messages, at_least):
        keep, self.keep = self.keep, 0
        try:
            return plan(self, state, messages, at_least)
        finally:
            self.keep = keep

    mp.setattr(ContextEdit, "_plan", everything)


def mask_keeps_half(mp: pytest.MonkeyPatch) -> None:
    """Observation masking keeps `keep // 2` results verbatim instead of `keep`."""
    before_model = ObservationMask.before_model

    async def halved(self, state):
        keep, self.keep = self.keep, self.keep // 2
        try:
            await before_model(self, state)
        finally:
            self.keep = keep

    mp.setattr(ObservationMask, "before_model", halved)


BRIEF_PROMPT = "Briefly summarize in two sentences."


def brief_summarizer_prompt(mp: pytest.MonkeyPatch) -> None:
    """The summarizer's instructions become a two-sentence brief."""
    mp.setitem(Summarization.__init__.__kwdefaults__, "prompt", BRIEF_PROMPT)


def late_summary_trigger(mp: pytest.MonkeyPatch) -> None:
    """Summarization waits until 99% of the window by default."""
    mp.setitem(Summarization.__init__.__kwdefaults__, "trigger", 0.99)


REGRESSIONS: dict[str, Mutation] = {
    "late-summary-trigger": late_summary_trigger,
    "half-summarizer-input": half_summarizer_input,
    "pathless-offload-preview": pathless_offload_preview,
    "memory-first-call-only": memory_on_first_call_only,
    "keep-no-recent-messages": keep_no_recent_messages,
    "menu-without-descriptions": menu_without_descriptions,
    "context-edit-ignores-keep": context_edit_ignores_keep,
    "mask-keeps-half": mask_keeps_half,
    "brief-summarizer-prompt": brief_summarizer_prompt,
}

# -- harmless changes ---------------------------------------------------------------------

SHORT_DESCRIPTION = (
    "Template for the weekly competitive report and QBRs; use it to draft, revise or format one."
)


def shorter_skill_description(mp: pytest.MonkeyPatch, tmp: Path) -> None:
    """The qbr-report skill with a shorter paraphrase of its description (`tmp`: a folder
    to write the changed copy to)."""
    original = competitive_analysis.skill_dir()
    text = (original / "SKILL.md").read_text(encoding="utf-8")
    head, body = text.split("\n---\n", 1)
    lines = [
        f"description: {SHORT_DESCRIPTION}" if ln.startswith("description:") else ln
        for ln in head.splitlines()
    ]
    assert lines != head.splitlines(), "the skill's description line moved"
    folder = tmp / original.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text("\n".join(lines) + "\n---\n" + body, encoding="utf-8")
    mp.setattr(competitive_analysis, "skill_dir", lambda: folder)


SHORT_MENU_INTRO = (
    "Skills are packaged instructions kept as folders under /skills/. When a task matches a "
    "description, read that skill's SKILL.md with read_file first and follow it."
)


def shorter_menu_intro(mp: pytest.MonkeyPatch) -> None:
    """A shorter system prompt: the skills menu's introduction, paraphrased in half the words."""
    mp.setattr(skills, "MENU_INTRO", SHORT_MENU_INTRO)


def reworded_summarizer_prompt(mp: pytest.MonkeyPatch) -> None:
    """The summarizer's default instructions, the first paragraph reworded."""
    from harness.middleware.summarizer import DEFAULT_PROMPT

    head, sep, rest = DEFAULT_PROMPT.partition("Write the summary")
    assert sep, "the default summarizer prompt changed shape"
    reworded = (
        "Condense the earlier part of this agent session: the agent continues from your "
        "summary alone, so what you omit is out of its sight. "
    )
    mp.setitem(Summarization.__init__.__kwdefaults__, "prompt", reworded + sep + rest)
