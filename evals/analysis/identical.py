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
    """One line per pair of arms that replayed identically on some runs: how many of the runs
    they share, and why the technique did not act where that is known."""
    runs: dict[tuple[str, ...], dict[str, EvalResult]] = {}
    for r in results:
        if not r.replay_digest:
            continue
        key = (r.scenario, str(r.seed), r.scale, r.model, r.reader, str(r.params.get("window")))
        runs.setdefault(key, {})[r.strategy] = r
    same: dict[tuple[str, str], list[EvalResult]] = {}
    shared: dict[tuple[str, str], int] = {}
    for arms in runs.values():
        names = sorted(arms)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                shared[(a, b)] = shared.get((a, b), 0) + 1
                if arms[a].replay_digest == arms[b].replay_digest:
                    same.setdefault((a, b), []).append(arms[a])
                    same[(a, b)].append(arms[b])
    lines = []
    for (a, b), mine in sorted(same.items()):
        n = len(mine) // 2
        reasons = [idle_reason(r) for r in mine]
        why = next((x for x in reasons if x), "")
        lines.append(
            f"`{a}` and `{b}` replayed identically on {n} of {shared[(a, b)]} runs"
            + (f" ({why})" if why else "")
            + "."
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
