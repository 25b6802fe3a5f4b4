"""The two ways `read_yaml` parses a file (evals/scenarios/safe_yaml.py): libyaml's nodes walked
once, and the careful event-by-event way for anything that walk does not accept. A file loads to
the same values and nodes either way, and every refusal is worded by the careful way."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.errors import UnsafeYamlError
from evals.scenarios import safe_yaml

pytestmark = pytest.mark.skipif(safe_yaml._Quick is None, reason="PyYAML built without libyaml")

DOCUMENTS = {
    "plain": "a: 1\nb: [x, 'y', \"z\"]\nc: {d: null, e: ~}\nf: |\n  two\n  lines\n",
    "scalars": "i: 0x1f\no: 0o17\nf: 1.5e3\nn: .nan\ninf: -.inf\nb: yes\n"
    "t: 2001-12-14t21:59:43.1-05:00\nd: 2002-12-14\nbin: !!binary aGVsbG8=\n"
    "s: !!str 12\nq: '12'\nempty:\n",
    "keys": "1: int\n0x1: same int, later\ntrue: bool\n~: null key\n'1': str\n2001-12-14: date\n",
    "merge": "a:\n  <<: {x: 1, y: 2}\n  y: 3\n",
    "value key": "a:\n  =: v\n",
    "anchor without alias": "a: &x 1\nb: &x 2\n",
    "tags": "s: !!set {a, b}\no: !!omap [a: 1, b: 2]\np: !!pairs [a: 1, a: 2]\n",
    "nested": "a:\n- - - [1, [2, {b: [3]}]]\n",
    "document markers": "--- \na: 1\n...\n",
    "only a scalar": "just text\n",
    "empty": "",
    "explicit empty": "---\n",
    "unicode": 'a: "caf\\u00e9 \\U0001F600"\nb: naïve ☃\n',
    "an ampersand in a string": "a: 'x & y'\nb: [c, {d: e}]\n'1': f\n1: g\n",
    "strings as deep as allowed": "a: " + "[" * 97 + "{k: v, 2: [w]}" + "]" * 97 + "\n",
    "str and int keys of one text": "'1': a\n1: b\n!!str 2: c\n2: d\n",
}


def _nodes(node: Any) -> Any:
    """A node as comparable plain data: kind, tag, value, position, style."""
    if node is None:
        return None
    start, end = node.start_mark, node.end_mark
    here = (type(node).__name__, node.tag, start.line, start.column, end.index,
            getattr(node, "style", None), getattr(node, "flow_style", None))  # fmt: skip
    if isinstance(node, yaml.ScalarNode):
        return (*here, node.value)
    if isinstance(node, yaml.SequenceNode):
        return (*here, [_nodes(n) for n in node.value])
    return (*here, [(_nodes(k), _nodes(v)) for k, v in node.value])


def _typed(value: Any) -> Any:
    """`value` with the type of every part, so 1 and True or 1 and 1.0 are told apart."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple | set):
        return (type(value).__name__, [_typed(v) for v in sorted(value, key=repr)]
                if isinstance(value, set) else [_typed(v) for v in value])  # fmt: skip
    return (type(value).__name__, repr(value))


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_either_way_gives_the_same_values_and_nodes(tmp_path: Path, name: str) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(DOCUMENTS[name], encoding="utf-8")
    data, root = safe_yaml.read_yaml(path)
    careful_data, careful_root = safe_yaml._careful(DOCUMENTS[name], path, 60.0)
    assert _typed(data) == _typed(careful_data)
    assert _nodes(root) == _nodes(careful_root)


def test_a_plain_file_is_not_composed_event_by_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("composed event by event")

    monkeypatch.setattr(safe_yaml._Loader, "_node", refuse)
    path = tmp_path / "plain.yaml"
    path.write_text(DOCUMENTS["scalars"] + "list: [x, 'y', {z: 2}]\n", encoding="utf-8")
    data, root = safe_yaml.read_yaml(path)
    assert data["list"] == ["x", "y", {"z": 2}] and data["bin"] == b"hello" and root is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &x [1]\nb: *x\n", "doc.yaml:2: YAML alias *x refused"),
        ("a: &x 1\nb: [*x]\n", "doc.yaml:2: YAML alias *x refused"),
        ("a: *nowhere\n", "doc.yaml:1: YAML alias *nowhere refused"),
        ("a: &x [*x]\n", "doc.yaml:1: YAML alias *x refused"),
        ("a:\n  b: 1\n  c: 2\n  b: 3\n", "doc.yaml:4: duplicate key 'b' (first given at line 2)"),
        ("a: 1\n---\nb: 2\n", "doc.yaml:2: expected one YAML document, found more"),
        ("a: [" * 101 + "]" * 101 + "\n", "doc.yaml:1: nested deeper than 100 levels"),
        ("a: [" * 2000 + "]" * 2000 + "\n", "doc.yaml:1: nested deeper than 100 levels"),
        ("a: " + "[" * 98 + "{k: [v]}" + "]" * 98, "doc.yaml:1: nested deeper than 100 levels"),
        ("'1': a\n!!str 1: b\n", "doc.yaml:2: duplicate key '1' (first given at line 1)"),
        ("a: 'open\n", "doc.yaml:2: not valid YAML: found unexpected end of stream"),
        ("? [a]\n: 1\n", "doc.yaml:1: not valid YAML: found unhashable key"),
        ("a: !custom 1\n", "doc.yaml:1: not valid YAML: could not determine a constructor"),
    ],
)
def test_a_refusal_is_worded_by_the_careful_way(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UnsafeYamlError) as info:
        safe_yaml.read_yaml(path)
    with pytest.raises(UnsafeYamlError) as careful:
        safe_yaml._careful(text, path, 60.0)
    assert str(info.value) == str(careful.value)
    assert message in str(info.value) and len(str(info.value).splitlines()) == 1


def test_what_the_careful_way_raises_beyond_yaml_errors_is_raised_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text("a: !!int x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="invalid literal for int") as info:
        safe_yaml.read_yaml(path)
    with pytest.raises(ValueError) as careful:
        safe_yaml._careful("a: !!int x\n", path, 60.0)
    assert type(info.value) is type(careful.value) and str(info.value) == str(careful.value)


def test_the_collector_waits_while_parsing_and_is_back_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    build = safe_yaml._built
    monkeypatch.setattr(safe_yaml, "_built", lambda *a: seen.append(gc.isenabled()) or build(*a))
    path = tmp_path / "doc.yaml"
    path.write_text("a: [1, 2]\n", encoding="utf-8")
    assert gc.isenabled()
    safe_yaml.read_yaml(path)
    path.write_text("a: &x 1\nb: *x\n", encoding="utf-8")
    with pytest.raises(UnsafeYamlError):
        safe_yaml.read_yaml(path)
    assert seen == [False, False] and gc.isenabled()


def test_libyaml_composes_without_calling_python_for_every_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    for name in ("descend_resolver", "ascend_resolver", "resolve"):
        method = getattr(yaml.resolver.BaseResolver, name)
        monkeypatch.setattr(
            yaml.resolver.BaseResolver,
            name,
            lambda self, *a, _name=name, _method=method: calls.append(_name) or _method(self, *a),
        )
    text = "a: [x, y, x, y, x]\nb: {c: x, d: 1, e: 1}\n"
    parsed = safe_yaml._quick(text, "doc.yaml", 60.0)
    assert parsed is not None and parsed[0] == {"a": ["x", "y", "x", "y", "x"],
                                                "b": {"c": "x", "d": 1, "e": 1}}  # fmt: skip
    # 16 nodes, 10 of them told apart by kind, text and style: a tag is resolved once each.
    assert calls == ["resolve"] * 10
