"""Extract IR text from a model reply.

Contract: ``str -> str | None``; pure text processing, the reply is never
interpreted in any other way. Reasoning sections (``<think>...</think>``, as
some local servers return them) are dropped first. Then, in order of
preference:

1. the last fenced block tagged ``alir``, ``ir``, ``solar-ir`` or ``solar``, or
   untagged, whose text contains ``solar-ir``;
2. the last fenced block with one of those tags (a missing header is then a
   syntax error the model can repair);
3. the text from the first line that starts with ``solar-ir`` to the end of the
   reply (a trailing unclosed fence removed).

``None`` means the reply holds no IR at all.
"""

from __future__ import annotations

import re

__all__ = ["IR_FENCE_TAGS", "extract_ir"]

IR_FENCE_TAGS = frozenset({"alir", "ir", "solar-ir", "solar", ""})

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_HEADER = re.compile(r"^[ \t]*solar-ir\b", re.M)


def extract_ir(reply: str) -> str | None:
    """Return the IR program text in ``reply``, or ``None`` if there is none.

    >>> extract_ir("Here:\\n```alir\\nsolar-ir 1\\nprogram p\\n```\\nDone.")
    'solar-ir 1\\nprogram p\\n'
    >>> extract_ir("solar-ir 1\\nprogram q\\n") is not None
    True
    >>> extract_ir("I cannot do that.") is None
    True
    """
    text = _THINK.sub("", reply)
    blocks: list[tuple[str, str]] = [
        (m.group(1).lower(), m.group(2))
        for m in _FENCE.finditer(text)
        if m.group(1).lower() in IR_FENCE_TAGS
    ]
    with_header = [body for _tag, body in blocks if _HEADER.search(body)]
    if with_header:
        return with_header[-1]
    tagged = [body for tag, body in blocks if tag and body.strip()]
    if tagged:
        return tagged[-1]
    match = _HEADER.search(text)
    if match is None:
        return None
    tail = text[match.start() :]
    fence = re.search(r"^[ \t]*```", tail, re.M)
    return tail[: fence.start()] if fence else tail
