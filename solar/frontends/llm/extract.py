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

Every step is linear in the length of the reply (Note [Linear fence scan]): a
reply is untrusted and may be up to ``max_reply_bytes`` long.

Note [Linear fence scan]
~~~~~~~~~~~~~~~~~~~~~~~~
A fenced block opens on a line ```` ```tag ```` (anything may follow the tag)
and closes on the next line that is only ```` ``` ```` (blanks around it
allowed); scanning resumes after the closing line, and an opening line with no
closing line after it opens nothing. One regular expression over the whole
reply (``^```tag...\\n(.*?)^```$`` with DOTALL) says the same, but for every
opening line without a closing line after it the lazy body scans to the end of
the text: a reply of 30,000 lines of ```` ```alir ```` took minutes. The scan
below first records, from the end, the next closing line after each line, then
walks the lines once; each line is matched by an anchored pattern once.
"""

from __future__ import annotations

import re

__all__ = ["IR_FENCE_TAGS", "extract_ir"]

IR_FENCE_TAGS = frozenset({"alir", "ir", "solar-ir", "solar", ""})

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL)
_OPEN = re.compile(r"[ \t]*```[ \t]*([A-Za-z0-9_+-]*)")
_CLOSE = re.compile(r"[ \t]*```[ \t]*")
_HEADER = re.compile(r"^[ \t]*solar-ir\b", re.M)


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(tag, body)`` of every fenced block, in order (Note [Linear fence scan]).

    >>> _fenced_blocks("a\\n```alir\\nx\\n```\\n```\\n")
    [('alir', 'x\\n')]
    >>> _fenced_blocks("```py\\n```ir\\nbody\\n```")
    [('py', '```ir\\nbody\\n')]
    """
    lines = text.split("\n")
    n = len(lines)
    next_close: list[int] = [n] * (n + 1)  # n: no closing line at or after i
    for i in range(n - 1, -1, -1):
        next_close[i] = i if _CLOSE.fullmatch(lines[i]) else next_close[i + 1]
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < n - 1:  # an opening line needs the newline that ends it
        opening = _OPEN.match(lines[i])
        close = next_close[i + 1]
        if opening is None or close == n:
            i += 1
            continue
        body = "".join(line + "\n" for line in lines[i + 1 : close])
        blocks.append((opening.group(1).lower(), body))
        i = close + 1
    return blocks


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
    blocks = [(tag, body) for tag, body in _fenced_blocks(text) if tag in IR_FENCE_TAGS]
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
