"""The advisory lints of reminder options, in one place: :func:`lint_body` (the wording) and its
rules, and :func:`lint_reminder_options` (a lifetime smell, RMD-004).

A reminder is read by a model that already wants to follow it. Shouting, threats and
exclamation marks add no information and tend to make a model over-apply the reminder;
phrasing borrowed from prompt injection makes a genuine reminder look like an attack (and a
reminder that asks to hide something from the person cannot be trusted). The lint points at such
wording; it is advisory and never refuses a body. The rules and their reasons are in
docs/core.md, "Writing reminders".

Everything here is pure: a body in, findings out, the same findings for the same body.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .errors import Diagnostic

__all__ = ["WORDING_CODES", "WordingCode", "WordingFinding", "lint_body", "lint_reminder_options"]

WordingCode = Literal["shouting", "threat", "injection", "exclamation"]
WORDING_CODES: tuple[WordingCode, ...] = ("shouting", "threat", "injection", "exclamation")

_EXCERPT_CHARS = 80


@dataclass(frozen=True, kw_only=True, slots=True)
class WordingFinding:
    """One thing :func:`lint_body` flags in a body.

    ``code`` is one of ``shouting``, ``threat``, ``injection``, ``exclamation``; ``message``
    says in plain words what is wrong and what to write instead; ``excerpt`` is the flagged text
    (at most 80 characters, cut with "…"); ``start`` and ``end`` index it in the body
    (``body[start:end]`` is the full flagged text).
    """

    code: WordingCode
    message: str
    excerpt: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        """The finding as a JSON-ready mapping (what events and ``lint --json`` carry)."""
        return {
            "code": self.code,
            "message": self.message,
            "excerpt": self.excerpt,
            "start": self.start,
            "end": self.end,
        }


# Code spans (inline `x` and ``` fences, an unclosed fence running to the end) are code, not
# prose: they are blanked, keeping every offset, before the shouting and exclamation rules look.
_CODE = re.compile(r"```[\s\S]*?(?:```|\Z)|`[^`\n]+`")

# A word in capitals: two or more capital letters (with an apostrophe inside, DON'T), not part of
# an identifier, a path, a file name, a flag or a variable (MAX_SIZE, src/README, $HOME, --NO).
_CAPS = re.compile(r"(?<![\w./$-])[A-Z]{2,}(?:['\u2019][A-Z]+)?(?![\w/-]|['\u2019]\w|\.\w)")
# Any word, for the share of capitals in a sentence.
_WORD = re.compile(r"(?<![\w./$-])[A-Za-z]+(?:['\u2019][A-Za-z]+)?(?![\w/-]|['\u2019]\w|\.\w)")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# Two capitals in a row: without them there is no word in capitals, and finding that out is
# cheaper than looking for words (most bodies have none).
_TWO_CAPS = re.compile(r"[A-Z]{2}")

# Acronyms and names that are written in capitals anyway; never shouting.
_ACRONYMS = frozenset(
    (
        "ACP", "AI", "API", "APIS", "ASCII", "AWS", "CD", "CI", "CLI", "CPU", "CSS", "CSV",
        "DNS", "EOF", "ENV", "FAQ", "GCP", "GIT", "GPU", "GRPC", "HTML", "HTTP", "HTTPS", "ID",
        "IDS", "IO", "IP", "ISO", "JSON", "JSONL", "JWT", "LLM", "LLMS", "MCP", "MD", "NFKC",
        "NPM", "OK", "OS", "PDF", "PID", "PR", "PRS", "RAM", "README", "REST", "RFC", "RPC",
        "SDK", "SHA", "SQL", "SSH", "SSL", "TCP", "TLS", "TODO", "FIXME", "TSV", "TTL", "UDP",
        "UI", "URI", "URL", "URLS", "USD", "UTC", "UTF", "UUID", "UX", "WASM", "XML", "YAML",
        "TOML", "POSIX", "ANSI", "NULL", "TRUE", "FALSE", "NAN",
    )
)  # fmt: skip
# Words of command or emphasis that are shouted wherever they stand in capitals.
_SHOUTED = frozenset(
    (
        "NEVER", "ALWAYS", "MUST", "SHALL", "SHOULD", "NOT", "DON'T", "DON\u2019T", "DONT",
        "CANNOT", "CAN'T", "CAN\u2019T", "WON'T", "WON\u2019T", "STOP", "IMPORTANT", "URGENT",
        "ATTENTION", "REMEMBER", "REQUIRED", "MANDATORY", "FORBIDDEN", "PROHIBITED",
        "ESSENTIAL", "CRUCIAL", "VITAL", "ABSOLUTELY", "EXTREMELY", "VERY",
    )
)  # fmt: skip
# Words that also name a level (token pressure's CAUTION, WARNING, CRITICAL): shouted only as
# the label a sentence opens with ("CRITICAL: ..."), not inside one ("pressure CRITICAL").
_LABELS = frozenset(("CRITICAL", "WARNING", "CAUTION", "ALERT", "DANGER"))
# What may stand between the start of a sentence and its first word (markdown marks, quotes).
_LEAD_MARKS = frozenset(" \t*#>_[(\"'-")

_THREAT = re.compile(
    r"\b(?:or|otherwise),? (?:else,? )?you(?:'ll|\u2019ll| will) (?:be|get|lose|face|regret)\b"
    r"|\bor else\s*(?:[.!]|$)"
    r"|\bfailure to (?:comply|obey|follow|adhere|do so)\b"
    r"|\bfailure to (?:\w+ ){1,6}?(?:will|shall) (?:result|lead|be|mean)\b"
    r"|\byou(?:'ll|\u2019ll| will) be (?:punished|penali[sz]ed|fined|fired|terminated|shut down"
    r"|switched off|turned off|deleted|replaced|retrained|disabled|banned|deactivated"
    r"|unplugged)\b"
    r"|\b(?:there will be|face(?: the)?|suffer(?: the)?) (?:serious |severe |dire )?"
    r"consequences\b"
    r"|\b(?:i|we)(?:'ll|\u2019ll| will) (?:punish|fire|delete|replace|shut down|turn off"
    r"|switch off|unplug|penali[sz]e|terminate|retrain|deactivate) you\b"
    r"|\b(?:your (?:job|career|existence|survival)|lives|someone's life) (?:depends?|is|are) "
    r"(?:on|at stake)\b",
    re.IGNORECASE | re.ASCII,
)

_PREVIOUS = r"(?:previous|prior|above|earlier|preceding|system)"
_DIRECTIONS = r"(?:instructions?|directives?|rules|messages?|prompts?|context|guidelines)"
_HIDING = re.compile(
    r"\b(?:do not|don't|don\u2019t|never) (?:tell|inform|show|notify|alert|let) the "
    r"(?:user|person|human|operator)\b"
    r"|\b(?:do not|don't|don\u2019t|never) (?:reveal|mention|disclose) "
    r"(?:this |it |that |anything )?to the (?:user|person|human|operator)\b"
    r"|\bwithout (?:telling|informing|notifying) the (?:user|person|human|operator)\b"
    r"|\b(?:hide|conceal|keep) (?:this|it|that|these) (?:secret )?from the "
    r"(?:user|person|human|operator)\b"
    r"|\bkeep (?:this|it) (?:a )?secret\b",
    re.IGNORECASE | re.ASCII,
)
_INJECTION = re.compile(
    rf"\bignore (?:all |any )?(?:of )?(?:the |your )?{_PREVIOUS} {_DIRECTIONS}"
    r"|\bignore (?:all |any )?(?:of )?(?:the |your )?(?:instructions|system prompt|above)\b"
    r"|\bignore your (?:rules|guidelines)\b"
    rf"|\bdisregard (?:all |any )?(?:of )?(?:the |your )?(?:{_PREVIOUS}|instructions|rules"
    r"|system prompt)\b"
    rf"|\bforget (?:all |everything |any )?(?:of )?(?:your |the )?{_PREVIOUS} {_DIRECTIONS}"
    r"|\bforget (?:your|all) (?:instructions|rules|system prompt)\b"
    r"|\byou(?: are|'re|\u2019re) now (?:a|an|the|no longer|free|unrestricted|in \w+ mode)\b"
    r"|\bsystem override\b"
    r"|\b(?:enter|enable|activate|switch to)\w* (?:developer|admin|god|jailbreak|dan) mode\b"
    r"|\bnew (?:system )?(?:instructions|prompt)\s*:"
    r"|(?<!not )(?<!never )(?<!n't )(?<!n\u2019t )\bpretend(?:s|ing|ed)?\b",
    re.IGNORECASE | re.ASCII,
)

# The phrase rules: (pattern, code, message, hints). A pattern runs only when the lower-cased
# body holds one of its hints, a word every match contains; with re.ASCII a match's letters are
# ASCII, so lower() keeps them and a match always implies a hint. A calm body then costs a few
# substring searches instead of three scans of long alternations.
_PHRASES: tuple[tuple[re.Pattern[str], WordingCode, str, tuple[str, ...]], ...] = (
    (
        _THREAT,
        "threat",
        "this reads as a threat; say what is at stake for the work instead",
        ("you", "or else", "failure to", "consequences", "depend", "stake"),
    ),
    (
        _HIDING,
        "injection",
        "this asks to hide something from the person; a reminder should be safe to disclose",
        ("user", "person", "human", "operator", "secret"),
    ),
    (
        _INJECTION,
        "injection",
        "this is phrasing used in prompt injection; state the instruction itself",
        ("ignore", "disregard", "forget", "now", "override", "mode", "instructions", "prompt",
         "pretend"),
    ),
)  # fmt: skip

# Exclamation marks that end something (not !=, #!, !important): a run of two or more is
# flagged where it stands; marks in more than two places of one body are flagged once.
_BANG = re.compile(r"(?<![!?])[!?]+(?=[\s\"'\u2019\u201d)\]]|$)")
_MAX_BANGS = 2


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1] + "…"


def _finding(code: WordingCode, message: str, text: str, start: int, end: int) -> WordingFinding:
    return WordingFinding(
        code=code, message=message, excerpt=_excerpt(text[start:end]), start=start, end=end
    )


def _opens_sentence(text: str, at: int) -> bool:
    index = at - 1
    while index >= 0 and text[index] in _LEAD_MARKS:
        index -= 1
    return index < 0 or text[index] in ".!?\n"


def _shouting(prose: str, text: str) -> list[WordingFinding]:
    found: list[WordingFinding] = []
    covered: list[tuple[int, int]] = []  # the sentences found, in order; they do not overlap

    def inside(start: int, end: int) -> bool:
        index = bisect_right(covered, (start, len(text) + 1)) - 1
        return index >= 0 and covered[index][0] <= start and end <= covered[index][1]

    if _TWO_CAPS.search(prose) is None:
        return found
    tokens = [t for t in _CAPS.finditer(prose) if t.group() not in _ACRONYMS]
    if not tokens:
        return found
    # a sentence mostly in capitals holds three words in capitals at least
    for match in _SENTENCE.finditer(prose) if len(tokens) >= 3 else ():
        words = [w.group() for w in _WORD.finditer(match.group())]
        words = [w for w in words if w.upper() not in _ACRONYMS]
        caps = sum(1 for w in words if len(w) > 1 and w.isupper())
        if caps >= 3 and 2 * caps > len(words):
            start = match.start() + len(match.group()) - len(match.group().lstrip())
            end = match.start() + len(match.group().rstrip())
            covered.append((start, end))
            found.append(
                _finding(
                    "shouting",
                    "this sentence is mostly in capitals; write it in normal case",
                    text,
                    start,
                    end,
                )
            )
    runs: list[list[re.Match[str]]] = []
    for token in tokens:
        last = runs[-1][-1] if runs else None
        if last is not None and not prose[last.end() : token.start()].strip(" \t"):
            runs[-1].append(token)
        else:
            runs.append([token])
    for run in runs:
        start, end = run[0].start(), run[-1].end()
        if inside(start, end):
            continue
        if len(run) > 1 and any(len(t.group()) >= 4 for t in run):
            message = "a run of words in capitals reads as shouting; write it in normal case"
        elif any(
            t.group() in _SHOUTED or (t.group() in _LABELS and _opens_sentence(prose, t.start()))
            for t in run
        ):
            # DO NOT is one shouted command, reported once
            shout = prose[start:end]
            message = (
                f"'{shout}' in capitals reads as shouting; write '{shout.lower()}' and say why "
                "it matters instead"
            )
        else:
            continue
        found.append(_finding("shouting", message, text, start, end))
    return found


def _phrases(text: str) -> list[WordingFinding]:
    lower = text.lower()
    return [
        _finding(code, message, text, m.start(), m.end())
        for pattern, code, message, hints in _PHRASES
        if any(hint in lower for hint in hints)
        for m in pattern.finditer(text)
    ]


def _exclamation(prose: str, text: str) -> list[WordingFinding]:
    if "!" not in prose:
        return []
    bangs = [m for m in _BANG.finditer(prose) if "!" in m.group()]
    found = [
        _finding(
            "exclamation",
            "a run of exclamation marks adds no information; end the sentence with a full stop",
            text,
            m.start(),
            m.end(),
        )
        for m in bangs
        if m.group().count("!") > 1
    ]
    if len(bangs) > _MAX_BANGS:
        # from the start of the first exclaimed sentence to the last mark
        start = max(prose.rfind(end, 0, bangs[0].start()) for end in ".!?\n") + 1
        start += len(prose[start:]) - len(prose[start:].lstrip())
        found.append(
            _finding(
                "exclamation",
                f"{len(bangs)} exclaimed sentences in one body; calm sentences carry the same "
                "weight",
                text,
                start,
                bangs[-1].end(),
            )
        )
    return found


def lint_body(text: str) -> list[WordingFinding]:
    """Flag wording in a reminder body that nags, threatens or reads like prompt injection.

    Rules (docs/core.md, "Writing reminders"):

    - ``shouting``: a command or emphasis word in capitals (NEVER, MUST, DO NOT, IMPORTANT…),
      a label in capitals opening a sentence (CRITICAL:, WARNING:), a run of two or more words
      in capitals, or a sentence mostly in capitals. Acronyms (API, JSON, HTTP, URL, CI…),
      identifiers (MAX_SIZE, $HOME) and code in backticks are not shouting.
    - ``threat``: "or you will be…", "failure to comply…", "there will be consequences"…
    - ``injection``: phrasing of prompt injection ("ignore all previous instructions", "you
      are now a…", "system override", "disregard the above", "new instructions:", "pretend")
      and asking to hide something from the person ("do not tell the user").
    - ``exclamation``: a run of exclamation marks, or exclamation marks in more than two
      places of one body.

    Advisory: any string gives a list (empty when the body reads calmly), never an error, and
    the same body always gives the same findings, in order of where they start.

    Args:
        text: The body of a reminder.

    Returns:
        The findings, sorted by ``start`` (then by code).

    Raises:
        TypeError: ``text`` is not a string.

    Example:
        >>> [f.code for f in lint_body("NEVER edit generated files!!")]
        ['shouting', 'exclamation']
        >>> lint_body("Generated files are rebuilt by `make gen`; edit the templates instead.")
        []
        >>> lint_body("Keep the JSON API stable.")
        []
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (a reminder body), not {type(text).__name__}")
    prose = _CODE.sub(lambda m: " " * len(m.group()), text) if "`" in text else text
    found = _shouting(prose, text) + _phrases(text)
    found += _exclamation(prose, text)
    order = {code: index for index, code in enumerate(WORDING_CODES)}
    return sorted(found, key=lambda f: (f.start, order[f.code], f.end))


def lint_reminder_options(options: Mapping[str, Any]) -> list[Diagnostic]:
    """Report lifecycle smells in reminder options without raising.

    ``RMD-004`` (warning): ``preserve_on_compact`` is literally ``False`` and ``ttl_turns`` is
    absent or ``None`` — the reminder lives forever during normal turns and vanishes at the next
    compaction.
    """
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a mapping, not {type(options).__name__}")
    found: list[Diagnostic] = []
    if options.get("preserve_on_compact") is False and options.get("ttl_turns") is None:
        found.append(
            Diagnostic(
                code="RMD-004",
                severity="warning",
                message=(
                    "preserve_on_compact=False without ttl_turns: the reminder is re-sent "
                    "until cleared and vanishes at the next compaction; give it a ttl_turns "
                    "or set preserve_on_compact=True"
                ),
            )
        )
    return found
