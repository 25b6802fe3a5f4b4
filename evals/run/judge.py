"""An LLM judge for live replays: asks a model whether an answer gives the reference answer,
with the prompt in evals/prompts/judge.md. Its verdict and what it cost are stored per probe
beside the rule-based score (evals/scoring/answers.py), never in place of it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.messages import Message
from harness.models import Model, resolve_model
from harness.models.base import ModelSettings, RequestParams

PROMPT_PATH = Path(__file__).parents[1] / "prompts" / "judge.md"
FIELDS = ("{question}", "{expected}", "{answer}")
# A verdict with a reason fits in far fewer tokens; the cap bounds what one call can cost.
MAX_TOKENS = 200

_FIELD = re.compile(r"\{(question|expected|answer)\}")
_VERDICT = re.compile(r"verdict\s*:\s*\**\s*(right|wrong)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """`verdict`: right, wrong, or unparsed (the reply named neither)."""

    verdict: str
    cost_usd: float
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cache_write_tokens: int


class Judge:
    """Grades answers with `model` (a spec such as "openai:gpt-6.2-sol", or a `Model`).
    `prompt`: the template (default: evals/prompts/judge.md); it must hold {question},
    {expected} and {answer}."""

    def __init__(self, model: str | Model, *, prompt: str | None = None) -> None:
        self.model = resolve_model(model)
        self.template = prompt if prompt is not None else PROMPT_PATH.read_text(encoding="utf-8")
        missing = [f for f in FIELDS if f not in self.template]
        if missing:
            raise ValueError(f"judge prompt lacks {', '.join(missing)}")

    @property
    def name(self) -> str:
        return self.model.name

    def render(self, question: str, expected: str, answer: str) -> str:
        """The prompt for one answer. Filled in one pass, so an answer holding "{expected}"
        stays text."""
        values = {"question": question, "expected": expected, "answer": answer}
        return _FIELD.sub(lambda m: values[m.group(1)], self.template)

    async def judge(self, question: str, expected: str, answer: str) -> Verdict:
        prompt = self.render(question, expected, answer)
        response = await self.model.request(
            [Message(role="user", content=prompt)],
            ModelSettings(max_tokens=MAX_TOKENS),
            RequestParams(),
        )
        usage = response.usage
        return Verdict(
            verdict=parse_verdict(response.text),
            cost_usd=self.model.profile.cost(usage),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )


def parse_verdict(reply: str) -> str:
    """right or wrong from the reply's `VERDICT:` line; unparsed when it has none."""
    found = _VERDICT.search(reply)
    return found.group(1).lower() if found else "unparsed"
