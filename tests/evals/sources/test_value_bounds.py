"""The role finder's matchers without a regex per value (evals/sources/bounds.py) and its
per-text memos (text_roles.only_of_shape, table_roles.table_role) answer exactly what the
per-value code they replace answered: a replay's results must not change by a byte."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.sources.bounds import keyword_of, whole_token
from evals.sources.table_roles import _naming, _tables, table_role
from evals.sources.text_roles import _NUMBER_TOKEN, only_of_shape, role
from evals.sources.values import shape_of

# Characters the patterns treat apart: quotes, brackets, signs, spaces of both kinds, a word
# character outside ASCII, a digit outside ASCII.
ALPHABET = "ab1_.-=( )[]{}'\"`,;:$€%\n\t\u00a0é٣"


def _whole_token_regex(value: str, text: str) -> bool:
    pattern = rf"(?:^|[\s\"'`(\[{{,=$€£]){re.escape(value)}(?:$|[\s\"'`)\]}},;:]|\.(?:\s|$))"
    return re.search(pattern, text) is not None


def _keyword_regex(value: str, line: str) -> str | None:
    k = re.search(rf"\b([A-Za-z_]\w*)\s*=\s*['\"]?{re.escape(value)}(?![\w.(])", line)
    return k[1] if k else None


def _only_of_shape_per_value(value: str, text: str) -> bool:
    if not _whole_token_regex(value, text):
        return False
    shape = shape_of(value)
    others = {t for t in re.findall(r"[\w./\-:]+", text) if t.strip(".:") != value}
    if shape == "number":
        others = {t.strip(".:") for t in others if _NUMBER_TOKEN.fullmatch(t.strip(".:"))}
    elif shape in ("file path", "date"):
        others = {t for t in others if shape_of(t.strip(".:")) == shape}
    else:
        others = {t for t in others if shape_of(t) == "identifier" and re.search(r"\d|_", t)}
    return not others


def _table_role_per_value(value: str, text: str, result: str) -> dict[str, object] | None:
    for header, rows in _tables(text):
        cells = [(r, c) for r, row in enumerate(rows) for c, cell in enumerate(row)
                 if cell == value]  # fmt: skip
        if len(cells) != 1:
            continue
        r, c = cells[0]
        naming = _naming(rows, r, c, value)
        if naming is None:
            return None
        said = " and ".join(f"`{header[k]}` is `{rows[r][k]}`" for k in naming)
        terms = [header[c], *(rows[r][k] for k in naming), *(header[k] for k in naming)]
        return role("table_cell", f"the `{header[c]}` of the row whose {said} in {result}",
                    terms, value)  # fmt: skip
    return None


CODE = [
    "x = 5",
    "x=5",
    "timeout = '30s'",
    'name = "ab_1"',
    "val = f()",
    "val = f.get()",
    "a == 5 and b = 5",
    "self.rows = 512",
    "rows = 512.0",
    "rows = 512, cols = 512",
    "9x = 5",
    "éa = 5",
    "f(limit=35507, other=1)",
    "x =  \t'5'",
    "x = ''5",
    "x = 5(",
    "x = 5.",
    "",
    "=5",
    "x = 5 y = 5",
]


def test_the_code_lines_give_the_same_name() -> None:
    for line in CODE:
        for value in {*re.findall(r"[\w.'\"]+", line), "5", "'5'", "512", "f", "f.get", ""}:
            assert keyword_of(value, line) == _keyword_regex(value, line), (value, line)


def test_the_tokens_of_hand_written_texts_stand_alike() -> None:
    texts = ["total $600 due", "50% done", "sm_50 arch", "see 50.", "see 50.5", "(50)", "50",
             "x=50;", "a 50\n", "`50`", "€50,", "a\u00a050\u00a0b", "50:", "50-"]  # fmt: skip
    for text in texts:
        for value in ("50", "600", "50.5", "sm_50", "a"):
            assert whole_token(value, text) == _whole_token_regex(value, text), (value, text)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=16), st.integers(0, 16), st.integers(0, 5),
       st.text(alphabet=ALPHABET, min_size=1, max_size=4))  # fmt: skip
def test_str_find_matches_the_regex(text: str, at: int, size: int, other: str) -> None:
    for value in (text[at : at + size], other):
        assert whole_token(value, text) == _whole_token_regex(value, text), (value, text)
        assert keyword_of(value, text) == _keyword_regex(value, text), (value, text)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["12", "3.5", "a_1", "x1", "src/a.py", "2024-01-02", "word",
                                 "12:", ".a_1", "b-2", "4,5", "a.py"]), max_size=6),
       st.sampled_from(["12", "3.5", "a_1", "src/a.py", "2024-01-02", "a.py"]))  # fmt: skip
def test_one_value_of_its_shape_as_before(words: list[str], value: str) -> None:
    for text in (" ".join(words), " ".join([*words, value]), f"{value}\n" + " ".join(words)):
        assert only_of_shape(value, text) == _only_of_shape_per_value(value, text), text
        assert only_of_shape(value, text) == _only_of_shape_per_value(value, text), "again"


TABLE = """\
company,region,value,owner
Fjordline Shipping,NA,120,ana
Fjordline Shipping,EU,130,bo
Kestrel Foods,NA,120,cy
Kestrel Foods,EU,145,ana
"""


def test_a_parsed_table_names_each_cell_as_before() -> None:
    texts = [TABLE, TABLE + "\nname\ttype\tsize\na\tx\t1\nb\ty\t2\n", "| a | b | c |\n|1|2|3|\n",
             "a|b|c\n1|2|3\n4|5|6\n", "no table here"]  # fmt: skip
    for text in texts:
        cells = {c.strip() for line in text.splitlines() for c in re.split(r"[,\t|]", line)}
        for value in sorted(cells):
            for _ in range(2):  # parsed, then from memory
                want = _table_role_per_value(value, text, "the `export` result")
                assert table_role(value, text, "the `export` result") == want, value


def test_the_memo_does_not_mix_texts() -> None:
    found = [table_role("130", TABLE.replace("130", v), "r") is None for v in ("130", "131")]
    assert found == [False, True]
