"""Importing a trace is linear in its messages (#37 item 5): the work a walk does (the token
searches of cues.spans, the line scans of a cue's labels) grows with the trace, not with the
trace times everything before it. Counted, not timed: each step of a quadratic import reads
every earlier text, so doubling the messages quadruples the searches; a linear one doubles
them. The times are in tests/benchmarks/test_long_trace_import_bench.py."""

from __future__ import annotations

import cProfile
import json
import pstats
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.sources.cues import bound, spans
from evals.sources.formats import read_traces
from evals.sources.to_scenario import trace_to_scenario
from evals.sources.trace import Trace
from tests.benchmarks.long_trace import long_trace

# The per-text work of a walk: where a value stands in a text, the lines a label is on, the
# label around a value.
SCANS = ("spans", "_lines_with", "label_pattern")


def _scans(tmp_path: Path, n: int) -> dict[str, int]:
    path = tmp_path / f"trace-{n}.json"
    path.write_text(json.dumps(long_trace(n)))
    trace = next(read_traces(path))
    assert isinstance(trace, Trace) and len(trace.messages) == n - 1  # the system prompt apart
    profile = cProfile.Profile()
    profile.enable()
    doc = trace_to_scenario(trace)
    profile.disable()
    assert doc["probes"], "the trace gives probes: the walk did its work"
    counts = dict.fromkeys(SCANS, 0)
    for (file, _, name), (_, calls, *_) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        if file.endswith("evals/sources/cues.py") and name in counts:
            counts[name] += calls
    return counts


def test_the_searches_of_an_import_grow_linearly_with_the_messages(tmp_path: Path) -> None:
    small, large = _scans(tmp_path, 400), _scans(tmp_path, 800)
    for name in SCANS:
        # Linear doubles (with the trace's randomness, a little more); quadratic quadruples.
        assert large[name] <= 2.6 * small[name], (name, small[name], large[name])


@settings(max_examples=2000, deadline=None)
@given(
    st.text(alphabet="a1_.-/ é٣x\n", max_size=14),
    st.text(alphabet="a1_.-/ é٣x\n", min_size=1, max_size=4),
    st.integers(0, 14),
    st.integers(0, 4),
)
def test_spans_finds_what_its_regex_finds(text: str, other: str, at: int, size: int) -> None:
    """`spans` looks with `str.find` (a regex per value was too slow for a long trace): it
    must find exactly the places `bound`'s regex does, a value taken from the text or not;
    asked for the first place only, the first of them."""
    for value in (text[at : at + size], other):
        if value:
            found = [m.start() for m in bound(value).finditer(text)]
            assert spans(value, text) == found
            assert spans(value, text, first=True) == found[:1]
