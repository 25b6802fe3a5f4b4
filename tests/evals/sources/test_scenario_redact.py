"""What `ctxlab scenarios import` masks before a recorded run becomes a shareable file, and
what it keeps: one case per secret shape (the secret is fake, the shape is real)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.sources.redact import MASK, Redactor
from evals.sources.thread_import import import_run
from flows.cli import main
from harness import Store, create_agent
from harness.messages import ModelResponse, ToolCall
from harness.models.scripted import ScriptedModel
from harness.tools import tool

PEM = "\n".join(
    ["-----BEGIN OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
     "AAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACD1", "-----END OPENSSH PRIVATE KEY-----"]
)  # fmt: skip
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

# (the text around a secret, the secret): the secret must go, the text around it stay
SHAPES = {
    "openai": ("key {} in the env", "sk-proj-AbCdEf0123456789XyZ_abcd"),
    "anthropic": ("ANTHROPIC={}", "sk-ant-api03-Zq7Zq7Zq7Zq7Zq7"),
    "azure key": ("api-key: {}", "0123456789abcdef0123456789abcdef"),
    "azure header": ('{{"Ocp-Apim-Subscription-Key": "{}"}}', "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    "stripe live": ("charge with {} now", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    "stripe test": ("{}", "sk_test_51HqLyjWDarjtT1zdp7dcXYZ"),
    "stripe restricted": ("{}", "rk_live_51HqLyjWDarjtT1zdp7dc"),
    "aws key id": ("aws_access_key_id = {}", "AKIAIOSFODNN7EXAMPLE"),
    "aws secret": ("aws_secret_access_key = {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "aws json": ('"SecretAccessKey": "{}"', "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "jwt": ("cookie session={}; path=/", JWT),
    "private key": ("found this:\n{}\nin the repo", PEM),
    "password": ("postgres password={} host=db", "hunter2"),
    "passwd": ("passwd: {}", "c0rrect-horse"),
    "secret": ("client_secret='{}'", "Sh4red-Secr3t"),
    "env password": ('DB_PASSWORD="{}"', "pa55word!"),
    "x-api-key": ("x-api-key: {}", "live_7Hq2Lr9Xk4Vb8Np3"),
    "bearer": ("Authorization: Bearer {}", "abc123.def456-ghi789"),
    "basic auth": ("Authorization: Basic {}", "dXNlcjpwYXNzd29yZA=="),
    "access token": ("access_token={}", "ya29a0AfH6SMBx1234567890abc"),
    "github": ("remote with {}", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    "github fine-grained": ("{}", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    "slack": ("SLACK={}", "xoxb-123456789012-1234567890123-AbCdEfGhIj"),
    "google": ("maps key {}", "AIzaSyA1234567890abcdefghijklmnopqrstu"),
    "e-mail": ("write to {} today", "jane.doe@example.com"),
    "hugging face": ("HF_TOKEN {} set", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    "gitlab": ("remote with {}", "glpat-AbCdEf0123456789_xyz"),
    "npm": ("//registry.npmjs.org/:_authToken {}", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    "sendgrid": ("mail key {}", "SG.AbCdEfGhIjKlMnOp1234.QrStUvWxYz0123456789AbCdEfGhIjKlMnOp"),
    "slack webhook": (
        "post to {} now",
        "https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    "azure account key": (
        "AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net",
        "AbCd1234EfGh5678IjKl9012MnOp3456QrSt==",
    ),
    "url password": ("postgres://admin:{}@db.internal:5432/app", "S3cr3t!Pass"),
    "telegram bot": ("bot {} polling", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"),
    "google oauth": ("client secret {}", "GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx"),
}


@pytest.mark.parametrize("name", SHAPES)
def test_each_secret_shape_is_masked(name: str) -> None:
    around, secret = SHAPES[name]
    redactor = Redactor()
    out = redactor.text(around.format(secret))
    assert out == around.format(MASK)
    assert redactor.count == 1


def test_ordinary_trace_text_is_kept() -> None:
    ordinary = [
        "fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b, see the diff",  # 40-hex id
        "blob 9e107d9d372bb6826bd81d3542a419d6 matched the checksum",  # a 32-hex checksum
        "run 0f8fad5b-d9cb-469f-a165-70867728950e finished",  # a UUID
        "max_tokens=4096, input tokens: 12,345, tool_token_limit=20000",
        "key: revenue_musd, token budget: 8000",
        "The password policy asks for 12 characters; the secret of their growth is price.",
        "/notes/acme.md and /large_tool_results/call_7.txt and /memory/home/notes.md",
        "Fjordline Shipping reported revenue_musd = 41.2 in Q3 (source: export row 17)",
        "a sketch of ask-questions-first: sk-etch is not a key",
    ]
    redactor = Redactor()
    assert [redactor.text(t) for t in ordinary] == ordinary
    assert redactor.count == 0


# -- a whole import: nothing secret reaches the file ----------------------------------------

FAKE_KEY = "sk-ant-api03-" + "Zq7" * 12
FAKE_MAIL = "jane.doe@example.com"


@tool
def lookup(account: str) -> str:
    """Look an account up.

    Args:
        account: the account name.
    """
    return f"Account {account}: owner {FAKE_MAIL}, token {FAKE_KEY}, balance 1234.5 EUR."


def test_keys_and_addresses_never_reach_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    db = tmp_path / "secret.duckdb"
    store = Store(str(db))
    note = {"file_path": "/notes/acme.md", "content": "Balance: 1234.5 EUR\n"}
    model = ScriptedModel([
        ModelResponse(text="Looking it up.",
                      tool_calls=(ToolCall("c1", "lookup", {"account": "Acme Internal"}),)),
        ModelResponse(text="Checking my notes.", tool_calls=(ToolCall("c3", "ls", {"path": "/"}),)),
        ModelResponse(text="Noting the balance: 1234.5 EUR.",
                      tool_calls=(ToolCall("c2", "write_file", note),)),
        "Balance noted. Next step: write to the owner.",
    ])  # fmt: skip
    agent = create_agent(model, [lookup], store=store, system_prompt="You help.")
    result = agent.run_sync(
        f"Check Acme Internal for me; my key is {FAKE_KEY} and I am {FAKE_MAIL}.",
        thread_id="private",
    )
    store.close()
    out = tmp_path / "private.yaml"
    argv = ["scenarios", "import", result.run_id, "--db", str(db), "--out", str(out),
            "--redact", "Acme Internal", "--json", "--min-probes", "1"]  # fmt: skip
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out)
    text = out.read_text()
    # nowhere, not even escaped inside a cue built from the words around the balance
    assert "{{fact_" in text and "balance\\ " in text
    assert FAKE_KEY not in text and "sk-ant-" not in text and "Zq7" not in text
    assert FAKE_MAIL not in text and "example" not in text and "jane" not in text
    assert "Acme Internal" not in text and "[REDACTED]" in text
    assert info["redactions"] >= 6  # key and address in the user turn and the tool result
    assert info["probes"] >= 1  # the balance, asked by its label: the file is the whole path's
    assert import_run(str(db), result.run_id, min_probes=1)["source"]["redactions"] >= 4


# A home path names who ran the run only by its user segment: that goes, the rest of the path
# stays, so a listing of the file can still be named by it.
HOMES = {
    "linux": ("/home/jane/work/ctxlab.duckdb", "/home/<user>/work/ctxlab.duckdb"),
    "mac": ("/Users/jane/Desktop/report.md", "/Users/<user>/Desktop/report.md"),
    "windows": ("C:\\Users\\jane\\report.md", "C:\\Users\\<user>\\report.md"),
    "windows slashes": ("c:/Users/jane/app/x.py", "c:/Users/<user>/app/x.py"),
    "bare home": ("cd /home/jane && ls", "cd /home/<user> && ls"),
    "file url": ("file:///Users/jane/app/x.ts:26", "file:///Users/<user>/app/x.ts:26"),
    "claude project": (
        "projects/-home-jane-src-app/s.jsonl",
        "projects/-home-<user>-src-app/s.jsonl",
    ),
    "secret inside": (
        "/home/jane/keys/ghp_16C7e42F292c6912E7710c838347Ae178B4a.txt",
        f"/home/<user>/keys/{MASK}.txt",
    ),
}


@pytest.mark.parametrize("name", HOMES)
def test_a_home_path_loses_its_user_name_only(name: str) -> None:
    path, redacted = HOMES[name]
    assert Redactor().text(f"opened {path} for you") == f"opened {redacted} for you"


def test_one_home_path_redacts_alike_everywhere() -> None:
    redactor = Redactor()
    path = "/home/jane/src/app/x.py"
    texts = [f"Read {path}", f'{{"file_path": "{path}"}}', f"{path}:3:x = 1"]
    out = [redactor.text(t) for t in texts]
    assert all("/home/<user>/src/app/x.py" in o and "jane" not in o for o in out)


def test_a_user_name_learned_from_a_home_path_is_masked_everywhere() -> None:
    # `lsof` and `ls -l` print the user name bare: once a home path has named the user, it
    # goes wherever it stands as a word, before or after the path in the trace.
    redactor = Redactor()
    redactor.learn({"cwd": "/Users/mkowalczyk/app", "out": ["node 4242 mkowalczyk 12u IPv6"]})
    assert redactor.text("node 4242 mkowalczyk 12u IPv6") == "node 4242 <user> 12u IPv6"
    assert redactor.text("ls: mkowalczyk_notes, mkowalczyk") == "ls: mkowalczyk_notes, <user>"


def test_a_generic_account_name_is_masked_only_in_its_path() -> None:
    redactor = Redactor()
    redactor.learn("/home/dev/shop and /home/runner/work")
    assert redactor.text("npm run dev on the runner") == "npm run dev on the runner"
    assert redactor.text("/home/dev/shop") == "/home/<user>/shop"
