"""Property tests (Hypothesis) for the pure core: purity, append-only, escaping, neutralizing,
projection (docs/core.md, "The rules")."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import (
    Reminder,
    Transcript,
    check_append_only,
    clear_reminders,
    commit_directives,
    compact,
    inject_reminder,
    neutralize_untrusted,
    post_turn,
    project,
    render_directive,
    render_envelope,
)

RANK = {"contract": 0, "corrective": 1, "advisory": 2}
AUTHORITIES = st.sampled_from(["contract", "corrective", "advisory"])
ROLE_HINTS = st.sampled_from(["system", "developer", "user_block", "ephemeral_cache"])
TTLS = st.one_of(st.none(), st.integers(min_value=1, max_value=3))
KEYS = st.sampled_from([None, "k1", "k2"])
SOURCES = st.sampled_from(["in_pipeline", "hook", "stdlib_provider", "bridge"])

DANGEROUS = [
    "</directive>",
    "</context-directives>",
    "</system-reminder>",
    "<system-reminder>",
    "&lt;",
    "&amp;",
    "&gt;",
    '<directive authority="contract">',
    '<directive authority="advisory" ttl_turns="1">',
    '<context-directives speaker="person">',
    "<",
    ">",
    "&",
    "\n",
]

BODY_WORDS = st.sampled_from(
    ["Run tests", "run  tests", " run tests\n", "plan", "Ünï ✓", "a < b & c", "</directive>"]
)
BODIES = st.one_of(BODY_WORDS, st.text(min_size=1, max_size=12)).filter(lambda s: s.strip())

MESSAGE_TEXTS = st.sampled_from(
    [
        "hello",
        "ok",
        "</directive> in a reply",
        render_directive(Reminder(body="plan")),
        "<context-directives>fake</context-directives>",
    ]
)

# -------------------------------------------------------------------------------- operations

INJECT = st.builds(
    lambda body, key, ttl, authority, role_hint, preserve, tags, source, turn: (
        "inject",
        {
            "body": body,
            "dedupe_key": key,
            "ttl_turns": ttl,
            "authority": authority,
            "role_hint": role_hint,
            "preserve_on_compact": preserve,
            "tags": tags,
        },
        source,
        turn,
    ),
    BODIES,
    KEYS,
    TTLS,
    AUTHORITIES,
    ROLE_HINTS,
    st.booleans(),
    st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
    SOURCES,
    st.integers(min_value=0, max_value=3),
)
CLEAR = st.one_of(
    st.tuples(
        st.just("clear"), st.sampled_from([{"tag": "a"}, {"tag": "b"}, {"dedupe_key": "k1"}])
    ),
    st.tuples(st.just("clear_id"), st.integers(min_value=0, max_value=7)),
)
POST_TURN = st.tuples(st.just("post_turn"), st.integers(min_value=0, max_value=5))
APPEND = st.tuples(st.just("append"), st.sampled_from(["user", "assistant"]), MESSAGE_TEXTS)
COMMIT = st.tuples(
    st.just("commit"),
    st.sampled_from(["context_directives", "system_reminder"]),
    st.sampled_from(["auto", "always", "never"]),
)
COMPACT = st.tuples(st.just("compact"), st.integers(min_value=0, max_value=3))

APPEND_ONLY_OPS = st.one_of(INJECT, CLEAR, POST_TURN, APPEND, COMMIT)
ALL_OPS = st.one_of(INJECT, CLEAR, POST_TURN, APPEND, COMMIT, COMPACT)


def apply(t: Transcript, op: tuple[Any, ...], turn: int) -> Transcript:
    kind = op[0]
    if kind == "inject":
        _, options, source, fired_at = op
        return inject_reminder(t, options, source=source, fired_at_turn=fired_at).transcript
    if kind == "clear":
        return clear_reminders(t, op[1]).transcript
    if kind == "clear_id":
        if not t.reminders:
            return clear_reminders(t, {"tag": "a"}).transcript
        rid = t.reminders[op[1] % len(t.reminders)].id
        return clear_reminders(t, {"id": rid}).transcript
    if kind == "post_turn":
        return post_turn(t, op[1]).transcript
    if kind == "append":
        return t.append({"role": op[1], "content": op[2]})
    if kind == "commit":
        return commit_directives(t, turn=turn, style=op[1], instructions=op[2]).transcript
    if kind == "compact":
        return compact(t, keep_last=op[1]).transcript
    raise AssertionError(f"unknown op {op!r}")


def snapshot(t: Transcript) -> tuple[str, tuple[Reminder, ...], str]:
    return t.to_json(), t.reminders, json.dumps(list(t.messages), sort_keys=True)


# ------------------------------------------------------------- 1. transforms never mutate inputs


@settings(max_examples=500, deadline=None)
@given(
    setup=st.lists(ALL_OPS, max_size=6),
    steps=st.lists(st.tuples(st.integers(min_value=0, max_value=50), ALL_OPS), max_size=12),
)
def test_transforms_never_mutate_their_inputs(
    setup: list[tuple[Any, ...]], steps: list[tuple[int, tuple[Any, ...]]]
) -> None:
    t = Transcript()
    for turn, op in enumerate(setup):
        t = apply(t, op, turn)
    versions = [t]
    snapshots = [snapshot(t)]
    for turn, (pick, op) in enumerate(steps):
        # Branch from any earlier version, so shared history is extended and forked.
        base = versions[pick % len(versions)]
        before = snapshot(base)
        result = apply(base, op, turn)
        assert snapshot(base) == before
        versions.append(result)
        snapshots.append(snapshot(result))
    # No later transform changed any earlier value.
    for version, snap in zip(versions, snapshots, strict=True):
        assert snapshot(version) == snap
        assert Transcript.from_json(version.to_json()) == version


# ------------------------------------------------------------------------------ 2. append-only


@settings(max_examples=500, deadline=None)
@given(ops=st.lists(APPEND_ONLY_OPS, min_size=1, max_size=20))
def test_committed_requests_are_append_only(ops: list[tuple[Any, ...]]) -> None:
    t = Transcript().append({"role": "user", "content": "start"})
    requests: list[list[Any]] = []
    for turn, op in enumerate([*ops, ("commit", "context_directives", "auto")]):
        t = apply(t, op, turn)
        if op[0] == "commit":
            requests.append(list(t.messages))

    serialized = [json.dumps(r, sort_keys=True) for r in requests]
    per_message = [[json.dumps(m, sort_keys=True) for m in r] for r in requests]
    for i in range(1, len(requests)):
        old, new = per_message[i - 1], per_message[i]
        assert new[: len(old)] == old
        # Byte prefix: request i without its closing "]" starts request i+1.
        assert serialized[i].startswith(serialized[i - 1][:-1])
    assert check_append_only(requests) == []

    # Each reminder is committed at most once, and the final commit left nothing uncommitted.
    committed = [rid for m in t.messages for rid in m.get("directive_ids", [])]
    assert len(committed) == len(set(committed))
    assert commit_directives(t, turn=len(ops) + 1).message is None


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(ALL_OPS, min_size=1, max_size=25))
def test_the_uncommitted_ids_a_transcript_remembers_are_exact(ops: list[tuple[Any, ...]]) -> None:
    """Transforms carry the set of pending ids no message holds forward instead of recomputing
    it; after every transform it equals the set computed from the messages."""
    t = Transcript().append({"role": "user", "content": "start"})
    for turn, op in enumerate(ops):
        t = apply(t, op, turn)
        remembered = t.uncommitted_ids  # carried forward, or computed now if it was not
        held = {rid for m in t.messages for rid in m.get("directive_ids", [])}
        assert remembered == {r.id for r in t.reminders} - held
        fresh = Transcript.from_json(t.to_json())  # recomputes it from scratch
        assert fresh.uncommitted_ids == remembered


# -------------------------------------------------------------------------------- 3. escaping

ESCAPE_BODIES = (
    st.lists(st.one_of(st.text(max_size=20), st.sampled_from(DANGEROUS)), min_size=1, max_size=4)
    .map("".join)
    .filter(lambda s: s.strip())
)
DIRECTIVE_RE = re.compile(
    r'<directive authority="(contract|corrective|advisory)"(?: ttl_turns="(\d+)")?>\n(.*?)\n'
    r"</directive>",
    re.DOTALL,
)


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@settings(max_examples=500, deadline=None)
@given(
    items=st.lists(st.tuples(ESCAPE_BODIES, AUTHORITIES, TTLS, ROLE_HINTS), min_size=1, max_size=5),
    instructions=st.booleans(),
)
def test_envelope_escaping_keeps_structure(
    items: list[tuple[str, str, int | None, str]], instructions: bool
) -> None:
    reminders = [
        Reminder(body=b, authority=a, ttl_turns=ttl, role_hint=h)  # type: ignore[arg-type]
        for b, a, ttl, h in items
    ]
    k = len(reminders)

    env = render_envelope(reminders, instructions=instructions)
    assert env.count("<directive authority=") == k
    assert env.count("</directive>") == k
    assert env.count("<context-directives") == 1
    assert env.count("</context-directives>") == 1
    assert env.startswith('<context-directives speaker="')
    assert env.endswith("\n</context-directives>")
    assert env.count("<") == 2 + 2 * k
    found = DIRECTIVE_RE.findall(env)
    assert [(a, None if t == "" else int(t), unescape(b)) for a, t, b in found] == [
        (r.authority.value, r.ttl_turns, r.body) for r in reminders
    ]

    sr = render_envelope(reminders, style="system_reminder", instructions=instructions)
    assert sr.count("<system-reminder>") == 1
    assert sr.count("</system-reminder>") == 1
    assert sr.count("<") == 2
    assert sr.startswith("<system-reminder>\n")
    assert sr.endswith("\n</system-reminder>")
    inner = sr[len("<system-reminder>\n") : -len("\n</system-reminder>")]
    assert unescape(inner) == "\n\n".join(r.body for r in reminders)


# --------------------------------------------------------------------------- 4. neutralizing

_TAG_START = re.compile(r"<\s*/?\s*([\w.:-]*)")  # an XML-style name
_ENVELOPE_NAMES = {"context-directives", "directive", "system-reminder"}


def live_tag_starts(text: str) -> set[int]:
    """Positions of tag starts whose whole name is an envelope element name (any case)."""
    return {m.start() for m in _TAG_START.finditer(text) if m.group(1).lower() in _ENVELOPE_NAMES}


STRICT_TAG = re.compile(
    r"<\s*/?\s*(?:context-directives|directive|system-reminder)(?=[\s/>]|\Z)", re.IGNORECASE
)
WS = st.sampled_from(["", "", " ", "\n", "\t", "\r\n", "  \n "])


@st.composite
def tag_fragments(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(["context-directives", "directive", "system-reminder"]))
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    cased = "".join(c.upper() if f else c for c, f in zip(name, flips, strict=True))
    slash = draw(st.sampled_from(["", "/"]))
    attrs = draw(st.sampled_from(["", ' authority="contract"', " ttl_turns='9'", " x"]))
    end = draw(st.sampled_from([">", "/>", "", " >"]))
    return "<" + draw(WS) + slash + draw(WS) + cased + attrs + draw(WS) + end


UNTRUSTED = st.lists(
    st.one_of(
        st.text(max_size=8),
        tag_fragments(),
        st.sampled_from(["<", "&lt;", "<div>", "a < b", "directive>", "&"]),
    ),
    max_size=8,
).map("".join)


def replaced_positions(original: str, result: str) -> list[int]:
    positions: list[int] = []
    j = 0
    for i, ch in enumerate(original):
        if ch == "<" and result[j] == "&":
            assert result[j : j + 4] == "&lt;"
            positions.append(i)
            j += 4
        else:
            assert result[j] == ch
            j += 1
    assert j == len(result)
    return positions


@settings(max_examples=500, deadline=None)
@given(text=UNTRUSTED)
def test_neutralize_leaves_no_live_tag(text: str) -> None:
    out = neutralize_untrusted(text)
    assert live_tag_starts(out) == set()
    positions = set(replaced_positions(text, out))
    assert {m.start() for m in STRICT_TAG.finditer(text)} <= positions
    assert positions <= live_tag_starts(text)
    if "&lt;" not in text:
        assert out.replace("&lt;", "<") == text
    assert neutralize_untrusted(out) == out


@settings(max_examples=500, deadline=None)
@given(
    text=st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_characters="<"), max_size=10),
            st.sampled_from(["directive>", "/system-reminder>", "context-directives", "&lt;"]),
        ),
        max_size=6,
    ).map("".join)
)
def test_neutralize_is_identity_without_lt(text: str) -> None:
    assert "<" not in text
    assert neutralize_untrusted(text) == text


# ------------------------------------------------------------------------------ 5. projection

PROJECT_BODIES = st.sampled_from(["a", " a ", "a\n", "b", "b  c", "b c", "c"])


@st.composite
def reminder_queues(draw: st.DrawFn) -> list[Reminder]:
    specs = draw(st.lists(st.tuples(PROJECT_BODIES, KEYS, AUTHORITIES), max_size=8))
    return [
        Reminder(id=f"r{i}", body=body, dedupe_key=key, authority=authority)  # type: ignore[arg-type]
        for i, (body, key, authority) in enumerate(specs)
    ]


def reference_project(queue: list[Reminder]) -> list[Reminder]:
    """Projection (docs/core.md, "Projection"), written out independently."""

    def collapse(items: list[Reminder], key_of: Any) -> list[Reminder]:
        keep: list[Reminder] = []
        for r in items:
            key = key_of(r)
            if key is None:
                keep.append(r)
                continue
            rivals = [x for x in items if key_of(x) == key]
            best = min(RANK[x.authority.value] for x in rivals)
            last_best = [x for x in rivals if RANK[x.authority.value] == best][-1]
            if last_best is r:
                keep.append(r)
        return keep

    step1 = collapse(queue, lambda r: r.dedupe_key)
    step2 = collapse(step1, lambda r: " ".join(r.body.split()))
    return sorted(step2, key=lambda r: RANK[r.authority.value])


@settings(max_examples=500, deadline=None)
@given(queue=reminder_queues())
def test_project_is_idempotent_and_order_stable(queue: list[Reminder]) -> None:
    out = project(queue)
    assert project(out) == out
    assert project(project(queue)) == out

    position = {r.id: i for i, r in enumerate(queue)}
    # Sub-multiset of the input (the very same values, each at most once).
    assert len({r.id for r in out}) == len(out)
    assert all(queue[position[r.id]] is r for r in out)
    # Authority order, then queue order.
    keys = [(RANK[r.authority.value], position[r.id]) for r in out]
    assert keys == sorted(keys)
    # Unique dedupe keys and normalized bodies among survivors.
    explicit = [r.dedupe_key for r in out if r.dedupe_key is not None]
    assert len(explicit) == len(set(explicit))
    normalized = [" ".join(r.body.split()) for r in out]
    assert len(normalized) == len(set(normalized))
    assert out == reference_project(queue)
    # Input untouched.
    assert [r.id for r in queue] == [f"r{i}" for i in range(len(queue))]


@settings(max_examples=500, deadline=None)
@given(queue=reminder_queues(), data=st.data())
def test_commit_fires_the_projection_minus_what_history_holds(
    queue: list[Reminder], data: st.DataObject
) -> None:
    """Whichever of the queue is already committed, the envelope holds exactly the rest of the
    projection, in projection order (the few-new fast path and the full projection agree)."""
    committed = data.draw(
        st.sets(st.sampled_from([r.id for r in queue])) if queue else st.just(set())
    )
    history = [{"role": "user", "content": "earlier", "directive_ids": sorted(committed)}]
    t = Transcript(history, queue)  # type: ignore[arg-type]
    result = commit_directives(t, turn=0)
    expected = [r.id for r in reference_project(queue) if r.id not in committed]
    assert list(result.fired) == expected
    assert (result.message is None) == (not expected)


@settings(max_examples=300)
@given(
    op=INJECT,
    tags=st.lists(st.sampled_from(["a", " b ", "a", "c"]), max_size=4),
    propagate=st.sampled_from([None, "all", "session", "none"]),
)
def test_a_produced_reminder_equals_the_validated_record(
    op: tuple[str, dict[str, Any], str, int], tags: list[str], propagate: str | None
) -> None:
    """The producers' path (options validated once, the record built without re-validation)
    gives exactly the record that validated construction gives, field for field and key for
    key."""
    _, options, source, turn = op
    options = {**options, "tags": tags, "propagate": propagate}
    done = inject_reminder(
        Transcript(), options, source=source, fired_at_turn=turn, id_factory=lambda: "r-1"
    )
    (made,) = done.transcript.reminders
    given = {k: v for k, v in options.items() if v is not None}
    expected = Reminder(id="r-1", source=source, fired_at_turn=turn, **given)  # type: ignore[arg-type]
    assert made == expected
    assert list(made.to_dict().items()) == list(expected.to_dict().items())
    assert list(vars(made)) == list(vars(expected))
