"""What the service tells its operators on `/metrics` (Prometheus text format,
prometheus-client). One registry per service, so that tests can run several.

Names follow Prometheus's conventions (prometheus.io/docs/practices/naming): a unit
before `_total` (`wheelpin_registry_uploaded_bytes_total`), `wheelpin_build_info` with the
version as a label, the process and platform collectors (`process_*`, `python_info`) as
the default registry has them. GitHub's rate limit is an installation's (its token's), so
its gauge is labelled by installation, not repository. An action the pass failed at is counted
with `outcome="failed"`, apart from those done (`sum without (outcome)` is every action
tried); each kind's two series are there from the start, at 0, so a rate of failures is
never a missing series (prometheus.io/docs/practices/instrumentation, "Avoid missing
metrics")."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from ..adapters import cachebound
from ..core.decide.plan import Kind
from ..loop.results import PassResult

OUTCOMES = ("done", "failed")  # an action done, or the one its pass failed at (ComponentResult.failed_at)


class _CacheCollector(Collector):
    """The cache's bounded parts (adapters/cachebound.py), read at each scrape: bytes kept
    (the whole folder's, whichever replica sharing it wrote them), the bound, and this
    process's evictions."""

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the parts are known only once the command configured them

    def collect(self) -> Iterator[Metric]:
        used = GaugeMetricFamily(
            "wheelpin_cache_bytes", "Bytes a bounded part of the cache folder keeps", labels=["cache"]
        )
        bound = GaugeMetricFamily(
            "wheelpin_cache_bound_bytes", "The bound of a part of the cache folder", labels=["cache"]
        )
        evictions = CounterMetricFamily(
            "wheelpin_cache_evictions",
            "Entries evicted from a part of the cache folder, least recently used first",
            labels=["cache"],
        )
        evicted = CounterMetricFamily(
            "wheelpin_cache_evicted_bytes", "Bytes evicted from a part of the cache folder", labels=["cache"]
        )
        for part in cachebound.usage():
            used.add_metric([part.part], part.used)
            bound.add_metric([part.part], part.bound)
            evictions.add_metric([part.part], part.evictions)
            evicted.add_metric([part.part], part.evicted_bytes)
        yield from (used, bound, evictions, evicted)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        from .. import __version__

        Info("wheelpin_build", "The wheelpin running", registry=r).info({"version": __version__})
        self.deliveries = Counter(
            "wheelpin_webhook_deliveries", "Webhook deliveries, by event and outcome", ["event", "outcome"], registry=r
        )
        self.passes = Counter("wheelpin_passes", "Reconcile passes of one component, by result", ["result"], registry=r)
        self.pass_seconds = Histogram(
            "wheelpin_pass_duration_seconds",
            "How long a component's pass took",
            registry=r,
            buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600),
        )
        self.actions = Counter(
            "wheelpin_actions",
            "Actions passes tried, by kind and outcome: done, or failed (the action a pass failed at)",
            ["kind", "outcome"],
            registry=r,
        )
        for kind in Kind:
            for outcome in OUTCOMES:
                self.actions.labels(kind=kind.value, outcome=outcome)
        self.failures = Counter("wheelpin_failures", "Failed passes and jobs, by kind of error", ["kind"], registry=r)
        self.jobs = Counter("wheelpin_jobs", "Jobs taken from the queue, by kind", ["kind"], registry=r)
        self.queue_depth = Gauge("wheelpin_queue_depth", "Keys waiting in the work queue", registry=r)
        self.queue_running = Gauge("wheelpin_queue_running", "Jobs running now", registry=r)
        self.github_requests = Counter(
            "wheelpin_github_requests",
            "GitHub API requests: counted against the rate limit, or free (304)",
            ["kind"],
            registry=r,
        )
        self.github_remaining = Gauge(
            "wheelpin_github_rate_limit_remaining",
            "Requests left in an installation's GitHub rate-limit window, as last answered",
            ["installation"],
            registry=r,
        )
        self.registry_requests = Counter("wheelpin_registry_requests", "Registry requests", registry=r)
        self.registry_bytes = Counter("wheelpin_registry_uploaded_bytes", "Bytes uploaded to registries", registry=r)
        self.git_requests = Counter("wheelpin_git_requests", "git ls-remote and fetch calls", ["kind"], registry=r)
        self.watched = Gauge("wheelpin_watched_repositories", "Repositories watched", registry=r)
        self.ready = Gauge("wheelpin_ready", "1 when /readyz answers 200", registry=r)
        r.register(_CacheCollector())

    def track_queue(self, depth: Callable[[], float], running: Callable[[], float]) -> None:
        self.queue_depth.set_function(depth)
        self.queue_running.set_function(running)

    def record_pass(self, result: PassResult, seconds: float, installation: str, rate_remaining: int | None) -> None:
        """A component's pass; `installation` is the id whose token it used ("token" for a
        personal or Actions token)."""
        for component in result.components:
            self.passes.labels(result=component.status).inc()
            for action in component.actions:
                outcome = "failed" if action is component.failed_at else "done"
                self.actions.labels(kind=action.kind.value, outcome=outcome).inc()
            if component.status == "failed":
                self.failures.labels(kind=component.error_kind or "other").inc()
        self.pass_seconds.observe(seconds)
        requests = result.requests
        self.github_requests.labels(kind="counted").inc(requests.get("github_counted", 0))
        self.github_requests.labels(kind="free").inc(requests.get("github_free", 0))
        self.registry_requests.inc(requests.get("registry", 0))
        self.registry_bytes.inc(requests.get("registry_bytes_uploaded", 0))
        self.git_requests.labels(kind="ls_remote").inc(requests.get("git_ls_remote", 0))
        self.git_requests.labels(kind="fetch").inc(requests.get("git_fetch", 0))
        if rate_remaining is not None:
            self.github_remaining.labels(installation=installation).set(rate_remaining)

    def render(self) -> bytes:
        return generate_latest(self.registry)
