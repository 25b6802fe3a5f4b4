"""Arms whose replays were identical: the same requests, tokens and answers (`EvalResult.
replay_digest`) on the same scenario, seed and window. Such arms are one arm at that window,
whatever their names promise, and every table says so, with the reason where a technique
never acted (`offload` at a window where no result crosses its limit)."""

from __future__ import annotations

from collections.abc import Sequence

from evals.scoring.results import EvalResult

# What each technique's counter on `EvalResult` is, and why it may not have acted.
_IDLE = {
    "offload": ("offloads", "no result crossed {limit}", "offload.tool_token_limit"),
    "summarize": ("summaries", "no request reached its trigger", ""),
}


def identical_replays(results: Sequence[EvalResult]) -> list[str]:
    """One line per group of arms that replayed identically on some runs (the arms of a run
    grouped by digest), with how many of the runs where all of them ran, and why a technique
    did not act where that is known; the most frequent groups first."""
    runs: dict[tuple[str, ...], dict[str, EvalResult]] = {}
    for r in results:
        if not r.replay_digest:
            continue
        key = (r.scenario, str(r.seed), r.scale, r.model, r.reader, str(r.params.get("window")))
        runs.setdefault(key, {})[r.strategy] = r
    groups: dict[tuple[str, ...], list[EvalResult]] = {}
    for arms in runs.values():
        by_digest: dict[str, list[str]] = {}
        for name in sorted(arms):
            by_digest.setdefault(arms[name].replay_digest, []).append(name)
        for names in by_digest.values():
            if len(names) > 1:
                groups.setdefault(tuple(names), []).extend(arms[n] for n in names)
    lines = []
    for names, mine in sorted(groups.items(), key=lambda g: (-len(g[1]) // len(g[0]), g[0])):
        shared = sum(all(n in arms for n in names) for arms in runs.values())
        reasons = list(dict.fromkeys(x for x in map(idle_reason, mine) if x))
        listed = ", ".join(f"`{n}`" for n in names[:-1]) + f" and `{names[-1]}`"
        why = f" ({'; '.join(reasons)})" if reasons else ""
        lines.append(
            f"{listed} replayed identically on {len(mine) // len(names)} of {shared} runs{why}."
        )
    return lines


def idle_reason(r: EvalResult) -> str:
    """Why `r`'s technique did not act (its counter is 0), or "" when it did or is unknown."""
    for name, (counter, why, key) in _IDLE.items():
        if name in r.strategy.split("-") and not getattr(r, counter):
            value = r.params.get(key) or r.thresholds.get(key) if key else None
            limit = f"{value:,} tokens" if isinstance(value, int) else "its token limit"
            return f"`{r.strategy}` acted nowhere: " + why.format(limit=limit)
    return ""
