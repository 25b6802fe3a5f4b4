"""Every `ctxlab` command shown in README.md and docs/*.md parses as written: a doc that names a
flag, a command or a choice that does not exist fails here. Commands that need something the
reader supplies (a key, a server, a path) say so with a trailing `# needs: ...` comment and are
only parsed; the cheap ones also run."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from flows.cli import build_parser, main
from flows.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCKS = {"", "bash", "sh", "shell", "console", "yaml"}
FENCE = re.compile(r"^```(\w*)\s*$")
# `uv run ctxlab ...`, `ctxlab ...`, a console prompt (`$ ...`) or a workflow step (`- run: ...`)
COMMAND = re.compile(r"^\s*(?:\$\s+|-\s+run:\s+)?(?:uv run\s+)?ctxlab(?:\s+(?P<args>.*))?$")
EVAL_TWO_ARMS = ("eval", "--scenario", "competitive-analysis", "--strategy", "full",
                 "--strategy", "truncate", "--seed", "0")  # fmt: skip
# Commands cheap enough to run in a test as written, with what their output must name.
RUN_AS_WRITTEN = {
    ("scenarios",): ("competitive-analysis", "support-transcript", "research-subagents"),
    EVAL_TWO_ARMS: ("stored 2 runs", "full", "truncate"),
}


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    argv: tuple[str, ...]
    needs: str  # what the reader must supply; empty when nothing

    def __str__(self) -> str:
        return f"{self.where}: ctxlab {shlex.join(self.argv)}"


def commands_in(text: str, name: str) -> list[DocCommand]:
    """The `ctxlab` commands in the shell code blocks of a markdown text, continuation lines
    joined and comments stripped."""
    found: list[DocCommand] = []
    lines = text.splitlines()
    block: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line.strip())
        if fence:
            block = None if block is not None else fence.group(1)
            i += 1
            continue
        start = i
        while line.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i].strip()
        i += 1
        if block not in SHELL_BLOCKS:
            continue
        match = COMMAND.match(line)
        if not match:
            continue
        needs = re.search(r"#\s*needs:\s*(.+)$", line)
        argv = tuple(shlex.split(match.group("args") or "", comments=True))
        found.append(DocCommand(f"{name}:{start + 1}", argv, needs.group(1) if needs else ""))
    return found


def _all_commands() -> list[DocCommand]:
    return [c for path in DOCS for c in commands_in(path.read_text(), path.name)]


def _parse(argv: tuple[str, ...]) -> None:
    build_parser().parse_args(list(argv))


def test_the_docs_show_commands() -> None:
    commands = _all_commands()
    assert len(commands) > 30  # the extractor still finds them
    assert any(c.where.startswith("README.md") for c in commands)
    assert any(c.argv[:1] == ("check",) and "--baseline" in c.argv for c in commands)


@pytest.mark.parametrize("command", _all_commands(), ids=str)
def test_each_doc_command_parses(command: DocCommand) -> None:
    try:
        _parse(command.argv)
    except (UsageError, SystemExit) as exc:
        pytest.fail(f"{command} does not parse: {exc}")


def test_a_doc_naming_a_flag_that_does_not_exist_fails() -> None:
    doc = "```bash\nuv run ctxlab eval --scenario x --no-such-flag 1   # needs: x\n```\n"
    (command,) = commands_in(doc, "doc.md")
    assert command.needs == "x"
    with pytest.raises(UsageError, match="--no-such-flag"):
        _parse(command.argv)


def test_continuations_comments_and_prose_are_handled() -> None:
    doc = (
        "`ctxlab eval` in prose is not a command.\n"
        "```python\nctxlab = 1\n```\n"
        "```console\n$ uv run ctxlab sweep --scenario s \\\n    --seeds 2   # two seeds\n"
        "imported 5 traces\n```\n"
        "```yaml\n      - run: uv run ctxlab check            # the gate\n```\n"
    )
    assert [c.argv for c in commands_in(doc, "doc.md")] == [
        ("sweep", "--scenario", "s", "--seeds", "2"),
        ("check",),
    ]


@pytest.mark.usefixtures("cli_env")
def test_the_cheap_commands_run_as_written(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # the eval writes ./ctxlab.duckdb
    monkeypatch.setenv("COLUMNS", "300")  # its table whole, one row per line
    ran = {c.argv for c in _all_commands() if c.argv in RUN_AS_WRITTEN and not c.needs}
    assert ran == set(RUN_AS_WRITTEN), "the README no longer shows these commands"
    for argv in sorted(ran):
        assert main(list(argv)) == 0, argv
        captured = capsys.readouterr()
        for expected in RUN_AS_WRITTEN[argv]:
            assert expected in captured.out + captured.err, (argv, expected)
