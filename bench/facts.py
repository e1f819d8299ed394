"""Recall latency of the fact store at 10,000 and 100,000 facts.

Facts are synthetic but shaped like real ones: a kind, a claim of 8-16 words drawn from a
5,000-word vocabulary by Zipf's law (weight 1/rank), one evidence item. Each query has 2-5
words from the same distribution, so most hold a common word and some rare ones.
Prints median and p99 per size; writes its section of bench/results.md.

Run: make bench  (or: python bench/facts.py [--queries N] [--sizes 10000,100000])
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _results import RESULTS, machine, write_section
from agent_reminders.facts import FactStore

KINDS = ("decision", "constraint", "convention", "requirement", "risk")
TARGET_MS = 10.0


def vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def pick(rng: random.Random, words: list[str]) -> str:
    # Zipf's law as in natural text: the word of rank r has weight 1/r (the top word is
    # about 11% of all words, like "the" in English).
    return rng.choices(words, cum_weights=_cumulative(len(words)))[0]


_CUMULATIVE: dict[int, list[float]] = {}


def _cumulative(size: int) -> list[float]:
    if size not in _CUMULATIVE:
        total, out = 0.0, []
        for rank in range(1, size + 1):
            total += 1 / rank
            out.append(total)
        _CUMULATIVE[size] = out
    return _CUMULATIVE[size]


def fill(store: FactStore, count: int, rng: random.Random, words: list[str]) -> None:
    rows = []
    for i in range(count):
        claim = " ".join(pick(rng, words) for _ in range(rng.randint(8, 16)))
        rows.append(
            {
                "kind": rng.choice(KINDS),
                "claim": claim,
                "confidence": round(rng.random(), 2),
                "evidence": [{"kind": "file", "ref": f"src/module_{i % 997}.py"}],
                "tags": [rng.choice(KINDS)],
            }
        )
    store.store_facts(rows)


def measure(size: int, queries: int, seed: int = 7) -> tuple[float, float, float]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory() as tmp:
        store = FactStore(Path(tmp) / "facts.db")
        started = time.perf_counter()
        fill(store, size, rng, words)
        load_s = time.perf_counter() - started
        samples = []
        for _ in range(queries):
            query = " ".join(pick(rng, words) for _ in range(rng.randint(2, 5)))
            start = time.perf_counter_ns()
            store.recall(query, limit=5, min_confidence=0.5)
            samples.append((time.perf_counter_ns() - start) / 1e6)
        store.close()
    ordered = sorted(samples)
    return statistics.median(samples), ordered[int(len(ordered) * 0.99)], load_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [(size, *measure(size, args.queries)) for size in sizes]
    table = "\n".join(
        [
            "| facts | recall median ms | recall p99 ms | load s |",
            "|---:|---:|---:|---:|",
            *[f"| {n:,} | {m:.2f} | {p:.2f} | {load:.1f} |" for n, m, p, load in rows],
        ]
    )
    print(table)
    largest = rows[-1]
    print(f"median at {largest[0]:,} facts: {largest[1]:.2f} ms (target <= {TARGET_MS} ms)")
    write_section(
        "Fact recall (`bench/facts.py`)",
        f"`FactStore.recall(query, limit=5, min_confidence=0.5)` over {args.queries} queries of "
        "2-5 words (Zipf-skewed vocabulary of 5,000 words), SQLite FTS5 `bm25()`.\n\n"
        f"Machine: {machine()}.\n\n{table}",
        args.output,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
