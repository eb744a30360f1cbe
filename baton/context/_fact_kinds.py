"""The built-in kinds of identifier the ledger finds in text (docs/context.md, "Key-fact
ledger"): ids, hashes, dates and times, UTC offsets, paths, URLs, emails, amounts with
units.

Each kind is a scanner yielding (start, end, value). They run on every tool result and user
message, on the event loop, so each is linear in its text: one pass of a pattern that has
no two quantifiers that could split the same run of characters between them, and that
starts only at a boundary (a lookbehind), so a long run of an almost-matching character is
entered once, not at each of its characters; its own quantifiers are bounded (`{1,64}`).
What a pattern cannot say cheaply (a month is at most 12, an amount needs a known unit, a
hash needs a digit) is checked on the match in Python, never by backtracking. URLs, paths
and the id words reuse the extractive fallback's scanners (`fallback.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from baton.context.fallback import FILE, PATH, URL, id_spans
from baton.context.ledger import FactKind
from baton.context.tokens import _CJK_RUNS  # the ranges `count_cjk` counts as CJK

Span = tuple[int, int, str]

# ASCII classes: `\w` and `\d` as the formats of these facts spell them.
_A = re.ASCII
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9.-]{1,253}", _A)
_DATETIME = re.compile(
    r"(?<![\w.:/+-])(\d{4})([-/])(\d{2})\2(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
    r"(?![\w:/])",
    _A,
)
_TIME = re.compile(
    r"(?<![\w.:/+-])(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,]\d{1,9})?)?"
    r"(?:Z| ?(?:[+-]\d{2}:?\d{2}|[AaPp][Mm]))?(?![\w:])",
    _A,
)
_OFFSET = re.compile(
    r"(?<![\w.:+-])(?:(?:UTC|GMT)[+-]\d{1,2}(?::?\d{2})?|[+-](?:0\d|1[0-4]):[0-5]\d)(?![\w:])",
    _A,
)
_ZONE = re.compile(
    r"(?<![\w/.-])(?:Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)"
    r"/[A-Za-z0-9_+-]{2,30}(?:/[A-Za-z0-9_+-]{2,30})?(?![\w/])",
    _A,
)
_PREFIXED = re.compile(r"(?<![\w-])[a-z][a-z0-9]{1,11}_[A-Za-z0-9]{6,64}(?![\w-])", _A)
_HASH = re.compile(r"(?<![\w-])[0-9a-fA-F]{7,64}(?![\w-])", _A)
_AMOUNT = re.compile(
    r"(?<![\w.,])([$€£¥] ?)?(\d(?:[\d,]{0,23}\d)?(?:\.\d{1,12})?)"
    r"(?:[ \u00a0\u202f]?([%°×µμA-Za-z][A-Za-z/]{0,11}))?",
    _A,
)
# JSON's escapes of a newline, a tab or a quote end a word as the characters they stand for;
# so does CJK text, which glues no space to the ids and stamps it names (`于2026-03-14提交`).
_ESCAPE = re.compile(r"\\[nrt\"]")
_URL_CUT = re.compile(r"[\"'<>`\\]")

_HASH_LENGTHS = frozenset({*range(7, 41), 64})
# One line per family: time, size, rate and frequency, length and weight, money and ratios,
# and the counts worth carrying (a cost in tokens, a load in requests, a volume in rows); not
# the counts every tool reply states (`14 lines`, `3 files`).
_UNIT_TABLE = """
ns µs μs us ms s sec secs second seconds min mins minute minutes h hr hrs hour hours
d day days wk week weeks month months yr yrs year years
B kB KB MB GB TB PB KiB MiB GiB TiB PiB byte bytes bit bits kb Mb Gb
bps Kbps kbps Mbps Gbps rps qps tps ops iops IOPS Hz kHz MHz GHz
mm cm m km kg g mg lb lbs °C °F
% x × USD EUR GBP JPY CNY INR cents
token tokens tok request requests req reqs row rows record records error errors
"""
UNITS: frozenset[str] = frozenset(_UNIT_TABLE.split())
"""What makes a number an amount (`12.5 ms`, `3 GiB`, `15%`, `200 tokens`); `X/Y` when both
are units (`40 MB/s`, `12 req/min`). A bare number is never one, and the unit follows the
number directly or after one space: after a tab it is a column (a line number, as Read
prints one before each line)."""


def _spans(pattern: re.Pattern[str], text: str, group: int = 0) -> Iterator[Span]:
    for match in pattern.finditer(text):
        yield match.start(group), match.end(group), match.group(group)


def _urls(text: str) -> Iterator[Span]:
    for start, _, matched in _spans(URL, text):
        # Up to a quote or an angle bracket (a URL in JSON or HTML), without the sentence's
        # punctuation or a closing bracket it did not open.
        cut = _URL_CUT.search(matched)
        value = (matched[: cut.start()] if cut else matched).rstrip(".,;:!?")
        for close, open_ in ((")", "("), ("]", "["), ("}", "{")):
            if value.endswith(close) and open_ not in value:
                value = value[:-1].rstrip(".,;:!?")
        if "://" in value and not value.endswith("://"):
            yield start, start + len(value), value


def _emails(text: str) -> Iterator[Span]:
    for start, _, matched in _spans(_EMAIL, text):
        local, domain = matched.split("@", 1)
        domain = domain.rstrip(".-")
        tld = domain.rsplit(".", 1)[-1]
        if local.startswith(".") or "." not in domain or len(tld) < 2 or not tld.isalpha():
            continue
        value = f"{local}@{domain}"
        yield start, start + len(value), value


def _datetimes(text: str) -> Iterator[Span]:
    for match in _DATETIME.finditer(text):
        _, _, month, day, hour, minute, second = match.groups()
        if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
            continue
        if hour is not None and not _clock_ok(hour, minute, second):
            continue
        yield match.start(), match.end(), match.group()
    for match in _TIME.finditer(text):
        hour, minute, second = match.groups()
        if _clock_ok(hour, minute, second):
            yield match.start(), match.end(), match.group()


def _clock_ok(hour: str, minute: str, second: str | None) -> bool:
    return int(hour) <= 23 and int(minute) <= 59 and (second is None or int(second) <= 60)


def _offsets(text: str) -> Iterator[Span]:
    yield from _spans(_OFFSET, text)
    yield from _spans(_ZONE, text)


def _paths(text: str) -> Iterator[Span]:
    for pattern in (PATH, FILE):
        for start, _, matched in _spans(pattern, text, 1):
            value = matched.rstrip(".")
            if _plausible_path(value):
                yield start, start + len(value), value


def _plausible_path(value: str) -> bool:
    """A path, not a pair of words (`and/or`, `TCP/IP`, `application/json`) or a fraction:
    rooted, or two separators deep, or a file name with an extension, or a part with `_`,
    `-`, `.` or a digit."""
    if not any(c.isalpha() for c in value):
        return False
    if value.startswith(("/", "./", "../", "~")) or value.count("/") >= 2 or "/" not in value:
        return True
    last = value.rsplit("/", 1)[-1]
    if "." in last.strip(".") and any(c.isalpha() for c in last.rsplit(".", 1)[-1]):
        return True
    return any(c in "_-." or c.isdigit() for c in value.replace("/", ""))


def _ids(text: str) -> Iterator[Span]:
    yield from id_spans(text)
    for start, end, value in _spans(_PREFIXED, text):
        body = value.split("_", 1)[1]
        if any(c.isdigit() for c in body) and any(c.isalpha() for c in body):
            yield start, end, value


def _hashes(text: str) -> Iterator[Span]:
    for start, end, value in _spans(_HASH, text):
        letters = [c for c in value if c.isalpha()]
        if (
            len(value) in _HASH_LENGTHS
            and letters
            and len(letters) < len(value)
            and (value.islower() or value.isupper())
        ):
            yield start, end, value


def _amounts(text: str) -> Iterator[Span]:
    for match in _AMOUNT.finditer(text):
        currency, _, unit = match.groups()
        if currency:
            yield match.start(), match.end(2), text[match.start() : match.end(2)]
            continue
        if unit is None or not _is_unit(unit):
            continue
        end = match.end()
        if end < len(text) and (text[end].isalnum() or text[end] == "_"):
            continue
        yield match.start(), end, match.group()


def _is_unit(unit: str) -> bool:
    if unit in UNITS:
        return True
    head, _, per = unit.partition("/")
    return bool(per) and head in UNITS and per in UNITS


SCANNERS: dict[FactKind, Callable[[str], Iterator[Span]]] = {
    "url": _urls,
    "email": _emails,
    "datetime": _datetimes,
    "offset": _offsets,
    "path": _paths,
    "id": _ids,
    "hash": _hashes,
    "amount": _amounts,
}
"""Each kind's scanner, in the order they claim text: a date inside a URL, the domain of an
email or the date of a stamp is not found again as a fact of its own."""


def scan(text: str, kinds: tuple[FactKind, ...]) -> list[tuple[int, FactKind, str]]:
    """The facts of `kinds` in `text`: (start, kind, value), in order of position; where two
    overlap, the kind that comes first in `SCANNERS` keeps the text, and the next kinds see
    it blanked out (as the fallback blanks URLs before it looks for paths)."""
    masked = _ESCAPE.sub("  ", text)
    if not masked.isascii():
        masked = _CJK_RUNS.sub(lambda run: " " * len(run.group()), masked)
    found: list[tuple[int, FactKind, str]] = []
    for kind, scanner in SCANNERS.items():
        if kind not in kinds:
            continue
        spans = [(start, end, value) for start, end, value in scanner(masked) if end > start]
        if not spans:
            continue
        spans.sort(key=lambda span: (span[0], -span[1]))  # at one place, the longest
        pieces, reached = [], 0
        for start, end, value in spans:
            if start < reached:
                continue  # overlaps one of the same kind found first
            found.append((start, kind, value))
            pieces += [masked[reached:start], " " * (end - start)]
            reached = end
        masked = "".join([*pieces, masked[reached:]])
    found.sort(key=lambda item: item[0])
    return found
