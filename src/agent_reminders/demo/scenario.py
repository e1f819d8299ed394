"""The demo's scenario, all of it in one place: the repository, the two tasks, the project
facts, the host's pushes and the scripted model's answers.

The story: a coding agent fixes a CSV reader that drops the last row (task 1), the host
compacts the conversation, and the agent adds quoted fields with a reviewer sub-agent (task 2).
Every reminder of the timeline comes from the library's own producers reacting to this script.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BASE_TOOLS",
    "Beat",
    "COMPACT_KEEP_LAST",
    "CONTEXT_WINDOW",
    "DEFAULT_TURNS",
    "FACTS",
    "FILES",
    "FILLERS",
    "HOST_PUSHES",
    "HostPush",
    "IDLE_MS",
    "MAX_TOOL_OUTPUT",
    "MAX_TURNS",
    "MIN_TURNS",
    "NEW_TOOLS",
    "QUOTED_TEST",
    "RECAP",
    "REVIEWER_BEATS",
    "REVIEW_TASK",
    "SESSION_ID",
    "SYSTEM",
    "TASKS",
    "WORKSPACE",
    "task_beats",
]

SESSION_ID = "demo"
# the nonce on every envelope of the demo session (fixed: the demo is the same bytes each run)
DEMO_NONCE = "demo-5f3a9c2e"
SYSTEM = (
    "You are a careful coding agent working in a Python repository on behalf of the person "
    "you talk to. You have tools to read files, to edit them by exact replacement and to run "
    "commands (pytest, rg, git diff) in a sandbox.\n\n"
    "How to work:\n"
    "- Read before you edit: open the file, find the exact text, then replace it.\n"
    "- Keep changes small and in the style of the surrounding code; do not reformat.\n"
    "- Public functions keep their signatures unless the person asks otherwise.\n"
    "- Run the test suite after every change to code, and before you report back.\n"
    "- When a command fails, read its output and fix the cause; do not retry blindly.\n"
    "- Never write outside the workspace roots, and never to a read-only root.\n"
    "- When you are done, say what you changed, why and how you checked it, in a few "
    "sentences."
)
WORKSPACE: Mapping[str, Any] = {
    "primary": "/srv/app",
    "roots": [{"path": "/srv/vendor", "mount_mode": "ro"}],
}
CONTEXT_WINDOW = 6_400
"""The demo model's context window in tokens: small, so that pressure builds in a few turns."""
MAX_TOOL_OUTPUT = 3_000
"""Tool output longer than this many characters is cut (and marked truncated) by the loop."""
COMPACT_KEEP_LAST = 0
DEFAULT_TURNS = 30
MAX_TURNS = 40
IDLE_MS = 15 * 60 * 1000
"""How long the person is away between the two tasks (read from the fixed clock)."""

TASKS = (
    "tests/test_csv.py::test_last_row_without_newline fails: read_rows() in src/app/csv.py "
    "drops the last row when the text does not end with a newline. Fix it and make the test "
    "suite pass.",
    "Next: quoted fields. read_rows('a,\"b,c\"') must give [['a', 'b,c']]; I added "
    "test_quoted_comma to tests/test_csv.py. When the suite passes, have a reviewer sub-agent "
    "check the change before you report back.",
)
REVIEW_TASK = (
    "Review the change to read_rows() in src/app/csv.py (see `git diff`): is it correct, and "
    "which edge cases are still open? Answer in three sentences at most."
)
RECAP = (
    "Task 1 is done: read_rows() now iterates over text.splitlines(), so a last row without "
    "a trailing newline is kept; the suite passes (3 passed); docs/usage.md and CHANGELOG.md "
    "say so. The person asked that read_rows(text) keeps its signature."
)

FACTS: tuple[Mapping[str, Any], ...] = (
    {
        "kind": "decision",
        "claim": "read_rows() is public API imported by the invoicing and reporting services; "
        "its signature stays as it is.",
        "confidence": 0.92,
        "evidence": [{"kind": "adr", "ref": "docs/adr/012-csv-api.md"}],
    },
    {
        "kind": "convention",
        "claim": "Run the test suite with `pytest -q` from the repository root.",
        "confidence": 0.95,
        "evidence": [{"kind": "file", "ref": "CONTRIBUTING.md"}],
    },
    {
        "kind": "constraint",
        "claim": "No new runtime dependencies: the standard library's csv module is fine.",
        "confidence": 0.81,
        "evidence": [{"kind": "issue", "ref": "#88"}],
    },
    {
        "kind": "preference",
        "claim": "Maybe rewrite the CSV helpers in Rust one day.",
        "confidence": 0.3,  # below min_confidence: never recalled
        "evidence": [{"kind": "chat", "ref": "2025-11-03"}],
    },
)


@dataclass(frozen=True, slots=True)
class HostPush:
    """A reminder the host (an editor, CI) pushes into the session's queue.

    It is pushed when the loop passes ``seam`` of ``turn`` and delivered at the next seam that
    serves its ``mode`` (the seam table, ``loop.SEAMS``).
    """

    turn: int
    seam: str
    mode: Literal["interrupt_immediate", "finish_step", "audit_only"]
    who: str
    reminder: Mapping[str, Any]


HOST_PUSHES: tuple[HostPush, ...] = (
    HostPush(
        turn=2,
        seam="pre_tool_dispatch",
        mode="finish_step",
        who="editor",
        reminder={
            "body": "The person has unsaved edits in tests/test_csv.py: do not modify that file.",
            "ttl_turns": 4,
            "authority": "corrective",
            "dedupe_key": "editor:unsaved",
            "tags": ["editor"],
        },
    ),
    HostPush(
        turn=3,
        seam="iteration_start",
        mode="interrupt_immediate",
        who="person",
        reminder={
            "body": "Keep the signature of read_rows(text) exactly as it is: two services "
            "import it.",
            "authority": "contract",
            "preserve_on_compact": True,
            "propagate": "all",
            "tags": ["person"],
        },
    ),
    HostPush(
        turn=5,
        seam="post_tool_dispatch",
        mode="audit_only",
        who="ci",
        reminder={
            "body": "CI pipeline #4182 started for branch fix/csv-last-row.",
            "tags": ["ci"],
        },
    ),
)

CSV_PY = '''"""Small CSV helpers for the reporting and the invoicing services.

The billing system drops its monthly exports into a shared folder; these helpers read them.
The files are small (a few thousand rows at most) and always UTF-8, written by one exporter
whose quirks we know: a byte order mark at the start, no quoting of plain fields, and a last
line that may or may not end with a newline.

Every function here is pure: it takes text and returns Python values and never touches the
file system, so the callers decide where the text comes from (a file, an HTTP body, a test
fixture). Errors are CsvError, a ValueError, naming what was wrong.

Public API (imported by the reporting and the invoicing services; see docs/adr/012):

- read_rows(text): the rows of the text, each a list of fields
- header(text): the field names of the first row
- column(text, name): the values of one named column
- records(text): each row after the header as a dict keyed by the header
- write_rows(rows): the text of rows, the inverse of read_rows for plain fields

Conventions:

- Fields are separated by commas; spaces around them are kept.
- An empty text has no rows; a text with only a header has no records.
- Lines end with a newline; the last line may or may not end with one.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CsvError", "column", "header", "read_rows", "records", "write_rows"]

DELIMITER = ","
BOM = "\\ufeff"


class CsvError(ValueError):
    """A text that is not the export we expect (the message says why)."""


def _strip_bom(text: str) -> str:
    """Drop the UTF-8 byte order mark that the exporter writes."""
    return text[len(BOM) :] if text.startswith(BOM) else text


def _check(text: object) -> str:
    if not isinstance(text, str):
        raise CsvError(f"expected the export as text, got {type(text).__name__}")
    return text


def header(text: str) -> list[str]:
    """The field names of the first row (``[]`` for an empty text)."""
    rows = read_rows(text)
    return rows[0] if rows else []


def column(text: str, name: str) -> list[str]:
    """The values of the column called ``name``, without the header row."""
    rows = read_rows(text)
    if not rows:
        return []
    if name not in rows[0]:
        raise CsvError(f"no column {name!r}; the columns are {', '.join(rows[0])}")
    index = rows[0].index(name)
    return [row[index] for row in rows[1:]]


def records(text: str) -> list[dict[str, str]]:
    """Each row after the header as a dict keyed by the header's field names."""
    rows = read_rows(text)
    if not rows:
        return []
    names = rows[0]
    out = []
    for number, row in enumerate(rows[1:], 2):
        if len(row) != len(names):
            raise CsvError(f"line {number} has {len(row)} fields, the header {len(names)}")
        out.append(dict(zip(names, row)))
    return out


def write_rows(rows: Iterable[Iterable[str]]) -> str:
    """The text of ``rows``, one line each, every line ending with a newline."""
    return "".join(DELIMITER.join(row) + "\\n" for row in rows)


def read_rows(text: str) -> list[list[str]]:
    """Split CSV text into rows of fields."""
    text = _strip_bom(_check(text))
    rows = []
    for line in text.split("\\n")[:-1]:
        rows.append(line.split(","))
    return rows
'''

TEST_CSV_PY = """import pytest

from app.csv import CsvError, column, header, read_rows, records, write_rows


def test_header():
    assert header("customer,amount\\nacme,12.50\\n") == ["customer", "amount"]


def test_column():
    assert column("a,b\\n1,2\\n3,4\\n", "b") == ["2", "4"]


def test_missing_column():
    with pytest.raises(CsvError, match="no column 'c'"):
        column("a,b\\n1,2\\n", "c")


def test_records():
    assert records("a,b\\n1,2\\n") == [{"a": "1", "b": "2"}]


def test_byte_order_mark():
    assert header("\\ufeffa,b\\n") == ["a", "b"]


def test_write_rows_round_trip():
    rows = [["a", "b"], ["1", "2"]]
    assert read_rows(write_rows(rows)) == rows


def test_last_row_without_newline():
    assert read_rows("a,b\\n1,2") == [["a", "b"], ["1", "2"]]
"""

QUOTED_TEST = """

def test_quoted_comma():
    assert read_rows('a,"b,c"') == [["a", "b,c"]]
"""

REPORT_PY = '''"""The monthly revenue report, built from the billing export.

The export has one row per invoice line: customer, month, item, amount (a decimal with two
places, a dot as separator). The report sums the amounts per customer and prints them largest
first, with a total line; `--by-month` splits each customer's sum by month.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from app.csv import column, read_rows, records

__all__ = ["by_customer", "by_month", "render", "total"]

_WIDTH = 12


def total(text: str) -> Decimal:
    """The sum of the amount column."""
    return sum((Decimal(v) for v in column(text, "amount")), Decimal(0))


def by_customer(text: str) -> dict[str, Decimal]:
    """Revenue per customer id, in the order customers first appear."""
    rows = read_rows(text)
    if not rows:
        return {}
    customer, amount = rows[0].index("customer"), rows[0].index("amount")
    out: dict[str, Decimal] = {}
    for row in rows[1:]:
        out[row[customer]] = out.get(row[customer], Decimal(0)) + Decimal(row[amount])
    return out


def by_month(text: str) -> dict[str, dict[str, Decimal]]:
    """Revenue per customer and month: ``{customer: {month: amount}}``."""
    out: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for record in records(text):
        months = out[record["customer"]]
        months[record["month"]] = months.get(record["month"], Decimal(0)) + Decimal(
            record["amount"]
        )
    return dict(out)


def _line(label: str, value: Decimal) -> str:
    return f"{label:>{_WIDTH}}  {value:>{_WIDTH}.2f}"


def render(text: str, *, months: bool = False) -> str:
    """The report as plain text: one customer per line, largest first, then the total."""
    lines = [f"{'customer':>{_WIDTH}}  {'amount':>{_WIDTH}}"]
    ranked = sorted(by_customer(text).items(), key=lambda item: item[1], reverse=True)
    split = by_month(text) if months else {}
    for customer, value in ranked:
        lines.append(_line(customer, value))
        for month, amount in sorted(split.get(customer, {}).items()):
            lines.append(_line(f"  {month}", amount))
    lines.append(_line("total", total(text)))
    return "\\n".join(lines)
'''

INVOICE_PY = '''"""Invoices from the billing export: one per customer and month.

Each invoice lists its lines in export order and knows its total. `invoices()` keeps the
order in which customers first appear in the export, which is the order the accounting team
prints them in; `for_customer()` picks the invoices of one customer.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from app.csv import CsvError, read_rows

__all__ = ["Invoice", "for_customer", "invoices"]

_FIELDS = ("customer", "month", "item", "amount")


@dataclass(frozen=True)
class Invoice:
    """One customer's invoice for one month."""

    customer: str
    month: str
    lines: tuple[tuple[str, Decimal], ...]

    @property
    def total(self) -> Decimal:
        return sum((amount for _, amount in self.lines), Decimal(0))

    def render(self) -> str:
        body = [f"{item:<30} {amount:>10.2f}" for item, amount in self.lines]
        total = f"{'total':<30} {self.total:>10.2f}"
        return "\\n".join([f"{self.customer} {self.month}", *body, total])


def invoices(text: str) -> list[Invoice]:
    """Group the export's rows into invoices, in the order customers first appear."""
    rows = read_rows(text)
    if not rows:
        return []
    head = rows[0]
    missing = [f for f in _FIELDS if f not in head]
    if missing:
        raise CsvError(f"the export lacks the field(s) {', '.join(missing)}")
    grouped: dict[tuple[str, str], list[tuple[str, Decimal]]] = {}
    for row in rows[1:]:
        record = dict(zip(head, row))
        key = (record["customer"], record["month"])
        grouped.setdefault(key, []).append((record["item"], Decimal(record["amount"])))
    return [Invoice(c, m, tuple(lines)) for (c, m), lines in grouped.items()]


def for_customer(text: str, customer: str) -> list[Invoice]:
    """The invoices of ``customer``, oldest month first."""
    mine = [i for i in invoices(text) if i.customer == customer]
    return sorted(mine, key=lambda invoice: invoice.month)
'''

USAGE_MD = """# Using the CSV helpers

The helpers in `app.csv` read the billing system's monthly export. They never open files:
read the export yourself (it is UTF-8) and pass the text.

## Rows, columns, records

`read_rows(text)` splits an export into rows of fields:

    >>> read_rows("customer,amount\\nacme,12.50\\n")
    [['customer', 'amount'], ['acme', '12.50']]

`header(text)` gives the first row, `column(text, name)` the values of one column (a
`CsvError` names the columns when `name` is not one of them), and `records(text)` each row
after the header as a dict:

    >>> records("customer,amount\\nacme,12.50\\n")
    [{'customer': 'acme', 'amount': '12.50'}]

## Reading a file

    >>> from pathlib import Path
    >>> rows = read_rows(Path("export.csv").read_text(encoding="utf-8"))
    >>> header_row, data = rows[0], rows[1:]

## Writing

`write_rows(rows)` is the inverse of `read_rows` for plain fields: one line per row, each
ending with a newline.

## Limits

- Fields are split at every comma.
- A byte order mark at the start is dropped.
"""

CHANGELOG_MD = """# Changelog

## Unreleased

## 1.4.0 (2025-10-02)

- `column()` raises `CsvError` naming the columns when the one asked for is missing.
- `records()` raises `CsvError` naming the line when a row has too many or too few fields.
- Exports with a byte order mark are read correctly.

## 1.3.0 (2025-07-15)

- `header()` returns `[]` for an empty export instead of raising `IndexError`.
- New: `write_rows()`, the inverse of `read_rows()` for plain fields.

## 1.2.0 (2025-05-20)

- New: `records()`, each row as a dict keyed by the header.
- `read_rows()` accepts only text; bytes raise `CsvError` instead of failing later.
"""

ADR_MD = """# ADR 012: the CSV helpers' API

Status: accepted (2025-06-12). Deciders: billing platform team.

## Context

The invoicing and the reporting services both read the billing export through
`app.csv.read_rows(text)`. Each service pins this library in its own release cycle, so a
change of signature breaks one of them until both are released again. We broke invoicing
twice in 2024 that way (incidents INC-311 and INC-340).

## Decision

- `read_rows(text)`, `header(text)` and `column(text, name)` keep their signatures. New
  behaviour comes as new functions or as fixes that keep the call shape.
- The helpers stay pure: they take text, never paths or file objects.
- No third-party parser: the standard library is enough for our exports.
- Errors are `CsvError` (a `ValueError`) with a message that names the problem.

## Alternatives

- A `read_rows(text, *, options)` signature with flags: rejected, every flag is a second API
  to keep working, and the services would each pass different ones.
- pandas: rejected, far too heavy for exports of a few thousand rows, and its parsing
  differs from ours on the exporter's quirks.

## Consequences

Fixes land in `read_rows()` itself and must keep the old call working. Behaviour changes are
listed in CHANGELOG.md under "Unreleased" with the function they touch.
"""

VENDOR_READER_PY = '''"""Vendored csvlib 0.9 (read-only: upgrade with vendor/update.sh)."""


def split_line(line):
    return line.split(",")
'''

FILES: Mapping[str, str] = {
    "src/app/csv.py": CSV_PY,
    "tests/test_csv.py": TEST_CSV_PY,
    "src/app/report.py": REPORT_PY,
    "src/app/invoice.py": INVOICE_PY,
    "docs/usage.md": USAGE_MD,
    "docs/adr/012-csv-api.md": ADR_MD,
    "CHANGELOG.md": CHANGELOG_MD,
    "/srv/vendor/csvlib/reader.py": VENDOR_READER_PY,
}
"""The repository at the start (paths relative to the workspace root, or absolute)."""

BASE_TOOLS = ("read_file", "edit_file", "bash")
NEW_TOOLS = ("delegate",)
"""Tools the host adds for task 2 (announced by the ``tools`` generator)."""


@dataclass(frozen=True, slots=True)
class Beat:
    """One scripted model answer: some text and at most one tool call."""

    say: str
    tool: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)


_SIGNATURE_OLD = "def read_rows(text: str) -> list[list[str]]:"
_LOOP_OLD = 'for line in text.split("\\n")[:-1]:'
_LOOP_NEW = "for line in text.splitlines():"

TASK1: tuple[Beat, ...] = (
    Beat("I will read the module first.", "read_file", {"path": "src/app/csv.py"}),
    Beat(
        "The output was cut before read_rows(); reading the rest.",
        "read_file",
        {"path": "src/app/csv.py", "offset": MAX_TOOL_OUTPUT},
    ),
    Beat("Running the tests to see the failure.", "bash", {"command": "pytest -q"}),
    Beat(
        "I will add a keep_last flag to read_rows().",
        "edit_file",
        {
            "path": "src/app/csv.py",
            "old": _SIGNATURE_OLD,
            "new": "def read_rows(text: str, *, keep_last: bool = True) -> list[list[str]]:",
        },
    ),
    Beat(
        "Understood: the signature stays. The loop drops the last line; splitlines() keeps it.",
        "edit_file",
        {"path": "src/app/csv.py", "old": _LOOP_OLD, "new": _LOOP_NEW},
    ),
    Beat("Running the tests again.", "bash", {"command": "pytest -q"}),
    Beat("Checking the callers of read_rows().", "bash", {"command": "rg -n read_rows"}),
    Beat("Reading the report module.", "read_file", {"path": "src/app/report.py"}),
    Beat(
        "Reading the ADR that the project facts cite.",
        "read_file",
        {"path": "docs/adr/012-csv-api.md"},
    ),
    Beat("Reading the usage docs.", "read_file", {"path": "docs/usage.md"}),
    Beat(
        "Documenting the last-row rule.",
        "edit_file",
        {
            "path": "docs/usage.md",
            "old": "- A byte order mark at the start is dropped.",
            "new": "- A byte order mark at the start is dropped.\n"
            "- The last row is read whether or not the text ends with a newline.",
        },
    ),
    Beat("Reading the changelog.", "read_file", {"path": "CHANGELOG.md"}),
    Beat(
        "Adding a changelog entry.",
        "edit_file",
        {
            "path": "CHANGELOG.md",
            "old": "## Unreleased\n",
            "new": "## Unreleased\n\n- `read_rows()` keeps the last row when the text does "
            "not end with a newline.\n",
        },
    ),
    Beat(
        "Fixed: read_rows() iterated over text.split('\\n')[:-1], which drops the last line "
        "when there is no trailing newline; it now uses text.splitlines(). The signature is "
        "unchanged, the suite passes (3 passed), and docs/usage.md and CHANGELOG.md say so."
    ),
)

TASK2_HEAD: tuple[Beat, ...] = (
    Beat("Running the tests first.", "bash", {"command": "pytest -q"}),
    Beat("Reading the new test.", "read_file", {"path": "tests/test_csv.py"}),
    Beat(
        "The standard library's csv module handles quoting; importing it.",
        "edit_file",
        {
            "path": "src/app/csv.py",
            "old": "from collections.abc import Iterable\n",
            "new": "import csv as _csv\nfrom collections.abc import Iterable\n",
        },
    ),
    Beat(
        "Splitting each line with csv.reader instead of str.split.",
        "edit_file",
        {
            "path": "src/app/csv.py",
            "old": 'rows.append(line.split(","))',
            "new": "rows.append(next(_csv.reader([line])))",
        },
    ),
)

FILLERS: tuple[Beat, ...] = (
    Beat("Checking for other comma splits.", "bash", {"command": "rg -n 'split(\",\")' src"}),
    Beat("Checking the new import.", "bash", {"command": "rg -n _csv src/app/csv.py"}),
    Beat("Checking the callers once more.", "bash", {"command": "rg -n read_rows src/app"}),
    Beat("Checking what the docs say about quotes.", "bash", {"command": "rg -n quote docs"}),
    Beat("Reading the changelog.", "read_file", {"path": "CHANGELOG.md"}),
    Beat("Checking the tests that use quotes.", "bash", {"command": "rg -n '\"' tests"}),
    Beat("Checking the module's public names.", "bash", {"command": "rg -n __all__ src"}),
    Beat("Checking for a csv import elsewhere.", "bash", {"command": "rg -n 'import csv' src"}),
)
"""Work that fills task 2 up to ``--turns`` (taken in order, then again)."""

TASK2_TAIL: tuple[Beat, ...] = (
    Beat("Running the tests.", "bash", {"command": "pytest -q"}),
    Beat(
        "The vendored csvlib splits lines the same way; patching it too.",
        "edit_file",
        {
            "path": "/srv/vendor/csvlib/reader.py",
            "old": 'return line.split(",")',
            "new": "return next(csv.reader([line]))",
        },
    ),
    Beat("Asking a reviewer to check the change.", "delegate", {"task": REVIEW_TASK}),
    Beat(
        "Done: read_rows() now splits each line with the standard library's csv.reader, so "
        "quoted fields keep their commas; the suite passes (4 passed). The vendored csvlib is "
        "read-only and was left alone. The reviewer agrees and notes that quoted newlines are "
        "still not supported."
    ),
)

REVIEWER_BEATS: tuple[Beat, ...] = (
    Beat("Reading the diff.", "bash", {"command": "git diff"}),
    Beat(
        "The change is correct: splitlines() keeps the last row and csv.reader honours quotes, "
        "without a new dependency and with the signature unchanged. Still open: a quoted field "
        "that spans lines is split at its newline, since lines are split before parsing."
    ),
)

MIN_TURNS = len(TASK1) + len(TASK2_HEAD) + len(TASK2_TAIL)


def task_beats(turns: int) -> tuple[tuple[Beat, ...], tuple[Beat, ...]]:
    """The beats of task 1 and task 2 for a demo of ``turns`` parent requests.

    Task 1 is fixed; task 2 takes ``turns - MIN_TURNS`` filler beats between its head and its
    tail.

    Raises:
        ValueError: ``turns`` outside ``MIN_TURNS..MAX_TURNS``.
    """
    if type(turns) is not int or not MIN_TURNS <= turns <= MAX_TURNS:
        raise ValueError(
            f"the demo runs {MIN_TURNS} to {MAX_TURNS} turns (its story needs {MIN_TURNS}); "
            f"got {turns!r}"
        )
    extra = turns - MIN_TURNS
    fillers = tuple(FILLERS[i % len(FILLERS)] for i in range(extra))
    return TASK1, TASK2_HEAD + fillers + TASK2_TAIL
