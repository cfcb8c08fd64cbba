"""What one (N, R) run of the manager mode measured: a frozen record per phase, one per run.

The results file (``bench/results/fleet_scale.json``) keeps one flat JSON object per run;
its keys are the records' JSON keys (a field's ``key``, else its name), unchanged since the
file began. A phase that did not run, or did not finish, leaves all its keys out, so a run
that failed, or one recorded before a phase existed, reads back with that phase ``None``.
Figures are seconds unless a name says otherwise (``_mib``, ``_per_s``, counts); ``cores``
are CPU seconds per wall second, by process label (``hub apiserver``, ``etcd``, ``member
apiservers``, ``proxy``, ``bench``, ``replica NAME``, and ``machine``: the whole machine).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Self, TypedDict

#: One run's record as the results file holds it.
Json = dict[str, Any]
#: Process label -> cores over a phase (see the module docstring).
Cores = dict[str, float]
#: A replica's /metrics samples, ``name{label=value,...}`` -> value (``_prometheus``).
Metrics = dict[str, float]


def _stored_as(key: str, *, omit_none: bool = False) -> dict[str, Any]:
    """A field's metadata: its value is stored under JSON key ``key`` (and, ``omit_none``,
    left out when it is None: a figure older records lack)."""
    return {"key": key, "omit_none": omit_none}


#: A field's metadata: left out of the JSON when it is None (the file never had it null).
_OMIT_NONE = {"omit_none": True}


class _Flat:
    """A record whose fields are keys of the run's flat JSON object."""

    def to_json(self) -> Json:
        """The record's keys and values, as the results file holds them."""
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.metadata.get("key", f.name)] = value
        return out

    @classmethod
    def from_json(cls, raw: Json) -> Self | None:
        """The record of ``raw``; None when a key of a field without default is missing."""
        values = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            key = f.metadata.get("key", f.name)
            if key in raw:
                values[f.name] = raw[key]
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                return None
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class RunSettings(_Flat):
    """What the run was: N members, R replicas, the timings (s) and the machine.

    ``cpu_quota``/``squeeze`` are cores per replica (None when not limited), ``squeeze_for``
    seconds (None without a squeeze); ``real_members`` is how many real member apiservers
    answer the N virtual members, through ``proxies`` proxy processes; ``loadavg_before`` the
    machine's 1-minute load average before the run; ``cpu_limit`` how replicas are limited
    (``_cpu_limit.limit_kind``), None without a limit.
    """

    n: int
    r: int
    cpu_quota: float | None
    squeeze: float | None
    squeeze_for: float | None
    probe_interval: float
    lease_duration: float
    renew_interval: float
    rest: float
    real_members: int
    proxies: int
    loadavg_before: float
    commit: str | None
    cpu_limit: str | None

    @property
    def place(self) -> tuple[int, int, float, float]:
        """(N, R, CPU quota or 0, squeeze or 0): a quota or squeeze run does not replace a
        free one (``results.merge`` keys the file by it)."""
        return self.n, self.r, self.cpu_quota or 0.0, self.squeeze or 0.0


@dataclass(frozen=True, kw_only=True)
class SetUp(_Flat):
    """Before the replicas: the two floors and the registrations' writing, seconds."""

    floor_s: float = field(metadata=_stored_as("floor"))
    #: None in records from before the member floor existed.
    member_floor_s: float | None = field(
        default=None, metadata=_stored_as("member_floor", omit_none=True)
    )
    registrations_s: float = field(metadata=_stored_as("registrations"))


class CurvePoint(TypedDict):
    """One sample of the cold start's curve, every 2 s (``phases.sample_curve``)."""

    t: float  # seconds since the replicas were spawned
    profiles: int
    full: int  # profiles at full status
    tokens: int  # consumer token Secrets
    cores: Cores  # since the previous sample


@dataclass(frozen=True, kw_only=True)
class ColdStart(_Flat):
    """From spawning the replicas until every profile has full status.

    ``hub_requests_per_member``: the ten largest ``VERB resource`` counts over N (every
    client's, the benchmark's watch included); ``member_requests_per_member``: requests
    through the proxies over N.
    """

    seconds: float = field(metadata=_stored_as("cold_start"))
    first_profile_s: float = field(metadata=_stored_as("first_profile"))
    #: Replica -> seconds from its spawn to joining its shard group (-1: no log line).
    joined_after_s: dict[str, float] = field(metadata=_stored_as("joined_after"))
    cores: Cores = field(metadata=_stored_as("cold_cores"))
    hub_requests_per_member: dict[str, float] = field(
        metadata=_stored_as("cold_hub_requests_per_member")
    )
    member_requests_per_member: float = field(
        metadata=_stored_as("cold_member_requests_per_member")
    )


@dataclass(frozen=True, kw_only=True)
class Tokens(_Flat):
    """Until every consumer token Secret exists, seconds from the spawn."""

    seconds: float = field(metadata=_stored_as("tokens"))
    #: Member requests through the proxies from the spawn until then.
    member_requests: float = field(metadata=_stored_as("member_requests_cold"))
    #: From every profile at full status until every token Secret.
    cores: Cores = field(metadata=_stored_as("token_cores"))


@dataclass(frozen=True, kw_only=True)
class Rest(_Flat):
    """Over the window at rest (``Settings.rest`` seconds), once every token Secret exists."""

    member_requests_per_s: float
    member_requests_peak_per_s: float  # the busiest second
    proxy_open_connections: float | None
    cores: Cores = field(metadata=_stored_as("steady_cores"))
    rss_mib: dict[str, float] = field(
        metadata=_stored_as("rss")
    )  # per replica, at the window's end
    open_fds: dict[str, int]  # per process label
    hub_writes_per_s: float
    hub_writes_by_resource: dict[str, float]  # per second, by resource[/subresource]
    #: Replica -> profiles it holds at the window's end (before any kill).
    owned: dict[str, int] = field(metadata=_stored_as("owned_before_kill"))


@dataclass(frozen=True, kw_only=True)
class PropertyChanges(_Flat):
    """Property changes one at a time, each on a distinct member, until the profile shows it."""

    count: int = field(metadata=_stored_as("changes"))
    p50_s: float = field(metadata=_stored_as("p50"))
    p99_s: float = field(metadata=_stored_as("p99"))


@dataclass(frozen=True, kw_only=True)
class Squeeze(_Flat):
    """Every replica limited to ``squeeze`` cores for ``squeeze_for`` seconds.

    Profiles saying the cluster manager is behind (most at once, at the end, ever), and how
    many of ``changes`` property changes written as it began got through.
    """

    behind_max: int = field(metadata=_stored_as("squeeze_behind_max"))
    behind_end: int = field(metadata=_stored_as("squeeze_behind_end"))
    behind_ever: int = field(metadata=_stored_as("squeeze_behind_ever"))
    changes_through: int = field(metadata=_stored_as("squeeze_changes_through"))
    changes: int = field(metadata=_stored_as("squeeze_changes"))
    throttled_s: dict[str, float] = field(
        metadata=_stored_as("squeeze_throttled_s")
    )  # per replica cgroup


@dataclass(frozen=True, kw_only=True)
class Drain(_Flat):
    """From lifting the squeeze's limit: seconds until a second change on every sample member
    shows (``fresh_s``) and until no profile says behind (``calm_s``)."""

    fresh_s: float = field(metadata=_stored_as("drain_fresh"))
    calm_s: float = field(metadata=_stored_as("drain_calm"))
    behind_end: int = field(
        metadata=_stored_as("drain_behind_end")
    )  # saying behind again at the end


@dataclass(frozen=True, kw_only=True)
class Kill(_Flat):
    """SIGKILL of the replica holding most profiles, and a property change on each of them.

    Seconds from the kill: ``writes_done_s`` (the changes written), ``fresh_s`` (all shown
    by a live replica), the quantiles (first, 50%, 90%, 99%) of the claims and of the fresh
    ones (absent from records before them). The takeover's cost per member taken over (hub
    requests by ``VERB resource``, member requests). ``bad_holders``: holders that did other
    than stay, or move once from the victim to its rendezvous owner; ``victim_writes``:
    status changes as the victim after a hub write that followed the kill; ``lost``:
    profiles deleted or missing.
    """

    victim: str
    members: int = field(metadata=_stored_as("victim_members"))
    writes_done_s: float = field(metadata=_stored_as("kill_writes_done"))
    fresh_s: float = field(metadata=_stored_as("kill_fresh"))
    claimed_quantiles: dict[str, float] | None = field(
        default=None, metadata=_stored_as("kill_claimed_quantiles", omit_none=True)
    )
    fresh_quantiles: dict[str, float] | None = field(
        default=None, metadata=_stored_as("kill_fresh_quantiles", omit_none=True)
    )
    hub_requests_per_member: dict[str, float] = field(
        metadata=_stored_as("kill_hub_requests_per_member")
    )
    member_requests_per_member: float = field(
        metadata=_stored_as("kill_member_requests_per_member")
    )
    bad_holders: int = field(metadata=_stored_as("kill_bad_holders"))
    victim_writes: int = field(metadata=_stored_as("kill_victim_writes"))
    lost: int = field(metadata=_stored_as("kill_lost"))


@dataclass(frozen=True, kw_only=True)
class Join(_Flat):
    """One more replica after the kill: holders changed against the rendezvous prediction.

    ``expected_moves``: what rendezvous predicts; ``naive_moves``: N over the ``live_after``
    replicas; ``moved``: profiles whose holder changed; ``bad_holders``: changes other than
    to the newcomer where rendezvous says so; ``settled_s``: until every profile has its new
    holder and full status.
    """

    newcomer: str
    expected_moves: int = field(metadata=_stored_as("join_expected_moves"))
    naive_moves: float = field(metadata=_stored_as("join_naive_moves"))
    live_after: int = field(metadata=_stored_as("join_live_after"))
    settled_s: float = field(metadata=_stored_as("join_settled"))
    moved: int = field(metadata=_stored_as("join_moved"))
    bad_holders: int = field(metadata=_stored_as("join_bad_holders"))


@dataclass(frozen=True, kw_only=True)
class Watched(_Flat):
    """What the two watches saw, per phase window (``cold``, ``rest``, ``squeeze``, ``drain``,
    ``kill_join``, ``all``: from the spawn to the teardown).

    False health transitions (ControlPlaneHealthy away from True: no member goes down),
    shard membership changes the benchmark did not cause, Lease renewal lateness (max and
    p99, seconds; None when no renewal fell in the window).
    """

    false_transitions: dict[str, int]
    shard_changes: dict[str, int]
    lease_lateness_max_s: dict[str, float | None] = field(metadata=_stored_as("lease_lateness_max"))
    lease_lateness_p99_s: dict[str, float | None] = field(metadata=_stored_as("lease_lateness_p99"))
    false_transition_profiles: int
    false_transition_reasons: dict[str, int]  # "status/reason" -> count
    false_transitions_at_handover: int  # by a holder other than the one that saw it True
    shard_change_log: list[list[Any]]  # [seconds since the spawn, replica, new|gone|back]
    #: Phase -> [start, end], seconds since the spawn.
    windows: dict[str, list[float]] = field(metadata=_stored_as("phases"))


@dataclass(frozen=True, kw_only=True)
class End(_Flat):
    """At the teardown: the replicas' last /metrics, CPU throttling, what was lost."""

    replica_metrics: dict[str, Metrics]  # the replicas running at the end
    cpu_throttled_s: dict[str, float] | None = field(
        default=None, metadata=_OMIT_NONE
    )  # with a CPU limit only
    deleted: int  # profile deletions the watch saw
    tracebacks: int  # in the replicas' logs
    exit_codes: dict[str, int | None]


@dataclass(frozen=True, kw_only=True)
class Run:
    """One (N, R) run of the manager mode: its phases' records, None where it did not get.

    ``cold_curve`` and ``replica_scrapes`` (label -> replica -> samples, at ``cold``,
    ``rest_start``, ``rest_end``, ``squeeze_start``, ``squeeze_end``) grow as the run goes;
    ``kill_cores`` covers the kill and the join; ``count_end`` is the profiles seen once
    every phase passed; ``error`` (and ``full_at_error``, the profiles at full status then)
    says why a run stopped early.
    """

    settings: RunSettings
    setup: SetUp
    cold_curve: list[CurvePoint]
    replica_scrapes: dict[str, dict[str, Metrics]]
    cold: ColdStart | None = None
    tokens: Tokens | None = None
    rest: Rest | None = None
    property_changes: PropertyChanges | None = None
    squeeze: Squeeze | None = None
    drain: Drain | None = None
    kill: Kill | None = None
    join: Join | None = None
    kill_cores: Cores | None = None
    count_end: int | None = None
    error: str | None = None
    full_at_error: int | None = None
    watched: Watched | None = None
    end: End | None = None

    def to_json(self) -> Json:
        """The flat object of the results file: every record's keys, then the run's own."""
        out: Json = {}
        for record in self._records():
            if record is not None:
                out.update(record.to_json())
        out["cold_curve"] = self.cold_curve
        out["replica_scrapes"] = self.replica_scrapes
        for name in ("kill_cores", "count_end", "error", "full_at_error"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def _records(self) -> tuple[_Flat | None, ...]:
        return (
            self.settings,
            self.setup,
            self.cold,
            self.tokens,
            self.rest,
            self.property_changes,
            self.squeeze,
            self.drain,
            self.kill,
            self.join,
            self.watched,
            self.end,
        )

    @classmethod
    def from_json(cls, raw: Json) -> Run:
        """The run of a results-file object (of the manager mode: no ``mode`` key).

        Raises:
            ValueError: ``raw`` lacks the settings or the set-up of a run.
        """
        settings, setup = RunSettings.from_json(raw), SetUp.from_json(raw)
        if settings is None or setup is None:
            raise ValueError(f"not a fleet_scale run record: keys {sorted(raw)}")
        return cls(
            settings=settings,
            setup=setup,
            cold_curve=raw.get("cold_curve") or [],
            replica_scrapes=raw.get("replica_scrapes") or {},
            cold=ColdStart.from_json(raw),
            tokens=Tokens.from_json(raw),
            rest=Rest.from_json(raw),
            property_changes=PropertyChanges.from_json(raw),
            squeeze=Squeeze.from_json(raw),
            drain=Drain.from_json(raw),
            kill=Kill.from_json(raw),
            join=Join.from_json(raw),
            watched=Watched.from_json(raw),
            end=End.from_json(raw),
            kill_cores=raw.get("kill_cores"),
            count_end=raw.get("count_end"),
            error=raw.get("error"),
            full_at_error=raw.get("full_at_error"),
        )
