"""Questions a user would agree with, found on a second held-out set of public traces (issue
33): an ordinal or a bare small number is no id, a shape names a user's value only when the
user gave one of it, a heredoc command is named by what it does, a question's text is
well-formed, a command line is no English phrase, and a log of tool events is no trace.
Fixtures are written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.errors import TraceFormatError
from evals.sources.formats import read_traces
from evals.sources.hygiene import rejection
from evals.sources.roles import Call, role_of
from evals.sources.to_scenario import trace_to_scenario
from evals.sources.trace import Trace, TraceMessage, TraceToolCall


def _step(id_: str, tool: str, result: str, **args: object) -> list[TraceMessage]:
    return [
        TraceMessage("assistant", "", [TraceToolCall(id_, tool, dict(args))]),
        TraceMessage("tool", result, tool_call_id=id_),
    ]


def _phrase(value: str, text: str, command: str) -> str | None:
    found = role_of(value, text, "tool", Call("bash", {"command": command}), None)
    return None if found is None else found["phrase"]


@pytest.mark.parametrize("value", ["5th", "10th", "1st", "22nd", "3rd", "11TH"])
def test_an_ordinal_is_no_value_of_its_own(value: str) -> None:
    # "the flight was on May 5th": a day or a place in a list, asked as "the id the user gave"
    assert rejection(value) == "ordinal"


@pytest.mark.parametrize("value", ["5th", "10th"])
def test_an_ordinal_the_user_wrote_is_not_named_as_an_id(value: str) -> None:
    text = f"It was around the {value} of this month, from Oslo to Rome."
    found = role_of(value, text, "user", None, None)
    assert found is None or "id" not in found["phrase"].split()


def test_a_bare_small_number_the_user_called_an_id_is_no_id() -> None:
    assert role_of("123", "Open the page of the object with id 123 please.", "user", None,
                   None) is None  # fmt: skip
    found = role_of("48213", "My order ID is 48213.", "user", None, None)
    assert found is not None and found["phrase"] == "the `order ID` the user wrote"


@pytest.mark.parametrize(
    ("value", "text", "label"),
    [
        ("omar_rossi_1241", "Sure, my user ID is omar_rossi_1241.", "user ID"),
        ("2001-04-12", "Add Ann Berg, whose date of birth is 2001-04-12, to it.", "date of birth"),
        ("2024-05-15", "Today's date is 2024-05-15. I fly Monday.", "Today's date"),
    ],
)  # fmt: skip
def test_what_the_user_called_a_value_is_quoted_as_their_words(
    value: str, text: str, label: str
) -> None:
    # "the Today's date the user gave" was garbled: the user's own words are quoted
    found = role_of(value, text, "user", None, None)
    assert found is not None and found["phrase"] == f"the `{label}` the user wrote"


def test_a_shape_names_a_users_value_only_when_the_user_gave_one_of_that_shape() -> None:
    trace = Trace("air", "openai-chat", "air.json")
    trace.messages = [
        TraceMessage("user", "Cancel two trips, please: the ids are K1P9WD and Q7T2ZM."),
        *_step("a", "get_reservation_details", json.dumps({"status": "ok"}), reservation="K1P9WD"),
        TraceMessage("assistant", "Which one first?"),
        TraceMessage("user", "Start with Q7T2ZM."),
        *_step("b", "policy", "cancellation within 24 hours is free", topic="cancel"),
        *_step("c", "lookup_rules", "refunds go to the original payment", topic="refund"),
        *_step("d", "notify", "sent", note="cancelled trip Q7T2ZM as asked"),
    ]
    doc = trace_to_scenario(trace)
    questions = {p["answer"]: p["question"] for p in doc["probes"]}
    # "the id the user gave" of Q7T2ZM, when the user also gave K1P9WD, names neither
    assert questions.get("Q7T2ZM") != "What is the id the user gave?"


SCRIPT = "python - <<'PY'\nimport os\nfrom app import conf\n\nprint('setting:', conf.lang())\nPY"


def test_a_heredoc_script_is_named_by_its_defining_line_not_its_opener() -> None:
    phrase = _phrase("fr_CA", "setting: fr_CA\n", SCRIPT)
    assert phrase is not None and "<<" not in phrase
    assert "print('setting:', conf.lang())" in phrase


def test_a_heredoc_that_writes_a_file_is_named_by_the_file() -> None:
    command = "cat > check_units.py <<'EOF'\nprint('unit:', parse())\nEOF\npython check_units.py"
    phrase = _phrase("kpc9", "unit: kpc9\n", command)
    assert phrase is not None and "<<" not in phrase and "`check_units.py`" in phrase


def test_a_command_is_named_by_its_first_line_that_is_no_comment() -> None:
    command = "# fetch the mirror list first\ncurl -s https://mirror.example/list.json"
    phrase = _phrase("v9.4.1", "release: v9.4.1\n", command) or ""
    assert "#" not in phrase and "`curl -s https://mirror.example/list.json`" in phrase


def test_a_quoted_key_of_a_commands_output_is_asked_in_plain_words() -> None:
    command = "repo manifest --list"
    text = 'manifest v2\n  "remote": "aosp_mirror",\n  "branch": "dev_2"\n'
    phrase = _phrase("aosp_mirror", text, command)
    # once "the value what `repo manifest --list` printed gives `remote`"
    assert phrase == "the value the output of `repo manifest --list` gives `remote`"


def test_a_question_never_has_unbalanced_backticks() -> None:
    # a line cut short to name it left "(e.g. `{1: .2," open
    text = (
        "lib/scales.py:12:  - A dict, implying a :class:`Ordinal` scale (e.g. `{1: .2, 2: .5}`)\n"
    )
    phrase = _phrase("lib/scales.py", text, "grep -rn Ordinal lib")
    assert phrase is None or phrase.count("`") % 2 == 0 and ":class:" not in phrase


@pytest.mark.parametrize("value", ["adb shell getprop ro.build.type", "git rev-parse --short HEAD",
                                   "ls /var/log/app"])  # fmt: skip
def test_a_command_line_is_no_english_phrase(value: str) -> None:
    assert rejection(value) is None


@pytest.mark.parametrize("value", ["fix the bug", "Wait however"])
def test_a_run_of_english_words_is_still_a_phrase(value: str) -> None:
    assert rejection(value) == "word"


def test_a_log_of_tool_events_is_refused_as_no_known_trace(tmp_path: Path) -> None:
    log = {
        "timestamp": "2026-01-02T03:04:05",
        "execution_events": [
            {"event_type": "ToolExecutionEvent", "tool_name": "lookup", "tool_args": {"x": 1},
             "execution_time": 0.002, "success": True},
        ],
        "summary": {"total": 1},
    }  # fmt: skip
    path = tmp_path / "events.json"
    path.write_text(json.dumps(log, indent=2))
    with pytest.raises(TraceFormatError) as err:
        list(read_traces(path, "auto", strict=True))
    said = str(err.value)
    assert "not a trace of any known format" in said
    assert "swe-agent" in said and '"execution_time"' in said


@pytest.mark.parametrize(
    ("value", "text", "command", "phrase"),
    [
        ("EMU_DATA_HOME", "PATH=/usr/bin\nEMU_DATA_HOME=/srv/emu/data\nLANG=C\n", "env | sort",
         "the variable `env | sort` printed set to `/srv/emu/data`"),
        ("sys.boot_done", "[ro.kind]: [userdebug]\n[sys.boot_done]: [yes_1]\n",
         "adb shell getprop", "the property `adb shell getprop` printed set to `yes_1`"),
        ("kernel.crash_file", "kernel.crash_file = /var/crash/core.%p\nkernel.pid_max = 4194\n",
         "sysctl -a", "the key `sysctl -a` printed set to `/var/crash/core.%p`"),
    ],
)  # fmt: skip
def test_a_setting_a_command_printed_is_named_by_the_value_it_was_set_to(
    value: str, text: str, command: str, phrase: str
) -> None:
    assert _phrase(value, text, command) == phrase


def test_a_setting_is_not_named_by_a_value_another_setting_has_too() -> None:
    text = "[sys.boot_done]: [1]\n[sys.is_ready]: [1]\n"
    assert _phrase("sys.boot_done", text, "adb shell getprop") is None


def test_a_label_the_user_ended_with_of_names_the_value() -> None:
    found = role_of("1999-02-03", "Add Ann Berg, with a date of birth of 1999-02-03.", "user",
                    None, None)  # fmt: skip
    assert found is not None and found["phrase"] == "the `date of birth` the user wrote"


def test_a_script_line_that_holds_the_value_does_not_name_it() -> None:
    command = "python - <<'PY'\nu = parse('10/m/kpc7')\nprint('unit:', u)\nPY"
    phrase = _phrase("kpc7", "unit: kpc7\n", command)
    assert phrase is None or "kpc7" not in phrase
