"""The README's library example runs offline exactly as written and shows an offload: the model
sees a preview naming a file, and the whole result is that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def library_example(text: str) -> str:
    """The first python block under the README's "Use it as a library" heading."""
    section = text.split("## Use it as a library", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the library section has no python example"
    return match.group(1)


def test_the_readme_library_example_offloads_a_large_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = README.read_text()
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(library_example(text), "README.md", "exec"), namespace)
    out = capsys.readouterr().out

    full = namespace["pull_market_report"].fn(company="Acme")  # type: ignore[attr-defined]
    seen = namespace["model"].calls[1].messages[-1].content  # type: ignore[attr-defined]
    path = re.search(r"/large_tool_results/\S+", seen)
    assert path, "the model was not shown a path to the offloaded result"
    assert len(seen) < len(full) / 10  # a preview, not the result
    assert "Acme,plant 0," in seen and "Acme,plant 2999," in seen  # its head and tail
    # What the example prints: the preview, the file holding the whole result, the answer.
    assert seen.splitlines()[0] in out
    assert f"'path': '{path.group(0)}'" in out and f"'chars': {len(full)}" in out
    assert "Acme runs 3,000 plants" in out
    assert f"not {len(full):,} characters" in text  # the prose beside the example says so
    namespace["model"].assert_complete()  # type: ignore[attr-defined]
