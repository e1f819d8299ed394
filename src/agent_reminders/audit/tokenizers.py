"""Token counting for the audit: ``tiktoken`` when it and its encoding files can be had, else a
documented fallback of one token per 4 bytes of UTF-8."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass

from .._core.errors import ConfigError

__all__ = ["DEFAULT_ENCODING", "FALLBACK", "Tokenizer", "bytes_tokens", "load_tokenizer"]

DEFAULT_ENCODING = "o200k_base"
"""The encoding of GPT-4o and later models; ``--encoding`` picks another."""

FALLBACK = "bytes/4"
"""The name of the fallback tokenizer: a token per 4 bytes of UTF-8, the last one shorter."""


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """Turns canonical JSON into token ids.

    Attributes:
        name: The encoding used (``"o200k_base"``…), or :data:`FALLBACK`.
        encode: Text to token ids (special-token text counts as ordinary text).
        note: Why the fallback is used instead of the encoding asked for; ``None`` when the
            encoding asked for is the one used.
    """

    name: str
    encode: Callable[[str], list[int]]
    note: str | None = None


def bytes_tokens(text: str) -> list[int]:
    """The fallback's tokens: the UTF-8 bytes in 4-byte chunks, each chunk one id.

    Canonical JSON never holds a raw NUL byte (JSON escapes it), so padding the last chunk with
    NULs keeps different texts apart.

    Example:
        >>> len(bytes_tokens("abcdefghi"))
        3
    """
    data = text.encode("utf-8")
    data += b"\0" * (-len(data) % 4)
    return array("I", data).tolist()


def load_tokenizer(encoding: str = DEFAULT_ENCODING) -> Tokenizer:
    """The tokenizer for ``encoding``, or the bytes/4 fallback with a note saying why.

    ``encoding`` is a ``tiktoken`` encoding name (``o200k_base``, ``cl100k_base``…) or
    :data:`FALLBACK` to ask for the fallback. tiktoken fetches its files on first use (or reads
    them from ``TIKTOKEN_CACHE_DIR``); when it is not installed or the files cannot be had,
    the fallback is used and :attr:`Tokenizer.note` says so.

    Raises:
        ConfigError: ``RMD-104`` when tiktoken is installed and knows no such encoding.

    Example:
        >>> tokenizer = load_tokenizer("bytes/4")
        >>> tokenizer.name, len(tokenizer.encode('{"content":"hi"}'))
        ('bytes/4', 4)
    """
    if encoding == FALLBACK:
        return Tokenizer(name=FALLBACK, encode=bytes_tokens)
    try:
        import tiktoken
    except ImportError:
        note = (
            f"tiktoken is not installed, so {encoding} cannot be used "
            '(pip install "agent-reminders[audit]")'
        )
        return Tokenizer(name=FALLBACK, encode=bytes_tokens, note=note)
    known = tiktoken.list_encoding_names()
    if encoding not in known:
        raise ConfigError(
            f"--encoding {encoding!r} is not a tiktoken encoding; known: "
            f"{', '.join(sorted(known))}, or {FALLBACK}"
        )
    try:
        found = tiktoken.get_encoding(encoding)
    except (OSError, ValueError) as exc:  # no network, no TIKTOKEN_CACHE_DIR, a damaged file
        reason = " ".join(str(exc).split())
        reason = reason if len(reason) <= 80 else reason[:79] + "…"
        note = (
            f"tiktoken could not load {encoding} ({type(exc).__name__}: {reason}); set "
            "TIKTOKEN_CACHE_DIR to a folder holding its files, or allow the download"
        )
        return Tokenizer(name=FALLBACK, encode=bytes_tokens, note=note)
    return Tokenizer(name=encoding, encode=found.encode_ordinary)
