"""Reading a YAML file someone else wrote, with bounded work: scenario files are shared.

The file is read once, up to `MAX_FILE_BYTES`, decoded as strict UTF-8 and parsed once:
libyaml's parser (where PyYAML has it) emits the events, and the nodes are composed here so
that every problem is caught while composing, before any Python object exists. Aliases are
refused (ten nested aliases in a few KB expand to billions of values once serialised), nesting
deeper than `MAX_DEPTH` is refused before any recursion can run out, a key given twice in one
mapping is refused instead of the last one silently winning, and composing stops after
`PARSE_SECONDS`. Every error is one line naming the file and the line.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from evals.errors import UnsafeYamlError

# A recorded run of the flagship at small scale is ~160 KB; ~40 MB of replies parse in ~30 s.
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 100
PARSE_SECONDS = 60.0

# libyaml's parser when PyYAML was built with it (about ten times faster); the constructor
# and resolver are the safe ones either way.
_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """Composes nodes from the parser's events with the limits of the module docstring."""

    def __init__(self, text: str, where: str, seconds: float) -> None:
        super().__init__(text)
        self.where = where
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def get_single_node(self) -> yaml.Node | None:
        self.get_event()  # stream start
        node = None
        if not self.check_event(yaml.StreamEndEvent):
            self.get_event()  # document start
            node = self._node(0)
            self.get_event()  # document end
        if not self.check_event(yaml.StreamEndEvent):
            raise self._error(self.peek_event(), "expected one YAML document, found more")
        self.get_event()
        return node

    def _node(self, depth: int) -> yaml.Node:
        if time.monotonic() > self.deadline:
            raise UnsafeYamlError(
                f"{self.where}: not parsed within {self.seconds:g} s, the limit for a scenario file"
            )
        if self.check_event(yaml.AliasEvent):
            event = self.get_event()
            raise self._error(
                event, f"YAML alias *{event.anchor} refused: scenario files may not use "
                "aliases (write the value out)",
            )  # fmt: skip
        if depth > MAX_DEPTH:
            raise self._error(
                self.peek_event(), f"nested deeper than {MAX_DEPTH} levels, the limit"
            )
        event = self.get_event()
        if isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
            return yaml.ScalarNode(
                tag, event.value, event.start_mark, event.end_mark, style=event.style
            )
        if isinstance(event, yaml.SequenceStartEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = self.resolve(yaml.SequenceNode, None, event.implicit)
            seq = yaml.SequenceNode(tag, [], event.start_mark, None, flow_style=event.flow_style)
            while not self.check_event(yaml.SequenceEndEvent):
                seq.value.append(self._node(depth + 1))
            seq.end_mark = self.get_event().end_mark
            return seq
        if not isinstance(event, yaml.MappingStartEvent):
            raise self._error(event, f"unexpected {type(event).__name__}")
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.MappingNode, None, event.implicit)
        mapping = yaml.MappingNode(tag, [], event.start_mark, None, flow_style=event.flow_style)
        first: dict[tuple[str, str], int] = {}
        while not self.check_event(yaml.MappingEndEvent):
            key = self._node(depth + 1)
            if isinstance(key, yaml.ScalarNode):
                line = key.start_mark.line + 1
                if (key.tag, key.value) in first:
                    raise UnsafeYamlError(
                        f"{self.where}:{line}: duplicate key {key.value!r} (first given at "
                        f"line {first[key.tag, key.value]})"
                    )
                first[key.tag, key.value] = line
            mapping.value.append((key, self._node(depth + 1)))
        mapping.end_mark = self.get_event().end_mark
        return mapping

    def _error(self, event: Any, problem: str) -> UnsafeYamlError:
        return UnsafeYamlError(f"{self.where}:{event.start_mark.line + 1}: {problem}")


def read_yaml(path: str | Path, *, seconds: float = PARSE_SECONDS) -> tuple[Any, yaml.Node | None]:
    """The data in the YAML file `path` and its root node (for line numbers), parsed once.
    Raises `UnsafeYamlError` for a file over the limits, not UTF-8, or not valid YAML, and
    `OSError` when it cannot be read."""
    with open(path, "rb") as f:
        raw = f.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise UnsafeYamlError(
            f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, the limit for a "
            "scenario file"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UnsafeYamlError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8"
        ) from None
    loader = _Loader(text, str(path), seconds)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(exc.problem or exc.context or "").split())
        raise UnsafeYamlError(f"{path}{line}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise UnsafeYamlError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    finally:
        loader.dispose()
    return data, root
