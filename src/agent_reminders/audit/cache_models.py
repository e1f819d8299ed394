"""The four prompt-cache models of the audit (docs/audit.md): how many prompt tokens of each request
a provider could have read from its cache, given every earlier request.

``exact``
    The longest common token prefix with any earlier request (of the same model, when the
    bodies name one: a provider's cache belongs to one model).
``openai``
    That, rounded down to 128-token steps; nothing below 1,024 tokens.
``anthropic``
    Cache entries are written at a request's breakpoints (its ``cache_control`` blocks, else
    its last block) when the prefix up to there holds at least 1,024 tokens; a request reads
    the longest entry found at one of its breakpoints or up to 20 blocks before one.
``vllm``
    The exact prefix rounded down to 16-token blocks.

Speed: each distinct element (tools, system, message) is tokenized once, memoized by the hash
of its canonical JSON; the longest matching earlier request is found through hashes of the
element boundaries, and tokens are compared inside one element only.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..integrations.anthropic import LOOKBACK_BLOCKS
from .readers import Piece, PromptSequence, block_values, canonical_json
from .tokenizers import Tokenizer

__all__ = [
    "ANTHROPIC_MIN_TOKENS",
    "CacheFigures",
    "CacheModel",
    "CacheSimulator",
    "DIRECTIVE_MARKERS",
    "MODELS",
    "OPENAI_MIN_TOKENS",
    "OPENAI_STEP",
    "VLLM_BLOCK",
    "common_prefix",
]

CacheModel = Literal["exact", "openai", "anthropic", "vllm"]
MODELS: tuple[CacheModel, ...] = ("exact", "openai", "anthropic", "vllm")
OPENAI_MIN_TOKENS = 1024
OPENAI_STEP = 128
ANTHROPIC_MIN_TOKENS = 1024
VLLM_BLOCK = 16
DIRECTIVE_MARKERS: tuple[str, ...] = ("<context-directives", "<system-reminder>")
"""A message whose text holds one of these carries an envelope (``directive_tokens``)."""

_ROOT = b""


def _hash(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token lists.

    Galloping, then bisecting, over slice comparisons: the cost follows the common length,
    not the lists' length.

    Example:
        >>> common_prefix([1, 2, 3, 4], [1, 2, 9])
        2
    """
    n = min(len(a), len(b))
    lo, step = 0, 64
    while True:  # a[:lo] == b[:lo]
        hi = min(n, lo + step)
        if a[lo:hi] != b[lo:hi]:
            break
        if hi == n:
            return n
        lo, step = hi, step * 2
    while hi - lo > 1:  # the first difference lies in [lo, hi)
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True, slots=True)
class CacheFigures:
    """One request under the cache models.

    Attributes:
        prompt_tokens: The request's prompt sequence, in tokens.
        cached: Per model, the tokens that could have been read from the cache.
        anthropic_written: The tokens written to Anthropic's cache (billed at the write
            price): from the cached prefix to the last breakpoint of at least 1,024 tokens.
        directive_tokens: Tokens of the messages that carry an envelope.
    """

    prompt_tokens: int
    cached: Mapping[CacheModel, int]
    anthropic_written: int
    directive_tokens: int


class _Info:
    """One distinct element, tokenized: its tokens, and per block the token offset of the
    block's end and the hash of the element's text up to there."""

    __slots__ = ("block_ends", "block_keys", "directive", "tokens")

    def __init__(self, piece: Piece, encode: Callable[[str], list[int]]) -> None:
        text = piece.text
        self.tokens = encode(text)
        self.directive = any(marker in text for marker in DIRECTIVE_MARKERS)
        total = len(self.tokens)
        offsets = _block_offsets(piece.value, text)
        ends: list[int] = []
        keys: list[bytes] = []
        running, start = 0, 0
        hasher = hashlib.blake2b(digest_size=16)
        for offset in offsets:
            segment = text[start:offset]
            running += len(encode(segment))
            hasher.update(segment.encode("utf-8", "surrogatepass"))
            ends.append(min(running, total))
            keys.append(hasher.copy().digest())
            start = offset
        self.block_ends = (*ends, total)
        self.block_keys = (*keys, piece.digest)


def _dump_len(value: Any) -> int:
    return len(canonical_json(value))


def _block_offsets(value: Any, text: str) -> list[int]:
    """Where each block but the last ends in ``text`` (the canonical JSON of ``value``)."""
    blocks = block_values(value)
    if len(blocks) < 2:
        return []
    if isinstance(value, list):
        start = 0  # the list itself: "[b0,b1,…]"
    else:  # a message: the content list sits after the keys that sort before "content"
        head = sum(_dump_len(k) + 1 + _dump_len(v) + 1 for k, v in value.items() if k < "content")
        start = 1 + head + len('"content":')
        if text[start : start + 1] != "[":  # not where canonical JSON puts it: one block
            return []
    offsets, position = [], start + 1
    for block in blocks[:-1]:
        position += _dump_len(block)
        offsets.append(position)
        position += 1  # the comma
    return offsets


class CacheSimulator:
    """Feeds successive requests through the four cache models.

    Example:
        >>> from agent_reminders.audit.readers import RequestReader
        >>> from agent_reminders.audit.tokenizers import load_tokenizer
        >>> sim, reader = CacheSimulator(load_tokenizer("bytes/4")), RequestReader()
        >>> first = [{"role": "user", "content": "x" * 5000}]
        >>> a = sim.add(reader.read({"messages": first}, "line 1"))
        >>> b = sim.add(reader.read({"messages": first + first}, "line 2"))
        >>> a.cached["exact"], b.cached["exact"] == a.prompt_tokens
        (0, True)
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._encode = tokenizer.encode
        self._infos: dict[bytes, _Info] = {}
        self._known: set[bytes] = set()  # the hash of every element prefix of every request
        self._next: dict[bytes, set[bytes]] = {}  # prefix hash -> elements seen right after it
        self._entries: set[bytes] = set()  # Anthropic cache entries (block prefix hashes)

    def _info(self, piece: Piece) -> _Info:
        info = self._infos.get(piece.digest)
        if info is None:
            info = self._infos[piece.digest] = _Info(piece, self._encode)
        return info

    def add(self, sequence: PromptSequence) -> CacheFigures:
        """The figures of the next request (and remember it for the ones after)."""
        pieces = sequence.pieces
        infos = [self._info(p) for p in pieces]
        # a cache belongs to one model: the model is the root of every prefix
        root = _ROOT if sequence.model is None else _hash(sequence.model.encode("utf-8"))
        chain, starts = [root], [0]
        for piece, info in zip(pieces, infos, strict=True):
            chain.append(_hash(chain[-1] + piece.digest))
            starts.append(starts[-1] + len(info.tokens))
        exact = self._exact(pieces, infos, chain, starts)
        read, written = self._anthropic(sequence, infos, chain, starts, exact)
        for i, piece in enumerate(pieces):
            self._known.add(chain[i + 1])
            self._next.setdefault(chain[i], set()).add(piece.digest)
        messages = infos[len(pieces) - len(sequence.messages) :]
        cached: dict[CacheModel, int] = {
            "exact": exact,
            "openai": 0 if exact < OPENAI_MIN_TOKENS else exact // OPENAI_STEP * OPENAI_STEP,
            "anthropic": read,
            "vllm": exact // VLLM_BLOCK * VLLM_BLOCK,
        }
        return CacheFigures(
            prompt_tokens=starts[-1],
            cached=cached,
            anthropic_written=written,
            directive_tokens=sum(len(i.tokens) for i in messages if i.directive),
        )

    def _exact(
        self, pieces: Sequence[Piece], infos: list[_Info], chain: list[bytes], starts: list[int]
    ) -> int:
        k = 0
        while k < len(pieces) and chain[k + 1] in self._known:
            k += 1
        if k == len(pieces):
            return starts[k]
        mine, best = infos[k].tokens, 0
        for digest in self._next.get(chain[k], ()):
            best = max(best, common_prefix(mine, self._infos[digest].tokens))
        return starts[k] + best

    def _anthropic(
        self,
        sequence: PromptSequence,
        infos: list[_Info],
        chain: list[bytes],
        starts: list[int],
        exact: int,
    ) -> tuple[int, int]:
        """``(read, written)``: the tokens read from Anthropic's cache and written to it."""
        firsts = [0]  # the global index of each element's first block
        for info in infos:
            firsts.append(firsts[-1] + len(info.block_ends))
        blocks = firsts[-1]
        if not blocks:
            return 0, 0
        points = {firsts[k] + j for k, piece in enumerate(sequence.pieces) for j in piece.marked}
        if sequence.auto_cache or not points:
            points.add(blocks - 1)

        def where(block: int) -> tuple[int, int]:
            k = bisect_right(firsts, block) - 1
            return k, block - firsts[k]

        def end(block: int) -> int:
            k, j = where(block)
            return starts[k] + infos[k].block_ends[j]

        def key(block: int) -> bytes:
            k, j = where(block)
            return _hash(chain[k] + infos[k].block_keys[j])

        read = 0
        for point in points:
            for block in range(point, max(-1, point - LOOKBACK_BLOCKS - 1), -1):
                if key(block) in self._entries:
                    read = max(read, end(block))
                    break
        # Block ends inside an element are counted per block; never claim more than the
        # exact common prefix (tokenizing a block alone can differ by a token at its edge).
        read = min(read, exact)
        writes = [p for p in points if end(p) >= ANTHROPIC_MIN_TOKENS]
        written = max(0, max(end(p) for p in writes) - read) if writes else 0
        self._entries.update(key(p) for p in writes)
        return read, written
