"""Window arithmetic shared by the compaction middleware: thresholds, pair-safe cut points,
and the note that tells the model where an offloaded result still lives.

Providers reject a tool result whose call is not in the request, and a tool call whose result
is missing (the orphan 400s peers' users report). So every compaction here only cuts where no
tool call is separated from its result, and never lets the kept part start with a tool result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from harness.messages import Message

ThresholdKind = Literal["fraction", "tokens", "messages"]
_KINDS = ("fraction", "tokens", "messages")
_FORMS = "use a fraction in (0, 1] (0.85), a token count (120000), or messages:40"


@dataclass(frozen=True, slots=True)
class Threshold:
    """An amount of context: a fraction of the model's window, a token count, or a message
    count. `parse` accepts `0.85` (fraction), `120_000` (tokens), `("messages", 40)`, and the
    strings `"0.85"`, `"120000"`, `"messages:40"`, `"tokens:5000"`, `"fraction:0.5"`."""

    kind: ThresholdKind
    value: float

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(
                f"threshold kind must be one of {', '.join(_KINDS)}, not {self.kind!r}"
            )
        if self.kind == "fraction" and not 0 < self.value <= 1:
            raise ValueError(f"a fraction threshold must be in (0, 1], got {self.value}")
        if self.kind != "fraction" and self.value < 0:
            raise ValueError(f"a {self.kind} threshold cannot be negative, got {self.value}")

    @classmethod
    def parse(cls, spec: object) -> Threshold:
        if isinstance(spec, Threshold):
            return spec
        if isinstance(spec, bool):
            raise ValueError(f"not a threshold: {spec!r}")
        if isinstance(spec, int):
            return cls("tokens", spec)
        if isinstance(spec, float):
            if spec <= 1:
                return cls("fraction", spec)
            if spec.is_integer():
                return cls("tokens", spec)
            raise ValueError(f"a float threshold is a fraction in (0, 1], got {spec}")
        if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
            # The kind is any string here; __post_init__ rejects one that is not a kind.
            return cls(spec[0], float(spec[1]))  # type: ignore[arg-type]
        if isinstance(spec, str):
            kind, sep, value = spec.partition(":")
            try:
                number = float(value if sep else spec)
            except ValueError:
                raise ValueError(f"cannot read threshold {spec!r}: {_FORMS}") from None
            if sep:  # a bad kind or amount is named by __post_init__
                return cls(kind.strip(), number)  # type: ignore[arg-type]  # as above
            return cls.parse(int(number) if number > 1 and number.is_integer() else number)
        raise ValueError(f"cannot read threshold {spec!r}: {_FORMS}")

    def tokens(self, window: int | None, fallback_window: int) -> int | None:
        """The threshold in tokens (None for a message count). A fraction applies to the
        model's window, or to `fallback_window` when the window is unknown."""
        if self.kind == "messages":
            return None
        if self.kind == "tokens":
            return int(self.value)
        return int(self.value * (window or fallback_window))

    def __str__(self) -> str:
        value = f"{self.value:g}" if self.kind == "fraction" else f"{int(self.value)}"
        return f"{self.kind}:{value}"


ThresholdSpec: TypeAlias = Threshold | float | int | str | tuple[str, float]


def safe_cuts(messages: Sequence[Message]) -> list[bool]:
    """`ok[i]` (for i in 0..len) says whether keeping `messages[i:]` and dropping or
    summarizing `messages[:i]` keeps every tool call with its result. Keeping everything
    (i=0) and keeping nothing (i=len) are always safe."""
    n = len(messages)
    call_at: dict[str, int] = {}
    for i, m in enumerate(messages):
        for c in m.tool_calls:
            call_at[c.id] = i
    # Difference array over cut positions: a pair at (a, b) forbids the cuts a+1..b.
    blocked = [0] * (n + 2)
    for j, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id in call_at:
            a, b = sorted((call_at[m.tool_call_id], j))
            blocked[a + 1] += 1
            blocked[b + 1] -= 1
    ok = []
    open_pairs = 0
    for i in range(n + 1):
        open_pairs += blocked[i]
        starts_with_result = i < n and messages[i].role == "tool"
        ok.append(i in (0, n) or (open_pairs == 0 and not starts_with_result))
    return ok


def safe_at_or_after(ok: Sequence[bool], i: int) -> int:
    while not ok[i]:
        i += 1
    return i


def safe_at_or_before(ok: Sequence[bool], i: int) -> int:
    while not ok[i]:
        i -= 1
    return i


def tail_cut(sizes: Sequence[int], ok: Sequence[bool], budget: int) -> int:
    """The earliest safe cut whose tail (`sizes[cut:]`) fits in `budget` tokens."""
    i, total = len(sizes), 0
    while i > 0 and total + sizes[i - 1] <= budget:
        i -= 1
        total += sizes[i]
    return safe_at_or_after(ok, i)


def pairing_problems(messages: Sequence[Message]) -> list[str]:
    """What a provider would reject: calls without a result right after their message,
    results without their call, duplicates. Empty when the window is well formed."""
    problems: list[str] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        i += 1
        if m.role == "tool":
            problems.append(f"result {m.tool_call_id!r} at {i - 1} has no call right before it")
            continue
        expected = [c.id for c in m.tool_calls]
        got: list[str | None] = []
        while i < n and messages[i].role == "tool" and len(got) < len(expected):
            got.append(messages[i].tool_call_id)
            i += 1
        if sorted(got, key=str) != sorted(expected, key=str):
            problems.append(f"calls {expected} at {i - len(got) - 1} are answered by {got}")
    return problems


def offload_path(message: Message) -> str | None:
    """The file holding the full text of an offloaded message (set by `OffloadLargeResults`)."""
    path = message.meta.get("offload_path")
    return path if isinstance(path, str) else None


def clip_text(text: str, max_tokens: int, count: Callable[[str], int], marker: str) -> str:
    """`text` cut so that it plus `marker` fits in `max_tokens` tokens as `count` counts them."""
    total = count(text)
    if total <= max_tokens:
        return text
    keep = int(len(text) * max_tokens / total)
    while keep > 0:
        clipped = text[:keep] + marker
        if count(clipped) <= max_tokens:
            return clipped
        keep = int(keep * 0.9)
    return marker if count(marker) <= max_tokens else ""


def fill(template: str, **fields: object) -> str:
    """`template` with `{name}` fields filled in (format specs such as `{tokens:,}` work);
    a field it does not know is left as written."""
    return template.format_map(_Fields(fields))


class _Fields(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"
