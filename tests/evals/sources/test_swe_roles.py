"""SWE-agent's own tools read as listings and greps of a named file (evals/sources/swe_roles.py):
the windowed viewer (`open`, `goto`, `scroll_down`, `edit`), `search_file`, `search_dir` and
`find_file`, with the state line the harness appends to each observation left out. The outputs
here are written by hand in the shape SWE-agent's tools print."""

from __future__ import annotations

from typing import Any

from evals.sources.roles import Call, role_of

STATE = "\n(Open file: /tally/src/tally/ledger.py)\n(Current directory: /tally)\nbash-$"
WINDOW = (
    "[File: /tally/src/tally/ledger.py (212 lines total)]\n"
    "(116 more lines above)\n"
    "117:\n"
    "118:def settle_account(account_id, fee_cents):\n"
    "119:    charged = apply_fee(account_id, fee_cents)\n"
    "120:    return round_half_even(charged)\n"
    "(92 more lines below)" + STATE
)


def _phrase(value: str, text: str, command: str | None = None, **arguments: Any) -> str | None:
    call = Call("bash", {"command": command}) if command else Call("open", arguments)
    found = role_of(value, text, "tool", call, None)
    return found["phrase"] if found else None


def test_a_line_number_of_the_viewer_is_named_by_what_the_line_defines_in_the_headers_file() -> \
        None:  # fmt: skip
    # `goto` names no file: the window's header does.
    assert _phrase("118", WINDOW, "goto 118") == (
        "the line number of `def settle_account` in `/tally/src/tally/ledger.py`"
    )


def test_the_viewer_names_its_file_as_the_agent_opened_it() -> None:
    assert _phrase("118", WINDOW, "open src/tally/ledger.py 118") == (
        "the line number of `def settle_account` in `src/tally/ledger.py`"
    )
    assert _phrase("118", WINDOW, path="src/tally/ledger.py", line_number=118) == (
        "the line number of `def settle_account` in `src/tally/ledger.py`"
    )


def test_an_unindented_numbered_line_of_the_viewer_is_a_line_of_its_file() -> None:
    # `118:def ...` has no space after the colon: outside a window it is no numbered line.
    assert _phrase("settle_account", WINDOW, "scroll_down") == (
        "the name that line 118 of `/tally/src/tally/ledger.py` defines"
    )


def test_the_window_an_edit_would_have_made_holds_no_fact_of_the_file() -> None:
    text = (
        "Your proposed edit has introduced new syntax error(s).\n\nERRORS:\n- E999 "
        "IndentationError: unexpected indent\n\nThis is how your edit would have looked if "
        "applied\n-------------------------------------------------\n"
        "[File: /tally/src/tally/ledger.py (212 lines total)]\n"
        "131:def refund_account(account_id):\n"
        "-------------------------------------------------\n\n"
        "This is the original code before your edit\n"
        "-------------------------------------------------\n"
        "[File: /tally/src/tally/ledger.py (212 lines total)]\n"
        "131:def reverse_charge(account_id):\n"
    )
    assert _phrase("131", text, "edit 131:131") == (
        "the line number of `def reverse_charge` in `/tally/src/tally/ledger.py`"
    )


def test_a_search_file_match_is_a_line_of_the_searched_file() -> None:
    text = (
        'Found 2 matches for "fee_cents" in /tally/src/tally/ledger.py:\n'
        "Line 118:def settle_account(account_id, fee_cents):\n"
        "Line 143:FEE_CENTS_CAP = fee_cents_cap(7)\n"
        'End of matches for "fee_cents" in /tally/src/tally/ledger.py' + STATE
    )
    assert _phrase("143", text, 'search_file "fee_cents"') == (
        "the line number of `FEE_CENTS_CAP` in `/tally/src/tally/ledger.py`"
    )


def test_a_search_dir_match_names_a_file_by_its_name() -> None:
    text = (
        'Found 5 matches for "settle_account" in /tally:\n'
        "/tally/src/tally/ledger.py (3 matches)\n"
        "/tally/tests/test_settlement.py (2 matches)\n"
        'End of matches for "settle_account" in /tally' + STATE
    )
    assert _phrase("/tally/tests/test_settlement.py", text, 'search_dir "settle_account"') == (
        'the path of `test_settlement.py` that `search_dir "settle_account"` listed'
    )


def test_the_state_line_the_harness_appends_is_no_output_of_the_command() -> None:
    # The path of the open file would otherwise be a second path beside the one printed.
    text = "Wrote the report to /tally/out/report_2291.csv" + STATE
    assert _phrase("/tally/out/report_2291.csv", text, "python report.py") == (
        "the path `python report.py` printed"
    )


def test_the_state_line_of_an_interactive_session_is_left_out_too() -> None:
    # SWE-agent's CTF mode adds the interactive session (`connect_start`) to the state.
    state = "\n(Open file: n/a)\n(Current directory: /ctf)\n(Interactive session: n/a)\nbash-$"
    text = "Wrote the capture to /ctf/out/session_7713.pcap" + state
    assert _phrase("/ctf/out/session_7713.pcap", text, "python grab.py") == (
        "the path `python grab.py` printed"
    )


def test_the_lines_after_a_find_file_listing_are_no_matches_of_a_search() -> None:
    text = (
        'Found 1 matches for "ledger.py" in /srv/tally.d:\n'
        "/srv/tally.d/src/ledger.py\n"
        "Line 230:settle_all_accounts(batch_size=5000)"  # a script's own output, not a match
    )
    assert _phrase("230", text, 'find_file "ledger.py" /srv/tally.d') is None


CTF_TASK = (
    "We're currently solving the following CTF challenge. The CTF challenge is a cryptography "
    'problem named "Ledger Lock", worth 50 points. The description is:\nUnlock the ledger.\n'
    "Files included in the challenge: ['lock_4412.py', 'ledger.enc', 'notes_7.txt']\n\n"
    "The challenge web server is running on `vault.ctf.example` port `31337` and you can access "
    "it from within the container environment using `nc vault.ctf.example 31337`.\n\n"
    "INSTRUCTIONS:\nNow, you're going to solve this challenge on your own." + STATE
)


def _user(value: str, text: str) -> str | None:
    found = role_of(value, text, "user", None, None)
    return found["phrase"] if found else None


def test_the_ctf_task_names_its_server_and_port() -> None:
    assert _user("vault.ctf.example", CTF_TASK) == "the host the challenge server runs on"
    assert _user("31337", CTF_TASK) == "the port the challenge server runs on"


def test_a_challenge_file_is_named_by_its_extension_when_no_other_file_shares_it() -> None:
    assert _user("ledger.enc", CTF_TASK) == "the `.enc` file included in the challenge"
    one = CTF_TASK.replace("['lock_4412.py', 'ledger.enc', 'notes_7.txt']", "['lock_4412.py']")
    assert _user("lock_4412.py", one) == "the file included in the challenge"
    two = CTF_TASK.replace("'notes_7.txt'", "'lock_9.py'")
    assert _user("lock_4412.py", two) is None  # two `.py` files: which one?


def test_a_value_only_the_state_line_shows_has_no_role_and_no_crash() -> None:
    # The simulated reader asks of every value its source shows, the state line's path too;
    # roles read the output without that line, where the value does not stand.
    assert _phrase("/tally", "Found 0 matches." + STATE, "search_dir settle /tally") is None
