"""Redaction for imported runs: every string a recorded scenario file carries passes through
one `Redactor` before anything is written, so provider keys, tokens, passwords, private keys,
e-mail addresses and the user name of a home directory never reach the file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import partial
from typing import Any

# A value after a label such as `password=`: the label stays, the value goes. The labels
# are matched from their keyword on (`DB_PASSWORD=` from `PASSWORD`): a leading `\w*` would
# be tried at every word of every text.
_ASSIGN = r"""["']?\s*[:=]\s*["']?(?!\[REDACTED\])"""
# A token-like value: long, with a letter and a digit (so `max_tokens=4096` or `key: revenue`
# is not a secret).
_TOKENISH = r"(?=[^\s\"',;]*[0-9])(?=[^\s\"',;]*[A-Za-z])[A-Za-z0-9_\-+/=.~]{16,}"

# Whole blocks and prefixed key shapes first: an `sk-ant-...` key must not be half-matched by
# the shorter `sk-...` form. A pattern with a group `keep` keeps that part of the match. Each
# comes with the words (lowercase) a match must contain: a text holding none of them is not
# searched (most patterns cannot start with a literal, and each pass over a long tool result
# costs). What is deliberately kept: hex ids outside a key's label (a 40-hex commit or blob
# id, a 32-hex checksum, a UUID), and 40-character base64 outside a secret's label (a bare AWS
# secret key cannot be told from an ordinary blob).
_DEFAULTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE "
     r"KEY(?: BLOCK)?-----|[\s\S]*)", ("private key",)),
    (r"sk-ant-[A-Za-z0-9_\-]{8,}", ("sk-ant-",)),
    (r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}", ("sk-",)),
    (r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}", ("k_live_", "k_test_")),
    (r"(?i)(?P<keep>\bauthorization" + _ASSIGN + r"(?:basic|token|bearer)?\s*)"
     r"[A-Za-z0-9._~+/\-]{8,}=*", ("authorization",)),
    (r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*", ("bearer",)),
    (r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", ("eyj",)),  # a JWT
    (r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", ("akia", "asia", "abia", "acca")),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}\b", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (r"\bgithub_pat_[A-Za-z0-9_]{20,}", ("github_pat_",)),
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", ("xox",)),
    (r"\bxapp-[A-Za-z0-9\-]{10,}", ("xapp-",)),
    (r"\bAIza[0-9A-Za-z_\-]{30,}", ("aiza",)),
    (r"\bGOCSPX-[A-Za-z0-9_\-]{20,}", ("gocspx-",)),  # a Google OAuth client secret
    (r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),  # Hugging Face
    (r"\bglpat-[A-Za-z0-9_\-]{20,}", ("glpat-",)),  # GitLab
    (r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    (r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", ("sg.",)),  # SendGrid
    (r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
     ("hooks.slack.com",)),
    (r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b", (":aa",)),  # a Telegram bot token
    # Azure connection strings: AccountKey=..., SharedAccessKey=...
    (r"(?i)(?P<keep>(?:account|sharedaccess)key=)[A-Za-z0-9+/=]{16,}", ("accountkey=",
     "sharedaccesskey=")),
    # the password of a URL, whatever its punctuation: postgres://admin:S3cr3t!Pass@host
    (r"(?i)(?P<keep>\b[a-z][a-z0-9+.\-]*://[^\s:/@\[\]]+:)(?!\[REDACTED\])[^\s@/]+(?=@)",
     ("://",)),
    # password=..., DB_PASSWORD: ..., client_secret=..., aws_secret_access_key = ...
    (r"(?i)(?P<keep>(?:password|passwd|pwd|secret)[A-Za-z0-9_\-]*" + _ASSIGN
     + r""")[^\s"',;&]{3,}""", ("password", "passwd", "pwd", "secret")),
    # x-api-key: ..., api_key=..., access_token: ..., Ocp-Apim-Subscription-Key: ...
    (r"(?i)(?P<keep>(?:api[_\-]?key|access[_\-]?key|subscription[_\-]?key|token)" + _ASSIGN
     + ")" + _TOKENISH, ("key", "token")),
    # an Azure-style key: 32 hex characters after any label ending in `key`
    (r"(?i)(?P<keep>key" + _ASSIGN + r")[0-9a-f]{32}\b", ("key",)),
    (r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}", ("@",)),
    # (home paths: _HOMES, which keep all but the user name)
)  # fmt: skip
# A path in someone's home directory says who ran the run by its user segment only: that
# segment becomes `<user>` and the rest of the path stays, so a listing of the file is still
# named by it (the same path always redacts to the same text). Secret shapes inside the path
# were masked by the patterns before these. Virtual paths such as /memory/home/... are kept,
# and so is /root/..., which names no one. The third form is a path as Claude Code spells a
# project folder (`-home-jane-src-app`).
_SEGMENT = r"""(?!<user>)(?:\[REDACTED\]|[^\s"'`/\\:;,()\[\]<>|]+)"""
_HOMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"(?P<keep>(?<![\w.\-])(?<![\w.\-]/)/(?:home|Users)/)" + _SEGMENT, ("/home/", "/users/")),
    (r"(?i)(?P<keep>\b[A-Z]:[\\/]+Users[\\/]+)" + _SEGMENT, ("users",)),
    (r"(?P<keep>(?<![\w.\-])-(?:home|Users)-)(?!<user>)[A-Za-z0-9_.]+(?=[-/\\]|$)",
     ("-home-", "-users-")),
)  # fmt: skip
DEFAULT_PATTERNS: tuple[str, ...] = tuple(pattern for pattern, _ in (*_DEFAULTS, *_HOMES))
_NEEDLES = dict((*_DEFAULTS, *_HOMES))
_USER_PATTERNS = frozenset(pattern for pattern, _ in _HOMES)
# Account names that say nothing of who ran the run (CI runners, containers, images): masked
# in their home path, left alone elsewhere (`npm run dev`).
_GENERIC_USERS = frozenset(
    ("dev", "user", "admin", "ubuntu", "runner", "vagrant", "node", "app", "jovyan", "vscode",
     "codespace", "circleci", "jenkins", "git", "shared", "Shared", "ec2-user", "docker", "test")
)  # fmt: skip
MASK = "[REDACTED]"
USER = "<user>"


class Redactor:
    """Replaces every match of the default patterns and `extra` ones with `[REDACTED]` (the
    user name of a home path with `<user>`), and counts what it replaced."""

    def __init__(self, extra: Iterable[str] = (), *, defaults: bool = True) -> None:
        sources = [*(DEFAULT_PATTERNS if defaults else ()), *extra]
        compiled = []
        for pattern in sources:
            try:
                compiled.append((re.compile(pattern), _NEEDLES.get(pattern, ()),
                                 USER if pattern in _USER_PATTERNS else MASK))  # fmt: skip
            except re.error as exc:
                raise ValueError(f"--redact {pattern!r} is not a valid regex: {exc}") from None
        self.patterns = compiled
        self.count = 0
        self._homes = [p for p, _, mask in compiled if mask == USER]
        self._names: set[str] = set()
        self._users: re.Pattern[str] | None = None

    def learn(self, value: Any) -> None:
        """Take note of the user names the home paths in `value` (a string or JSON-like data)
        name, so `text` masks them wherever they stand as a word (`lsof` and `ls -l` print
        the name bare); call it on a whole trace before redacting any of it."""
        names = set()
        for text in _strings(value):
            for pattern in self._homes:
                names |= {m[0][len(m["keep"]) :] for m in pattern.finditer(text)}
        names = {n for n in names if len(n) >= 3} - {USER, MASK, *_GENERIC_USERS}
        if names - self._names:
            self._names |= names
            alternatives = "|".join(map(re.escape, sorted(self._names, key=len, reverse=True)))
            self._users = re.compile(rf"(?<![\w.\-])(?:{alternatives})(?![\w\-])")

    def text(self, value: str) -> str:
        lowered = value.lower()
        for pattern, needles, mask in self.patterns:
            if needles and not any(n in lowered for n in needles):
                continue
            keep = "keep" in pattern.groupindex
            value, n = pattern.subn(partial(_masked, mask) if keep else mask, value)
            self.count += n
        if self._users is not None:
            value, n = self._users.subn(USER, value)
            self.count += n
        return value

    def value(self, value: Any) -> Any:
        """`value` (a string, or JSON-like data) with every string in it redacted, keys
        included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def _masked(mask: str, m: re.Match[str]) -> str:
    return (m.group("keep") or "") + mask


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []
