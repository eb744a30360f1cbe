"""Long-term memory: recall latency of every backend, and recall@5 of BM25 against hybrid.

Run: python bench/memory.py [--sizes 1000,10000,100000] [--queries 200] [--backends ...]

Latency: each backend is filled with synthetic entries (a Zipf-distributed vocabulary,
12-40 words each, a third tagged), in batches of 1000 through the backend's `store_many`
where it has one (one by one for `file`), grown 1K → 10K → 100K, and
at each size answers `--queries` recalls (limit 5) of 2-4 words drawn from stored entries;
p50 and p95 are printed in milliseconds. A growth step whose build would take more than
~2 minutes at the rate measured so far is skipped, and the skip printed.

Quality: a labelled set of 30 developer notes, each with one paraphrased query (other word
forms, other words), stored among 300 template-made distractor notes of the same domain,
scored as recall@5 (the note is among the first five hits) for the default backend (SQLite
FTS5, BM25) and for hybrid (BM25 fused with vectors by reciprocal rank). The vectors come
from the tests' toy embedder (hashed character trigrams, 256 dimensions): it knows word
pieces, not meaning, so this figure shows the fusion at work, not what a real embedding
model would score (docs/memory.md, "Plugging in an embedder").
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baton.memory import MemoryEntry, MemorySettings, MemoryStore, open_backend
from baton.memory._text import new_entry_id
from tests.memory.toy_embedder import TrigramEmbedder

BACKENDS = ["sqlite", "jsonl", "file", "vector", "hybrid"]
BUILD_LIMIT_S = 120.0
BATCH = 1000
SEED = 20
# The toy embedder's size: at 64 dimensions its hash buckets collide so often that its
# ranking is mostly noise on this corpus; 256 is nearer the 384+ of real models.
DIMENSIONS = 256

LABELLED: list[tuple[str, str]] = [
    (
        "The deploy key for the payments gateway rotates on the first Monday of each month.",
        "how often do we rotate keys for payment deploys",
    ),
    (
        "Integration tests need a running Redis server; start it with scripts/redis.sh.",
        "integration suite depends on a redis instance",
    ),
    (
        "Staging database backups are taken nightly at 02:00 UTC and kept for 14 days.",
        "retention of the staging backups",
    ),
    (
        "The frontend bundles with Vite; run npm run build before publishing.",
        "publishing the frontend bundle",
    ),
    (
        "Customer emails are sent through the notifications service, never directly via SMTP.",
        "customer e-mail goes via notifications",
    ),
    (
        "Rate limiting on the public API is 100 requests per minute per token.",
        "ratelimit for api tokens",
    ),
    (
        "The monorepo uses pnpm workspaces; do not commit package-lock.json files.",
        "lockfile policy for the monorepo",
    ),
    (
        "Feature flags live in LaunchDarkly; the flag for the new checkout is checkout_v2.",
        "flag name for checkout v2",
    ),
    (
        "Logs are shipped to Loki; dashboards for latency are in the Grafana folder Platform.",
        "where to see latencies",
    ),
    (
        "The search index is rebuilt every Sunday by the reindex cron job.",
        "reindexing schedule",
    ),
    (
        "Passwords are hashed with argon2id; bcrypt hashes are migrated at next login.",
        "argon2 password migration",
    ),
    (
        "The mobile app reads its configuration from remote config at startup.",
        "remote configuration for the app",
    ),
    (
        "Kubernetes pods autoscale between 3 and 20 replicas on CPU above 70 percent.",
        "pod autoscaler limits",
    ),
    (
        "Invoices are generated as PDF by the billing worker and stored in S3.",
        "invoice generation",
    ),
    (
        "Translations are managed in Crowdin and synced to the repo by a nightly bot.",
        "translation sync bot",
    ),
    (
        "The CI pipeline caches Python wheels keyed on the hash of requirements.txt.",
        "wheel caching in the pipeline",
    ),
    (
        "On-call engineers acknowledge pages in PagerDuty within 15 minutes.",
        "paging acknowledgement time for oncall",
    ),
    (
        "The data warehouse is Snowflake; analysts query it through dbt models.",
        "snowflake access for analytics",
    ),
    (
        "User uploads larger than 50 MB are rejected by the ingress with HTTP 413.",
        "maximum upload size",
    ),
    ("Session cookies expire after 12 hours of inactivity.", "session expiry"),
    (
        "The recommendation model is retrained weekly on the last 90 days of clicks.",
        "recommendations retrained how often",
    ),
    (
        "GraphQL schema changes must be reviewed by the API guild before merging.",
        "graphql review before a merge",
    ),
    (
        "Secrets are stored in Vault under the path kv/prod; never in environment files.",
        "vault paths for prod",
    ),
    (
        "The load balancer health check hits /healthz every 10 seconds.",
        "healthcheck interval",
    ),
    (
        "Timezone handling: store everything in UTC, convert only in the UI layer.",
        "timezones conversion",
    ),
    (
        "The legacy SOAP endpoint is deprecated and will be removed in Q3.",
        "soap removal date",
    ),
    (
        "Database migrations run with Alembic; never edit an applied migration.",
        "alembic rules",
    ),
    (
        "Error budgets: the checkout service targets 99.9 percent availability monthly.",
        "checkout availability objective",
    ),
    (
        "Images are resized on upload to 3 sizes by the thumbnailer lambda.",
        "thumbnail sizes",
    ),
    (
        "Access to production requires a hardware key and an approved ticket.",
        "production access requirements",
    ),
]


DISTRACTOR_SUBJECTS = [
    "the billing service",
    "the api gateway",
    "the search cluster",
    "the mobile client",
    "the data pipeline",
    "the auth service",
    "the checkout flow",
    "the notification worker",
    "the staging environment",
    "the production database",
    "the frontend build",
    "the analytics job",
    "the upload handler",
    "the session store",
    "the load balancer",
]
DISTRACTOR_VERBS = [
    "logs",
    "retries",
    "caches",
    "exports",
    "validates",
    "schedules",
    "monitors",
    "archives",
    "replicates",
    "compresses",
    "throttles",
    "encrypts",
    "indexes",
    "migrates",
    "reports",
]
DISTRACTOR_OBJECTS = [
    "user records",
    "request metrics",
    "error reports",
    "audit events",
    "config values",
    "queue messages",
    "feature toggles",
    "daily summaries",
    "access tokens",
    "image files",
    "price tables",
    "schema versions",
    "team calendars",
    "support tickets",
    "build artifacts",
]
DISTRACTOR_WHEN = [
    "every hour",
    "at midnight",
    "on each request",
    "after each deploy",
    "every week",
    "before release",
    "during peak traffic",
    "when the queue is full",
    "on weekends",
]
DISTRACTORS = 300


def distractors(rng: random.Random) -> list[str]:
    """Plausible notes in the labelled set's domain, none answering a labelled query."""
    return [
        f"{rng.choice(DISTRACTOR_SUBJECTS).capitalize()} {rng.choice(DISTRACTOR_VERBS)} "
        f"{rng.choice(DISTRACTOR_OBJECTS)} {rng.choice(DISTRACTOR_WHEN)}."
        for _ in range(DISTRACTORS)
    ]


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)]


def synthetic_entry(rng: random.Random, words: list[str], cumulative: list[float]) -> str:
    return " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(12, 40)))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def open_store(kind: str, workspace: Path) -> MemoryStore:
    settings = MemorySettings(backend=kind)  # type: ignore[arg-type]
    backend = await open_backend(workspace, settings, embedder=TrigramEmbedder(DIMENSIONS))
    return MemoryStore(backend)


async def fill(store: MemoryStore, texts: list[str]) -> None:
    """Store the texts, a third of them tagged: in batches through `store_many` where the
    backend offers it (one transaction or write per batch), else one by one."""
    entries = [
        MemoryEntry(
            id=new_entry_id(),
            content=text,
            tags=("tagged",) if n % 3 == 0 else (),
            created_at=datetime.now(UTC),
        )
        for n, text in enumerate(texts)
    ]
    store_many = getattr(store.backend, "store_many", None)
    if store_many is None:
        for entry in entries:
            await store.backend.store(entry)
        return
    for start in range(0, len(entries), BATCH):
        await store_many(entries[start : start + BATCH])


async def latency(kind: str, sizes: list[int], queries: int) -> None:
    rng = random.Random(SEED)  # noqa: S311 - a reproducible corpus, not a secret
    words = vocabulary(rng)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))
    with tempfile.TemporaryDirectory() as folder:
        store = await open_store(kind, Path(folder))
        stored: list[str] = []
        rate: float | None = None
        try:
            for size in sizes:
                todo = size - len(stored)
                if rate is not None and todo / rate > BUILD_LIMIT_S:
                    print(
                        f"  {kind:7} {size:>7,}: skipped — building {todo:,} more entries "
                        f"would take ~{todo / rate:.0f} s at {rate:.0f} entries/s"
                    )
                    break
                texts = [synthetic_entry(rng, words, cumulative) for _ in range(todo)]
                started = time.perf_counter()
                await fill(store, texts)
                built = time.perf_counter() - started
                stored.extend(texts)
                rate = todo / built if built else None
                timings = []
                for _ in range(queries):
                    source = rng.choice(stored).split()
                    query = " ".join(rng.sample(source, k=min(len(source), rng.randint(2, 4))))
                    began = time.perf_counter()
                    await store.recall(query, limit=5)
                    timings.append((time.perf_counter() - began) * 1000)
                print(
                    f"  {kind:7} {size:>7,}: recall p50 {statistics.median(timings):7.2f} ms  "
                    f"p95 {percentile(timings, 0.95):7.2f} ms  (built {todo:,} in {built:.1f} s)"
                )
        finally:
            await store.close()


async def recall_at_5(kind: str) -> float:
    with tempfile.TemporaryDirectory() as folder:
        store = await open_store(kind, Path(folder))
        try:
            rng = random.Random(SEED)  # noqa: S311 - a reproducible corpus, not a secret
            for text in distractors(rng):
                await store.remember(text)
            ids = [(await store.remember(text)).id for text, _ in LABELLED]
            found = 0
            for entry_id, (_, query) in zip(ids, LABELLED, strict=True):
                hits = await store.recall(query, limit=5)
                found += entry_id in [hit.entry.id for hit in hits]
            return found / len(LABELLED)
        finally:
            await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"recall latency, limit 5, {args.queries} queries per size:")
    for kind in args.backends.split(","):
        await latency(kind, sizes, args.queries)
    print(
        f"recall@5 on {len(LABELLED)} labelled paraphrased queries among {DISTRACTORS} "
        "distractors (toy trigram embedder):"
    )
    for kind, label in (("sqlite", "BM25 (SQLite FTS5)"), ("hybrid", "hybrid BM25 + vector")):
        print(f"  {label:22} {await recall_at_5(kind):.2f}")


if __name__ == "__main__":
    anyio.run(main)
