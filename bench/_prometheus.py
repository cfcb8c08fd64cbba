"""A process's Prometheus metrics as plain data: scrape text in, sums and bounds out.

One sample per ``name{label=value,...}`` key, so a record in a results file stays readable
JSON, and two scrapes subtract key by key (what a phase added). Parsing is
``prometheus_client``'s own.
"""

from __future__ import annotations

from collections import Counter

from prometheus_client.parser import text_string_to_metric_families


def parse_metrics(text: str, wanted: tuple[str, ...]) -> dict[str, float]:
    """``name{label=value,...}`` -> value for the samples of the families in ``wanted``.

    A histogram keeps its ``_bucket`` (with ``le``), ``_sum`` and ``_count`` samples; samples
    differing only in labels the benchmark does not read are kept apart.
    """
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not any(sample.name.startswith(w.removesuffix("_total")) for w in wanted):
                continue
            if sample.name.endswith("_created"):
                continue
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            key = f"{sample.name}{{{labels}}}"
            out[key] = out.get(key, 0.0) + sample.value
    return out


def sample_of(key: str) -> tuple[str, dict[str, str]]:
    """(name, labels) of a :func:`parse_metrics` key; a key without labels is a bare name."""
    name, _, labels = key.partition("{")
    return name, dict(kv.split("=", 1) for kv in labels.rstrip("}").split(",") if kv)


def metric_total(metrics: dict[str, float], name: str, **labels: str) -> float | None:
    """Sum of the samples called ``name`` with these labels; None if there is none."""
    values = [
        v
        for key, v in metrics.items()
        if sample_of(key)[0] == name and labels.items() <= sample_of(key)[1].items()
    ]
    return sum(values) if values else None


def metric_delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """What counters and histograms gained from scrape ``a`` to ``b`` (gauges: their value at b)."""
    return {
        k: v - a.get(k, 0.0)
        if k.split("{")[0].endswith(("_total", "_bucket", "_sum", "_count"))
        else v
        for k, v in b.items()
    }


def histogram_bounds(metrics: dict[str, float], name: str) -> tuple[float, float] | None:
    """(p99, max) of histogram ``name`` as bucket upper bounds (``inf`` past the last bound);
    None if it is absent or empty."""
    buckets: Counter[float] = Counter()
    for key, v in metrics.items():
        sample, labels = sample_of(key)
        if sample == f"{name}_bucket":
            buckets[float(labels["le"])] += v
    count = buckets.get(float("inf"), 0.0)
    if not count:
        return None
    bounds = sorted(buckets)
    p99 = next(le for le in bounds if buckets[le] >= 0.99 * count)
    top = next(le for le in bounds if buckets[le] >= count)
    return p99, top
