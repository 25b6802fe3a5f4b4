"""bpe-openai builds its tokenizer from a vocabulary compiled into its library (~15 MB of the
library's pages read at load) and never reads it again: once built, those pages are let go,
and counts stay exact."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

CHILD = """
import json
from harness.tokens import TokenCounter, _bindings

def resident_kb():
    path, total, mine = _bindings().__file__, 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):
                mine = parts[-1] == path
            elif mine and parts[0] == "Rss:":
                total += int(parts[1])
    return total

counter = TokenCounter("cl100k_base")
n = counter.count_text("hello world, " * 1000 + "naïve café 数据")
print(json.dumps({"kb": resident_kb(), "n": n}))
"""


def test_the_vocabulary_pages_are_let_go_once_the_tokenizer_is_built() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    assert found["n"] == 3004  # as counted with every page resident
    assert found["kb"] < 4_000  # its code, not the 15 MB of vocabulary
