"""Text from a trace or the store is printed with its control characters shown, not obeyed."""

from harness.terminal import printable


def test_control_characters_are_shown_as_escapes() -> None:
    forged = "a.json\r\x1b[2Kimported 99 traces\n\x1b]52;c;ZXZpbA==\x07\x9b2J\u202egpj.exe\x7f"
    assert printable(forged) == (
        "a.json\\x0d\\x1b[2Kimported 99 traces\\x0a\\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\u202egpj.exe"
        "\\x7f"
    )
    assert printable("line 1\nline 2\tend", keep_newlines=True) == "line 1\nline 2\\x09end"


def test_ordinary_text_is_unchanged() -> None:
    text = "Résumé — 東京 C:\\Users\\me 🙂 [bold]x[/bold]"
    assert printable(text) == text
