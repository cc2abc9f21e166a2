"""Deterministic text mutations of IR programs, for the fuzz tests."""

from __future__ import annotations

import random
import re

__all__ = ["KEYWORDS", "mutate", "tokens"]

_TOKEN = re.compile(
    r"\s+|#[^\n]*|[A-Za-z_][A-Za-z0-9_]*=?|\d+\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?"
    r"|\.\.|//|[+*]=|<=|>=|==|!=|solar-ir|."
)

KEYWORDS = (
    "solar-ir",
    "program",
    "size",
    "input",
    "param",
    "output",
    "temp",
    "local",
    "kernel",
    "for",
    "seq",
    "in",
    "step",
    "if",
    "and",
    "or",
    "not",
    "inf",
    "nan",
    "true",
    "false",
    "f32",
    "bool",
    "i64",
    "max=",
    "min=",
    "+=",
    "*=",
    "..",
    "//",
    "%",
    "select",
    "exp",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "=",
    "<",
    "-",
    "0",
    "-1",
    "1.5",
    "1e308",
)
_CHARS = "()[]{},.:=+-*/%<>!#$@;\"'\\\t\n\x00éλ∑"
_NUMBERS = ("0", "1", "2", "-1", "7", "1000000000000000000000", "1.5", "0.0", "1e308", "1e999")
_OPERATORS = ("+", "-", "*", "/", "//", "%", "<", "<=", "==", "!=", "and", "or", "..", "=")


def tokens(text: str) -> list[str]:
    """Split ``text`` into tokens and whitespace/comment runs (concatenation is ``text``)."""
    return _TOKEN.findall(text)


def _names(toks: list[str]) -> list[str]:
    return sorted({t for t in toks if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t)})


def _mutate_once(toks: list[str], rng: random.Random) -> list[str]:
    solid = [k for k, t in enumerate(toks) if not t.isspace() and not t.startswith("#")]
    if not solid:
        return [*toks, rng.choice(KEYWORDS)]
    k = rng.choice(solid)
    op = rng.randrange(8)
    out = list(toks)
    if op == 0:  # delete a token
        del out[k]
    elif op == 1:  # duplicate a token
        out.insert(k, toks[k] + " ")
    elif op == 2:  # swap two tokens
        j = rng.choice(solid)
        out[k], out[j] = out[j], out[k]
    elif op == 3:  # insert a keyword or punctuation
        out.insert(k, f" {rng.choice(KEYWORDS)} ")
    elif op == 4:  # insert a random character
        out.insert(k, rng.choice(_CHARS))
    elif op == 5:  # rename every occurrence of one name to another
        names = _names(toks)
        if len(names) >= 2:
            a, b = rng.sample(names, 2)
            out = [b if t == a else t for t in out]
    elif op == 6:  # replace a number
        nums = [j for j in solid if toks[j][0].isdigit()]
        if nums:
            out[rng.choice(nums)] = rng.choice(_NUMBERS)
    else:  # replace an operator
        ops = [j for j in solid if toks[j] in _OPERATORS]
        if ops:
            out[rng.choice(ops)] = rng.choice(_OPERATORS)
    return out


def mutate(text: str, seed: int | str) -> str:
    """One deterministic variant of ``text``: 1-3 token mutations, sometimes a truncation."""
    rng = random.Random(seed)
    toks = tokens(text)
    for _ in range(rng.randint(1, 3)):
        toks = _mutate_once(toks, rng)
    out = "".join(toks)
    if rng.random() < 0.15:
        out = out[: rng.randrange(len(out) + 1)]
    return out
