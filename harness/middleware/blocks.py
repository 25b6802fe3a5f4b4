"""Tags that fence data (memory files, the skills list) inside the system prompt.

Their content comes from files anyone may have edited, so it is escaped: a `<` that would open
or close one of these tags becomes `&lt;`, so text cannot end its own block early or forge
another block.
"""

from __future__ import annotations

import html
import re

MEMORY_TAG = "agent_memory"
SKILLS_TAG = "available_skills"
_TAGS = re.compile(rf"<(?=\s*/?\s*(?:{MEMORY_TAG}|{SKILLS_TAG})\b)", re.IGNORECASE)


def escape_block_text(text: str) -> str:
    """`text` with every opening or closing prompt-block tag neutralised."""
    return _TAGS.sub("&lt;", text)


def attribute(value: str) -> str:
    """`value` safe inside a double-quoted tag attribute."""
    return html.escape(value, quote=True)
