"""Protobuf text format (Caffe ``.prototxt`` files), parsed without a schema.

Pure Python: no protobuf package, no caffe.proto compilation.

    parse_prototxt(text) -> dict     the text-format tree; every field maps to a LIST
    read_prototxt(path) -> dict

``clgrad.io.caffe_net.describe_net`` turns the tree into normalized layers.
"""

from __future__ import annotations

import os
import re

__all__ = ["parse_prototxt", "read_prototxt", "MAX_DEPTH"]

MAX_DEPTH = 64
"""Deepest message nesting parse_prototxt accepts (Caffe nets use 4)."""


_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+) | (?P<newline>\n) | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\[^\n])*"|'(?:[^'\\\n]|\\[^\n])*')
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[fF]?)
        (?![\w.]))
  | (?P<ident>-?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}<>\[\]:,;])
""", re.VERBOSE)
_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v",
            "\\": b"\\", "'": b"'", '"': b'"', "?": b"?"}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{4})"
                     r"|U([0-9a-fA-F]{8})|(.))")


def parse_prototxt(text: str) -> dict:
    """Parse protobuf text format (as in Caffe ``.prototxt`` files) into nested dicts.

    Input:   text, str. Messages ``name { ... }`` (or ``name: { ... }``, ``name < ... >``),
             scalars ``name: value``, lists ``name: [v1, v2]``, ``#`` comments, optional
             ``,``/``;`` separators. Values: quoted strings with C escapes (adjacent strings
             concatenate), ints (decimal, 0x hex, 0-prefixed octal), floats (``1e-4``, ``.5``,
             ``2f``, ``inf``, ``nan``), ``true``/``false``, bare identifiers (enums).
    Returns: dict mapping each field name to a LIST of values in file order, whether the
             field is repeated or not (there is no schema). Messages are dicts; quoted strings
             and enum identifiers are both ``str``; ``true``/``false`` are ``bool``; numbers are
             ``int`` when written as integers, else ``float``.
    Raises:  ValueError ``prototxt: line L, column C: expected X, got Y`` on any syntax error,
             and on nesting deeper than MAX_DEPTH. Extension fields ``[ext.name]`` and lists of
             messages are not supported (Caffe uses neither).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_prototxt: expected str, got {type(text).__name__}")
    tokens = _tokenize(text)
    root: dict = {}
    stack = [(root, None, None)]  # (message, closing punctuation, token that opened it)
    tok = next(tokens)
    while True:
        message, closer, opener = stack[-1]
        if tok[0] == "eof":
            if closer is not None:
                raise _syntax(tok, f"'{closer}' closing the message opened at line {opener[2]}, "
                              f"column {opener[3]}")
            return root
        if tok[0] == "punct" and tok[1] == closer:
            stack.pop()
            tok = _skip_separator(next(tokens), tokens)
            continue
        if tok[0] != "ident" or tok[1].startswith("-"):
            raise _syntax(tok, "a field name")
        name = tok[1]
        tok = next(tokens)
        colon = tok[:2] == ("punct", ":")
        if colon:
            tok = next(tokens)
        if tok[:2] in (("punct", "{"), ("punct", "<")):
            if len(stack) > MAX_DEPTH:
                raise _syntax(tok, f"at most {MAX_DEPTH} nested messages", got="a deeper one")
            child: dict = {}
            message.setdefault(name, []).append(child)
            stack.append((child, "}" if tok[1] == "{" else ">", tok))
            tok = next(tokens)
            continue
        if not colon:
            raise _syntax(tok, f"':' or '{{' after field name '{name}'")
        values = message.setdefault(name, [])
        if tok[:2] == ("punct", "["):
            tok = next(tokens)
            while tok[:2] != ("punct", "]"):
                value, tok = _scalar(tok, tokens)
                values.append(value)
                if tok[:2] == ("punct", ","):
                    tok = next(tokens)
                elif tok[:2] != ("punct", "]"):
                    raise _syntax(tok, "',' or ']' in a list")
            tok = next(tokens)
        else:
            value, tok = _scalar(tok, tokens)
            values.append(value)
        tok = _skip_separator(tok, tokens)


def read_prototxt(path: str | os.PathLike) -> dict:
    """Read a ``.prototxt`` file (UTF-8) and parse it with ``parse_prototxt``."""
    with open(path, encoding="utf-8") as f:
        return parse_prototxt(f.read())


def _tokenize(text):
    """Yield (kind, text, line, column) tokens, then one ("eof", "", line, column)."""
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        col = pos - line_start + 1
        if m is None:
            ch = text[pos]
            what = ("an unterminated string" if ch in "\"'" else
                    "a malformed number" if ch.isdigit() or ch in "-." else repr(ch))
            raise ValueError(f"prototxt: line {line}, column {col}: expected a token, got {what}")
        kind = m.lastgroup
        if kind == "newline":
            line, line_start = line + 1, m.end()
        elif kind not in ("space", "comment"):
            yield kind, m.group(), line, col
        pos = m.end()
    yield "eof", "", line, pos - line_start + 1


def _scalar(tok, tokens):
    """Convert one value (several tokens for concatenated strings); return (value, next token)."""
    kind, text = tok[0], tok[1]
    if kind == "string":
        first, raw = tok, bytearray()
        while tok[0] == "string":
            raw += _unescape(tok)
            tok = next(tokens)
        try:
            return raw.decode("utf-8"), tok
        except UnicodeDecodeError:
            raise _syntax(first, "a UTF-8 string", got="invalid UTF-8 bytes") from None
    if kind == "number":
        body = text.lstrip("-")
        sign = -1 if text.startswith("-") else 1
        if body[:2] in ("0x", "0X"):
            value = sign * int(body, 16)
        elif re.fullmatch(r"0[0-7]+", body):
            value = sign * int(body, 8)
        elif body.isdigit():
            value = sign * int(body)
        else:
            value = sign * float(body.rstrip("fF"))
        return value, next(tokens)
    if kind == "ident":
        low = text.lower()
        if text in ("true", "True"):
            return True, next(tokens)
        if text in ("false", "False"):
            return False, next(tokens)
        if low.lstrip("-") in ("inf", "infinity", "nan"):
            return float(low), next(tokens)
        if text.startswith("-"):
            raise _syntax(tok, "a number after '-'")
        return text, next(tokens)
    raise _syntax(tok, "a value")


def _unescape(tok) -> bytes:
    body, out, pos = tok[1][1:-1], bytearray(), 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode("utf-8")
        octal, hexa, u4, u8, char = m.groups()
        if octal or hexa:
            code = int(octal, 8) if octal else int(hexa, 16)
            if code > 255:
                raise _syntax(tok, "an octal escape up to \\377", got=f"'\\{octal}'")
            out.append(code)
        elif u4 or u8:
            try:
                out += chr(int(u4 or u8, 16)).encode("utf-8")
            except (ValueError, UnicodeEncodeError):
                raise _syntax(tok, "a valid unicode escape", got=f"'{m.group()}'") from None
        elif char in _ESCAPES:
            out += _ESCAPES[char]
        else:
            raise _syntax(tok, "a known escape sequence", got=f"'\\{char}'")
        pos = m.end()
    out += body[pos:].encode("utf-8")
    return bytes(out)


def _skip_separator(tok, tokens):
    return next(tokens) if tok[:2] in (("punct", ","), ("punct", ";")) else tok


def _syntax(tok, expected, got=None):
    if got is None:
        got = "end of input" if tok[0] == "eof" else f"'{tok[1]}'"
    return ValueError(f"prototxt: line {tok[2]}, column {tok[3]}: expected {expected}, got {got}")
