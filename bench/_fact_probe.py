"""A held-out probe for bench/ledger_survival.py: facts of every kind the ledger's patterns
look for (docs/context.md, "Key-fact ledger"), written the way tools and users write them,
embedded in a work order's text and in files the agent reads, never registered by name.

The generator is seeded and knows nothing of the patterns: each kind draws from several
real-world formats (Stripe- and Anthropic-style prefixed ids, ticket keys, UUIDs in either
case, short and long git SHAs, sha256 digests, ISO 8601 stamps with and without offsets,
UTC offsets as logs print them, POSIX paths, URLs of several schemes, emails, amounts with
units and currencies), and each fact sits in one of several kinds of surroundings (prose,
parentheses, backticks, a JSON field, a multi-line string inside JSON, a log line, the end
of a sentence).
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("id", "hash", "datetime", "offset", "path", "url", "email", "amount")
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_WORDS = ("billing", "orders", "ingest", "reports", "auth", "search", "export", "ledger")
_NAMES = ("ana", "li.wei", "j.smith", "ops", "noor", "k_tanaka", "m.rossi")
_DOMAINS = ("example.com", "corp.example.org", "mail.example.net", "acme.io")
_EXTS = ("py", "log", "json", "csv", "yaml", "md", "parquet", "html", "sql")


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _id(rng: random.Random) -> str:
    form = rng.randrange(7)
    if form == 0:
        return "req_011C" + _s(rng, _ALNUM, 20)
    if form == 1:
        return "toolu_01" + _s(rng, _ALNUM, 22)
    if form == 2:
        prefix = rng.choice(("cus", "evt", "ord", "pi", "sub"))
        return f"{prefix}_{_s(rng, _ALNUM, 14)}"
    if form == 3:
        return f"{_s(rng, string.ascii_uppercase, rng.randint(2, 5))}-{rng.randint(1, 99999)}"
    if form == 4:
        text = f"{_s(rng, _HEX, 8)}-{_s(rng, _HEX, 4)}-4{_s(rng, _HEX, 3)}-a{_s(rng, _HEX, 3)}-"
        text += _s(rng, _HEX, 12)
        return text.upper() if rng.random() < 0.3 else text
    if form == 5:
        return f"INV-{rng.randint(2019, 2030)}-{rng.randint(1, 99999):05d}"
    return f"{rng.choice(_WORDS)}-job-{rng.randint(100, 99999)}"


def _hash(rng: random.Random) -> str:
    return _s(rng, _HEX, rng.choice((7, 8, 10, 12, 40, 40, 64, 64)))


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2019, 2031)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _clock(rng: random.Random, seconds: bool = True) -> str:
    text = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    return text + f":{rng.randint(0, 59):02d}" if seconds else text


def _offset_text(rng: random.Random) -> str:
    hours = rng.choice((1, 2, 3, 5, 8, 9, 10, 11))
    return f"{rng.choice('+-')}{hours:02d}:{rng.choice((0, 30, 45)):02d}"


def _datetime(rng: random.Random) -> str:
    form = rng.randrange(7)
    if form == 0:
        return _date(rng)
    if form == 1:
        return f"{_date(rng)}T{_clock(rng)}Z"
    if form == 2:
        return f"{_date(rng)}T{_clock(rng)}.{rng.randint(0, 999):03d}Z"
    if form == 3:
        return f"{_date(rng)}T{_clock(rng)}{_offset_text(rng)}"
    if form == 4:
        return f"{_date(rng)} {_clock(rng)}"
    if form == 5:
        return _clock(rng)
    return _clock(rng, seconds=False)


def _offset(rng: random.Random) -> str:
    form = rng.randrange(5)
    if form == 0:
        return _offset_text(rng)
    if form == 1:
        return f"UTC{rng.choice('+-')}{rng.randint(1, 12)}"
    if form == 2:
        return f"UTC{_offset_text(rng)}"
    if form == 3:
        return f"GMT{rng.choice('+-')}{rng.randint(1, 12)}"
    return rng.choice(("Asia/Kolkata", "America/New_York", "Europe/Berlin", "Australia/Perth"))


def _path(rng: random.Random) -> str:
    parts = [rng.choice(_WORDS) for _ in range(rng.randint(1, 3))]
    name = f"{rng.choice(_WORDS)}_{rng.randint(1, 999)}.{rng.choice(_EXTS)}"
    lead = rng.choice(("/var/log/", "/srv/", "src/", "./build/", "~/data/", "data/"))
    return lead + "/".join([*parts, name])


def _url(rng: random.Random) -> str:
    host = rng.choice(("api.example.com", "localhost:8080", "status.acme.io", "bucket-7"))
    path = "/".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
    form = rng.randrange(4)
    if form == 0:
        return f"https://{host}/v1/{path}/{rng.randint(1, 99999)}"
    if form == 1:
        return f"https://{host}/{path}?page={rng.randint(1, 9)}&limit={rng.randint(10, 500)}"
    if form == 2:
        return f"http://{host}/{path}"
    return f"s3://{host}/{path}/part-{rng.randint(0, 9999):04d}.parquet"


def _email(rng: random.Random) -> str:
    tag = f"+{rng.choice(_WORDS)}" if rng.random() < 0.3 else ""
    return f"{rng.choice(_NAMES)}{tag}@{rng.choice(_DOMAINS)}"


def _amount(rng: random.Random) -> str:
    form = rng.randrange(9)
    if form == 0:
        return f"{rng.randint(1, 999)}.{rng.randint(0, 9)} ms"
    if form == 1:
        return f"{rng.randint(1, 64)} {rng.choice(('GiB', 'MiB', 'MB', 'GB', 'KB'))}"
    if form == 2:
        return f"${rng.randint(0, 999)}.{rng.randint(0, 99):02d}"
    if form == 3:
        return f"{rng.randint(1, 99)}%"
    if form == 4:
        return f"{rng.randint(2, 99) * 100} tokens"
    if form == 5:
        return f"{rng.randint(1, 99)},{rng.randint(0, 999):03d} rows"
    if form == 6:
        return f"€{rng.randint(1, 999)}.{rng.randint(0, 99):02d}"
    if form == 7:
        return f"{rng.randint(1, 99)}.{rng.randint(0, 9)}s"
    return f"{rng.randint(1, 999)} requests"


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "id": _id,
    "hash": _hash,
    "datetime": _datetime,
    "offset": _offset,
    "path": _path,
    "url": _url,
    "email": _email,
    "amount": _amount,
}

_PROSE = (
    "while checking the {w} run we saw {v} in the output",
    "the {w} step names {v}; keep it for the follow-up",
    "see ({v}) before touching the {w} job",
    "the report quotes `{v}` as the {w} reference",
    "{w} finished, last value {v}.",
    "for {w}: {v}, then nothing else changed",
)


@dataclass
class Probe:
    """The facts drawn from one seed (kind → values), and the texts that carry them: a user
    message and the files an agent reads (name → content)."""

    facts: dict[str, list[str]] = field(default_factory=dict)
    user: str = ""
    files: dict[str, str] = field(default_factory=dict)

    @property
    def values(self) -> list[tuple[str, str]]:
        """Every (kind, value), each once."""
        return [(kind, value) for kind, values in self.facts.items() for value in values]


def _embed(rng: random.Random, value: str) -> str:
    form = rng.randrange(len(_PROSE) + 3)
    word = rng.choice(_WORDS)
    if form == len(_PROSE):
        return json.dumps({f"{word}_ref": value, "status": "failed"}, ensure_ascii=False)
    if form == len(_PROSE) + 1:
        # A multi-line string inside JSON: the value follows an escaped newline.
        return json.dumps({"log": f"{word} started\n{value} seen\n"}, ensure_ascii=False)
    if form == len(_PROSE) + 2:
        return f"[{word}] WARN retry scheduled ref={value} attempt={rng.randint(2, 5)}"
    return _PROSE[form].format(w=word, v=value)


def make_probe(seed: int, *, per_kind: int = 4, files: int = 2) -> Probe:
    """`per_kind` facts of each kind, spread over one user message and `files` files: every
    other fact in the user message, the rest in the files, each file padded with lines that
    carry none."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible probe, not a secret
    probe = Probe()
    user_lines: list[str] = []
    file_lines: list[list[str]] = [[] for _ in range(files)]
    taken: set[str] = set()
    n = 0
    for kind in KINDS:
        values = probe.facts.setdefault(kind, [])
        while len(values) < per_kind:
            value = GENERATORS[kind](rng)
            if value in taken:
                continue
            taken.add(value)
            values.append(value)
            line = _embed(rng, value)
            if n % 2 == 0:
                user_lines.append(line)
            else:
                file_lines[(n // 2) % files].append(line)
            n += 1
    for lines in [user_lines, *file_lines]:
        rng.shuffle(lines)
    probe.user = "Please look into the following.\n" + "\n".join(user_lines)
    for index, lines in enumerate(file_lines):
        filler = [f"checked {rng.choice(_WORDS)} entries, nothing new" for _ in range(3)]
        probe.files[f"probe_{index}.txt"] = "\n".join([*filler, *lines, *filler]) + "\n"
    return probe
