"""The built-in kinds of fact found in text: what each finds and what it leaves alone, each
in time linear in its text."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from baton.context._fact_kinds import SCANNERS, UNITS, scan
from baton.context.ledger import FACT_KINDS, FactKind
from baton.context.ledger_patterns import MAX_FACTS_PER_TEXT, FactPatterns

FOUND: dict[FactKind, list[str]] = {
    "id": [
        "req_011CXa9fKd2mQp7Rz",
        "toolu_01K2ZWeqhFWCEPyYngFb51yB",
        "cus_Nf8xQ2abc",
        "PROJ-4711",
        "INV-2024-0042",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
    ],
    "hash": [
        "9fceb02",
        "e83c5163316f89bfbde7d9ab23ca2e25604af290",
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    ],
    "datetime": [
        "2026-03-14",
        "2026-03-14T09:26:53Z",
        "2026-03-14T09:26:53.123Z",
        "2026-03-14T09:26:53+05:30",
        "2026-03-14 09:26:53",
        "2026/03/14",
        "09:26:53",
        "14:05",
        "9:30 PM",
    ],
    "offset": ["+05:30", "-08:00", "UTC-8", "UTC+05:30", "GMT+1", "America/New_York"],
    "path": [
        "/var/log/app/errors.log",
        "src/billing/invoice_writer.py",
        "./build/out/report.html",
        "~/data/exports/rows.csv",
        "notes.txt",
        "execution_outputs/iteration_1",
    ],
    "url": [
        "https://api.example.com/v1/orders/8841?expand=items",
        "http://localhost:8080/health",
        "s3://bucket/key/part-0001.parquet",
    ],
    "email": ["first.last@example.com", "ops+alerts@corp.example.org"],
    "amount": [
        "12.5 ms",
        "3 GiB",
        "$4.20",
        "€12",
        "15%",
        "200 tokens",
        "1,024 rows",
        "2.5s",
        "40 MB/s",
        "0.37x",
    ],
}
SURROUNDINGS = (
    "saw {} in the log",
    "({})",
    "`{}`",
    '{{"ref": "{}", "ok": false}}',
    "ref={} attempt=2",
    "last value {}.",
    "{}, then nothing",
    '{{"log": "started\\n{}\\n"}}',
    "于{}提交",
)
LEFT_ALONE = [
    "42",  # a bare number is no amount
    "1234567",  # nor a hash: a hash has a letter
    "deadbeef",  # a hex word with no digit
    "and/or",  # two words, not a path
    "TCP/IP",
    "application/json",
    "3/4",
    "5 of them",  # a word that is not a unit
    "1920x1080",  # a unit glued to more digits
    "0x1F",
    "25:99",  # no such time
    "2026-13-40",  # no such date
    "v1.2.3",
    "user@localhost",  # no domain
    "compact_threshold",  # a name with no digit
    "row 12: yyyy",
    "12\trows",  # a line number before a line, as Read numbers them
]


@pytest.mark.parametrize("kind", FACT_KINDS)
def test_each_kind_is_found_whole_in_every_surrounding(kind: FactKind) -> None:
    """Every example of a kind is found with that kind and its exact text, in prose,
    brackets, backticks, JSON, a log line, a sentence's end, a JSON-escaped line, CJK."""
    patterns = FactPatterns()
    for value in FOUND[kind]:
        for surrounding in SURROUNDINGS:
            text = surrounding.format(value)
            assert [(kind, value)] == patterns.scan(text), text


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_numbers_words_and_near_misses_are_not_facts(text: str) -> None:
    """Bare numbers, word pairs, impossible dates and other near misses register nothing."""
    assert [] == FactPatterns().scan(f"we saw {text} there")


def test_a_fact_inside_another_is_not_found_again() -> None:
    """The date of a stamp, the host of a URL or an email, a hash in a URL: each once, as the
    larger fact."""
    text = (
        "at 2026-03-14T09:26:53+05:30 see https://git.example.com/c/9fceb02d/x.py "
        "from ana@example.com"
    )
    assert [
        ("datetime", "2026-03-14T09:26:53+05:30"),
        ("url", "https://git.example.com/c/9fceb02d/x.py"),
        ("email", "ana@example.com"),
    ] == FactPatterns().scan(text)


def test_configured_patterns_come_first_and_a_named_group_gives_the_kind() -> None:
    """A configured pattern's match is an id (or the kind its group is named after), found
    before the built-in kinds; `kinds=()` leaves only the configured patterns."""
    patterns = FactPatterns([r"TICKET-\d+", r"build (?P<hash>\d{6})"])
    text = "TICKET-4711 failed in build 123456 at 14:05"
    assert [("id", "TICKET-4711"), ("hash", "123456"), ("datetime", "14:05")] == patterns.scan(text)
    only = FactPatterns([r"TICKET-\d+"], kinds=())
    assert [("id", "TICKET-4711")] == only.scan(text)
    assert [] == FactPatterns(kinds=()).scan(text)


def test_facts_are_labelled_with_their_kind_and_capped_per_text() -> None:
    """Facts carry origin `builtin`, their kind as label and their source; one text gives at
    most `MAX_FACTS_PER_TEXT`, the first found."""
    (fact,) = FactPatterns().facts(["took 12.5 ms"], source="tool")
    assert ("amount", "12.5 ms", "amount", "builtin", "tool") == (
        fact.kind,
        fact.value,
        fact.label,
        fact.origin,
        fact.source,
    )
    rows = " ".join(f"row_{n}" for n in range(MAX_FACTS_PER_TEXT + 10))
    facts = FactPatterns().facts([rows])
    assert [f"row_{n}" for n in range(MAX_FACTS_PER_TEXT)] == [f.value for f in facts]


# Texts of 100 KB that make a careless pattern of each kind backtrack. Each pattern written
# carelessly, with an unbounded quantifier, no boundary before it or two quantifiers over one
# run, took on these inputs (measured once on the CI machine's kind, 2 cores): url
# `[a-zA-Z][a-zA-Z0-9+.-]*://` 3.6 s; email `[\w.+-]+@` 17 s; datetime `\d+:\d{2}` 22 s; path
# `(?:[\w.-]+/)+` 21 s; hash `[0-9a-f]{7,}\b` 52 s; offset `UTC[+-]\d+:?\d+\b` and amount
# `\d[\d,]*(?:\.\d+)?\s*(?:ms|GiB|%)` over 100 s; the id words' single pattern 0.8 s for 10 KB.
# The scanners take under 20 ms each; the bound leaves room for a loaded machine.
N = 100_000
ADVERSARIAL: dict[FactKind, list[str]] = {
    "url": ["a." * (N // 2), "a://" * (N // 4), "http://" + "(" * N, "a:" * (N // 2)],
    "email": ["a" * N, "a@" * (N // 2), "a." * (N // 2) + "@", "@a" * (N // 2), "a+" * (N // 2)],
    "datetime": ["1" * N, "1:" * (N // 2), "12:34:" * (N // 6), "2026-01-0" * (N // 9)],
    "offset": ["UTC+" + "1" * N + "x", "+05:" * (N // 4), "UTC+1" * (N // 5), "Asia/" * (N // 5)],
    "path": ["a" * N, "a/" * (N // 2), "a." * (N // 2), "~/" * (N // 2), "/" * N],
    "id": ["a-" * (N // 2), "a_" * (N // 2), "req_" * (N // 4), "ab_" + "a" * N],
    "hash": ["a" * N + "g", "a1" * (N // 2), "a1 " * (N // 3), "1" * N],
    "amount": ["1" * N, "1," * (N // 2), "1." * (N // 2), "1 " * (N // 2), "1 " + "m" * N],
}
BOUND_S = 1.0


@pytest.mark.parametrize("kind", FACT_KINDS)
def test_each_scanner_is_linear_on_texts_that_make_careless_patterns_backtrack(
    kind: FactKind,
) -> None:
    """100 KB of the almost-matching characters of each kind: its scanner, and the scan of
    every kind, end well within a bound the careless pattern blows many times over."""
    for text in ADVERSARIAL[kind]:
        started = time.perf_counter()
        list(SCANNERS[kind](text))
        alone = time.perf_counter() - started
        started = time.perf_counter()
        scan(text, FACT_KINDS)
        together = time.perf_counter() - started
        assert (True, True) == (alone < BOUND_S, together < BOUND_S), (text[:12], alone, together)


_VALUE_CHARS = "aZ09._-/:@+ $%\n"


@given(st.text(alphabet=_VALUE_CHARS, max_size=40))
def test_every_fact_is_the_text_where_it_was_found(text: str) -> None:
    """Whatever the text, each fact is its text at the place it was found, and no two
    overlap."""
    found = scan(text, FACT_KINDS)
    reached = 0
    for start, _, value in found:
        assert value == text[start : start + len(value)]
        assert start >= reached
        reached = start + len(value)


_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_PER = "|".join(u for u in sorted(UNITS, key=len, reverse=True) if u.isascii() and u.isalpha())
# The amounts as one plain regular expression: alternation over every unit, and numbers
# without bounds. Fine on a few dozen characters; the scanner must agree with it.
_REFERENCE = re.compile(
    r"(?<![\w.,])(?:[$€£¥] ?\d(?:[\d,]*\d)?(?:\.\d+)?"
    rf"|\d(?:[\d,]*\d)?(?:\.\d+)?[ \u00a0]?(?:{_UNIT})(?:/(?:{_PER}))?(?![\w/]))",
    re.ASCII,
)


@given(st.text(alphabet="12,. \t\u00a0msGiB%xk/$ao", max_size=30))
def test_amounts_are_what_one_plain_pattern_finds(text: str) -> None:
    """On short texts the amount scanner finds what a single alternation of the units does."""
    found = [value for _, _, value in SCANNERS["amount"](text)]
    assert _REFERENCE.findall(text) == found


@given(
    st.sampled_from(FACT_KINDS).flatmap(
        lambda kind: st.tuples(st.just(kind), st.sampled_from(FOUND[kind]))
    ),
    st.sampled_from(SURROUNDINGS),
    st.text(alphabet="ab ,.;\n", max_size=8),
)
def test_a_fact_is_found_between_any_words(
    fact: tuple[FactKind, str], surrounding: str, noise: str
) -> None:
    """A fact in any surrounding, between words and punctuation, is found with its kind."""
    kind, value = fact
    text = f"{noise} {surrounding.format(value)} {noise}"
    assert (kind, value) in FactPatterns().scan(text)
