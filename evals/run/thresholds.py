"""Thresholds that scale with a capped window (evals/README.md, "Window scaling").

A middleware threshold set as absolute tokens by default (offload's 20,000-token result limit,
context editing's 100,000-token trigger) was chosen for a window of 128k-200k tokens. Under
`--window 16000` no real tool result crosses 20,000 tokens, so `offload` would replay byte
for byte as `none` and say nothing. The rule: when the window is capped, each threshold below
becomes its share of the capped window, never more than the value it had (the middleware's
default, or the scenario's own default at its scale); a value given with `--set` is used as
given; fractions of the window scale by themselves and are left alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from harness.strategies import MIDDLEWARE, middleware_names

# key -> its share of a capped window. Offload at an eighth: about the share its default has
# of a 200k window (a tenth), rounded to a power of two. A quarter proved too high: of 770
# tool results in 20 SWE-bench mini-swe-agent trajectories, 2 cross 4,000 tokens (a quarter of
# 16k) and 45 cross 2,000, so at a quarter `offload` replayed as `none` on 19 of the 20. A
# long pasted message at a quarter (its default is 2.5x the result limit); clearing starts
# where summarizing would be close (0.6, as 100k is of a 170k window).
SHARES: dict[str, float] = {
    "offload.tool_token_limit": 0.125,
    "offload.human_token_limit": 0.25,
    "context-edit.trigger": 0.6,
}


def default(key: str) -> Any:
    """The constructor default of the middleware parameter `key` (`offload.tool_token_limit`)."""
    owner, _, name = key.partition(".")
    return inspect.signature(MIDDLEWARE[owner].__init__).parameters[name].default


def scaled_thresholds(
    strategy: str,
    window: int | None,
    defaults: Mapping[str, Any],
    given: Mapping[str, Any],
) -> dict[str, int]:
    """The absolute-token thresholds of `strategy`'s stack scaled to a capped `window`: for each
    key of `SHARES` the stack takes and `given` (the user's `--set`) does not name, the lesser
    of its value (`defaults`, the scenario's, else the middleware's) and its share of the
    window. Empty without a cap."""
    if window is None:
        return {}
    taken = set(middleware_names(strategy))
    out = {}
    for key, share in SHARES.items():
        if key.partition(".")[0] not in taken or key in given:
            continue
        value = defaults.get(key, default(key))
        # A fraction (or a count of messages) already follows the window.
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        out[key] = min(value, max(int(window * share), 1))
    return out
