"""Reading a YAML file someone else wrote, with bounded work: scenario files are shared.

The file is read once, up to `MAX_FILE_BYTES`, and decoded as strict UTF-8. Aliases are refused
(ten nested aliases in a few KB expand to billions of values once serialised), nesting deeper
than `MAX_DEPTH` is refused, a key given twice in one mapping is refused instead of the last one
silently winning, and parsing stops after `PARSE_SECONDS`. Every error is one line naming the
file and the line.

Two ways to the same result. The quick one, where PyYAML has libyaml: libyaml composes the
nodes (an alias there is the anchored node again, not a copy, and libyaml itself refuses
nesting past 1000 levels, so composing is bounded; the clock is read once it is done), then one
walk checks every node and builds the values of plain maps, lists and strings, handing any
other scalar to the safe constructor (~1.6 times faster than composing event by event).
Anything the walk does not accept, or libyaml refuses, is parsed again the careful way: the
nodes composed here from libyaml's events, every problem caught before any Python object
exists, with the message of the first one. So a file loads the same either way, and an error is
the careful way's. The garbage collector waits while a file is parsed: the hundred thousand
nodes of a large file hold no cycles, and collecting while they piled up scanned them again and
again (most of the time a suite's files took to parse).
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    with collector_waiting():
        if _Quick is not None:
            parsed = _quick(text, str(path), seconds)
            if parsed is not None:
                return parsed
        return _careful(text, path, seconds)


def _careful(text: str, path: str | Path, seconds: float) -> tuple[Any, yaml.Node | None]:
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


# -- the quick way --------------------------------------------------------------------------

_Quick: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)
_RESOLVER = yaml.resolver.Resolver()  # the safe loaders' tags, with no path resolver
_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
# The scalars the safe constructor turns into values without looking at any other node.
_SCALARS = frozenset(f"tag:yaml.org,2002:{t}" for t in
                     ("null", "bool", "int", "float", "binary", "timestamp"))  # fmt: skip


class _Careful(Exception):
    """The walk met something only the careful way decides on (or words the error for)."""


def _quick(text: str, where: str, seconds: float) -> tuple[Any, yaml.Node | None] | None:
    """The data and root node, or None when the file needs the careful way."""
    assert _Quick is not None
    deadline = time.monotonic() + seconds
    loader = _Quick(text)
    if not loader.yaml_path_resolvers:
        # libyaml calls back into Python three times a node: to descend, to resolve its tag,
        # to ascend. Without path resolvers the first and last do nothing and a tag depends
        # on nothing but the call's arguments, so they are answered without a Python frame:
        # a no-op each, and the file's tags remembered while its loader lives.
        vars(loader).update(
            descend_resolver={}.get,
            ascend_resolver=[].clear,
            resolve=functools.lru_cache(maxsize=None)(_RESOLVER.resolve),
        )
    try:
        root = loader.get_single_node()
        data = _built(root, loader, "&" in text) if root is not None else None
    except Exception:  # noqa: BLE001 - whatever it is, the careful way meets it too and says so
        return None
    finally:
        loader.dispose()
    if time.monotonic() > deadline:
        raise UnsafeYamlError(
            f"{where}: not parsed within {seconds:g} s, the limit for a scenario file"
        )
    return data, root


def _built(root: yaml.Node, loader: yaml.SafeLoader, anchored: bool = True) -> Any:
    """The value of `root`, checked as the careful way checks it: a node met twice is an alias,
    and a mapping's scalar keys are told apart by tag and text. Without an anchor in the text
    (`anchored` false, no `&` anywhere) no node can be met twice, and the plain strings that
    are most of a file are taken where they stand, without a call each."""
    return _value(root, 0, set() if anchored else None, loader)


def _value(node: yaml.Node, depth: int, seen: set[int] | None, loader: yaml.SafeLoader) -> Any:
    if depth > MAX_DEPTH:
        raise _Careful
    if seen is not None:
        if id(node) in seen:
            raise _Careful
        seen.add(id(node))
    kind, tag = node.__class__, node.tag
    # No node can repeat and a child is within the depth: a plain string child is its text.
    inline = seen is None and depth < MAX_DEPTH
    if kind is _Scalar:
        if tag == _STR:
            return node.value
        if tag in _SCALARS:
            return loader.construct_object(node)
    elif kind is _Sequence and tag == _SEQ:
        return [
            item.value
            if inline and item.__class__ is _Scalar and item.tag == _STR
            else _value(item, depth + 1, seen, loader)
            for item in node.value
        ]
    elif kind is _Mapping and tag == _MAP:
        out: dict[Any, Any] = {}
        # Keys other than plain strings, by tag and text; a string key is told apart from
        # the others by its type already, so `out` tells whether it came before.
        others: set[tuple[str, str]] = set()
        for key, value in node.value:
            # Merge keys (<<), `=` keys and keys that are lists or maps: the careful way.
            ktag = key.tag
            if key.__class__ is not _Scalar or ktag not in _KEYS:
                raise _Careful
            if ktag == _STR:
                if key.value in out:
                    raise _Careful
            elif (ktag, key.value) in others:
                raise _Careful
            else:
                others.add((ktag, key.value))
            name = key.value if inline and ktag == _STR else _value(key, depth + 1, seen, loader)
            out[name] = (
                value.value
                if inline and value.__class__ is _Scalar and value.tag == _STR
                else _value(value, depth + 1, seen, loader)
            )
        return out
    raise _Careful


_Scalar, _Sequence, _Mapping = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode
_KEYS = _SCALARS | {_STR}


@contextmanager
def collector_waiting() -> Iterator[None]:
    """The garbage collector off inside (as it was after), for work that makes many objects
    and no cycles. Nests: an inner one leaves it to the outer."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
