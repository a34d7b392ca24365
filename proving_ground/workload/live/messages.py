"""The messages the live workload produces: deterministic from the seed, the scale and the tick.

Each (topic, tick) has its own random stream (`random.Random` seeded with a string, which is
stable across processes and PYTHONHASHSEED), so the same seed gives the same keys, values and
counts whatever the timing. Keys are business ids, so the producer's murmur2 partitioner (the
Java client's) sends each key to the same partition every run.
"""

from __future__ import annotations

import hashlib
import json
import random

from .scenarios import TICKS, TOPICS, TopicSpec

_SHAPES = {  # topic -> (key entity, how many distinct keys, the value's fields)
    "orders": ("customer", 800, lambda r: {
        "sku": f"SKU-{r.randrange(2000):05d}", "qty": r.randint(1, 5), "amount_cents": r.randint(199, 99_999)}),
    "invoices": ("account", 300, lambda r: {
        "invoice_cents": r.randint(1_000, 500_000), "currency": r.choice(("EUR", "USD", "GBP")),
        "due_days": r.choice((14, 30, 60))}),
    "search-queries": ("session", 1_000, lambda r: {
        "query": r.choice(("shoes", "laptop", "tent", "kettle", "desk")), "page": r.randint(1, 4)}),
    "search-clicks": ("session", 1_000, lambda r: {
        "result_rank": r.randint(1, 20), "dwell_ms": r.randint(200, 90_000)}),
    "report-requests": ("tenant", 40, lambda r: {
        "report": r.choice(("weekly-sales", "churn", "inventory")), "format": r.choice(("csv", "pdf"))}),
    "ledger-entries": ("ledger", 60, lambda r: {
        "debit_cents": r.randint(0, 1_000_000), "credit_cents": r.randint(0, 1_000_000)}),
    "s3-sink-input": ("device", 200, lambda r: {
        "reading": round(r.uniform(-20.0, 45.0), 3), "battery": r.randint(1, 100)}),
    "payments": ("merchant", 500, lambda r: {
        "amount_cents": r.randint(100, 250_000), "method": r.choice(("card", "sepa", "wallet"))}),
    "clickstream-web": ("visitor", 900, lambda r: {
        "path": r.choice(("/", "/cart", "/search", "/checkout")), "ms_on_page": r.randint(100, 60_000)}),
    "clickstream-app": ("device", 700, lambda r: {
        "screen": r.choice(("home", "basket", "profile")), "taps": r.randint(1, 30)}),
    "fx-rates": ("pair", 12, lambda r: {
        "rate": round(r.uniform(0.5, 2.0), 5), "source": r.choice(("ecb", "fed", "boe"))}),
    "alerts": ("host", 50, lambda r: {
        "severity": r.choice(("warning", "critical")), "check": r.choice(("disk", "cpu", "latency"))}),
}

_WORDS = ("kafka", "stream", "group", "offset", "commit", "topic", "partition", "broker", "record", "lag")
"""WordCountDemo counts the words of plain text lines, so its input is plain text."""


def _text_line(rng: random.Random) -> bytes:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 8))).encode()


def message_count(spec: TopicSpec, scale: float, rng: random.Random) -> int:
    return max(1, round(spec.per_tick * scale * rng.uniform(0.7, 1.3)))


def tick_messages(seed: int, scale: float, topic: str, tick: int) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs produced to `topic` at `tick`, in produce order (none for an
    application's output topic)."""
    spec = TOPICS[topic]
    if spec.output:
        return []
    rng = random.Random(f"live-workload/{seed}/{topic}/{tick}")
    if topic not in _SHAPES:  # plain text for the word count
        return [(f"line-{tick}-{i}".encode(), _text_line(rng)) for i in range(message_count(spec, scale, rng))]
    entity, cardinality, fields = _SHAPES[topic]
    messages = []
    for i in range(message_count(spec, scale, rng)):
        key = f"{entity}-{rng.randrange(cardinality):05d}"
        value = {"id": f"{topic}-{seed}-{tick}-{i}", entity: key, **fields(rng)}
        messages.append((key.encode(), json.dumps(value, sort_keys=True, separators=(",", ":")).encode()))
    return messages


def plan(seed: int, scale: float) -> dict[str, list[list[tuple[bytes, bytes]]]]:
    """Every message of a run: topic -> tick -> [(key, value)]."""
    return {topic: [tick_messages(seed, scale, topic, tick) for tick in range(TICKS)] for topic in TOPICS}


def digest_update(digest, key: bytes, value: bytes) -> None:
    """Add one message to a running sha256 (length-prefixed, so no two sequences collide)."""
    digest.update(len(key).to_bytes(4, "big") + key + len(value).to_bytes(4, "big") + value)


def messages_digest(messages) -> str:
    """sha256 of a sequence of (key, value) pairs, in order."""
    digest = hashlib.sha256()
    for key, value in messages:
        digest_update(digest, key, value)
    return digest.hexdigest()
