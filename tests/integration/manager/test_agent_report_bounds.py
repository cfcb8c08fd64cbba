"""A hostile agent's report on real control planes: every field checked before it is copied.

The attacker is an accepted member's own agent identity (``cluster-inventory:agent:NAME``),
which may write its MemberReport's status and renew its Lease, and writes them by hand:
values the report's CRD accepts but the ClusterProfile schema or the cluster manager's
bounds refuse (``docs/agent.md``, "The hub side"). Each field is written at its bound (it
reaches the profile) and past it (the last good value stays, ``ReportValid`` names the
field, the other fields still flow), then good again (``ReportValid`` is True again). On
the code before these checks the profile was wedged in a 422 retry loop (it kept saying
True while the report said False), or carried what the member said.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from cluster_inventory import kube
from cluster_inventory.api.constants import (
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_REPORT_VALID,
    LABEL_INVENTORY_MEMBER_ID,
    REASON_INVALID_REPORT_FIELD,
)
from cluster_inventory.manager.admin.agents import accept
from cluster_inventory.testing import CertificateAuthority, Fleet
from tests.support.hub.manager import Harness, running_manager
from tests.support.waiting import eventually

NAME = "edge-bounds"
MEMBER_ID = "m" * 63  # a label value at its limit
SERVER = "https://edge-1.example.test:6443"
PROXY = "socks5://127.0.0.1:1080"  # a tunnel beside each consumer: loopback is allowed
MAX_PROPERTIES = 3
MAX_VALUE = 16
MAX_MESSAGE = 40
CA_PEM = CertificateAuthority("edge-ca").cert_pem
_KEY_BLOCK = (
    b"-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49\n-----END PRIVATE KEY-----\n"
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _good(step: int) -> dict[str, Any]:
    """A report with every field at its bound; ``step`` is in the version and a property."""
    return {
        "memberID": MEMBER_ID,
        "kubernetesVersion": f"v1.36.{step}",
        "server": SERVER,
        "certificateAuthorityData": _b64(CA_PEM),
        "proxyURL": PROXY,
        "agentVersion": "hostile",
        "apiServerHealth": {
            "status": "True",
            "reason": "APIServerReady",
            "message": "r" * MAX_MESSAGE,
        },
        "properties": [
            {"name": "long.example.test", "value": "v" * MAX_VALUE},
            {"name": "region.example.test", "value": "eu"},
            {"name": "step.example.test", "value": str(step)},
        ],
    }


def _conditions(profile: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (profile.get("status") or {}).get("conditions") or ()}


def _properties(profile: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in (profile.get("status") or {}).get("properties") or ()}


def _cluster(profile: dict[str, Any]) -> dict[str, Any]:
    providers = (profile.get("status") or {}).get("accessProviders") or ()
    return dict(providers[0]["cluster"]) if providers else {}


@dataclass
class Hostile:
    """The accepted member's agent identity, writing its report by hand."""

    h: Harness
    inventory: str
    agent: kube.ApiClient

    async def report(self, status: dict[str, Any]) -> None:
        await kube.replace_status(
            self.agent, kube.MEMBER_REPORTS, NAME, self.h.namespace, status, field_manager="t"
        )

    async def profile(self) -> dict[str, Any]:
        return await self.h.profile(self.inventory, NAME)

    async def until(self, what: str, probe: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            p = await self.profile()
            return p if probe(p) else None

        return await eventually(check, timeout=15, what=what)


@contextlib.asynccontextmanager
async def _hostile(
    fleet: Fleet, test_namespace: str, lease_duration: int = 60, **config: Any
) -> AsyncIterator[Hostile]:
    async with running_manager(
        fleet,
        test_namespace,
        agent_report_max_properties=MAX_PROPERTIES,
        agent_report_max_property_value=MAX_VALUE,
        agent_report_max_message=MAX_MESSAGE,
        agent_report_max_ca_bytes=len(CA_PEM),
        **config,
    ) as h:
        inventory = await h.inventory("edge", "edge")
        acceptance = await accept(
            h.hub_client, test_namespace, NAME, ["edge"], lease_duration=lease_duration
        )
        groups = list(acceptance.agent_groups)
        async with await h.hub.client(acceptance.agent_user, groups) as agent:
            # RBAC reaches the authorizer through its informers: wait until it applies.
            await eventually(
                lambda: kube.get(agent, kube.MEMBER_REPORTS, NAME, test_namespace),
                what="the agent identity may read its MemberReport",
            )
            yield Hostile(h, inventory, agent)


def _valid(profile: dict[str, Any]) -> str:
    return str(_conditions(profile).get(CONDITION_REPORT_VALID, {}).get("status", ""))


def _copied(step: int) -> Callable[[dict[str, Any]], bool]:
    """The profile carries the good report of ``step`` and says every field was copied."""

    def probe(p: dict[str, Any]) -> bool:
        return (
            _valid(p) == "True"
            and (p.get("status") or {}).get("version", {}).get("kubernetes") == f"v1.36.{step}"
            and _properties(p).get("step.example.test") == str(step)
        )

    return probe


@dataclass(frozen=True)
class Case:
    """One field past its bound: how the report breaks it, what the profile keeps."""

    field: str
    bad: Callable[[dict[str, Any]], None]
    kept: Callable[[dict[str, Any]], bool]
    # The field that shows the rest still flows: the version, or (when the version or the
    # whole property list is the field refused) the other one.
    marker: str = "version"


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def bad(status: dict[str, Any]) -> None:
        status[key] = value

    return bad


def _health(**changes: str) -> Callable[[dict[str, Any]], None]:
    def bad(status: dict[str, Any]) -> None:
        status["apiServerHealth"] = {**status["apiServerHealth"], **changes}

    return bad


def _prop(name: str, **changes: str) -> Callable[[dict[str, Any]], None]:
    def bad(status: dict[str, Any]) -> None:
        for p in status["properties"]:
            if p["name"] == name:
                p.update(changes)

    return bad


def _one_more_property(status: dict[str, Any]) -> None:
    status["properties"].append({"name": "extra.example.test", "value": "x"})


def _server_kept(p: dict[str, Any]) -> bool:
    return _cluster(p).get("server") == SERVER


def _proxy_kept(p: dict[str, Any]) -> bool:
    return _cluster(p).get("proxy-url") == PROXY


def _ca_kept(p: dict[str, Any]) -> bool:
    return base64.b64decode(_cluster(p).get("certificate-authority-data", "")) == CA_PEM


CASES = [
    Case(
        "status.memberID",
        _set("memberID", "m" * 64),
        lambda p: p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] == MEMBER_ID,
    ),
    Case(
        "status.kubernetesVersion",
        _set("kubernetesVersion", "1.36\x1b[2J"),
        lambda p: p["status"]["version"]["kubernetes"].startswith("v1.36."),
        marker="property",
    ),
    Case("status.server", _set("server", "http://edge-1.example.test:6443"), _server_kept),
    Case("status.server", _set("server", "https://169.254.169.254/"), _server_kept),
    Case("status.server", _set("server", "https://metadata.google.internal"), _server_kept),
    Case("status.server", _set("server", "https://admin:secret@edge-1.example.test"), _server_kept),
    Case("status.proxyURL", _set("proxyURL", "ftp://proxy.example.test:21"), _proxy_kept),
    Case("status.proxyURL", _set("proxyURL", "http://[fe80::1]:3128"), _proxy_kept),
    Case(
        "status.certificateAuthorityData",
        _set("certificateAuthorityData", _b64(CA_PEM + b"\n")),  # one byte past the bound
        _ca_kept,
    ),
    Case(
        "status.certificateAuthorityData",
        _set("certificateAuthorityData", _b64(_KEY_BLOCK)),
        _ca_kept,
    ),
    Case(
        "status.apiServerHealth.message",
        _health(message="r" * (MAX_MESSAGE + 1)),
        lambda p: (
            _conditions(p)[CONDITION_CONTROL_PLANE_HEALTHY]["status"] == "True"
            and "r" * (MAX_MESSAGE + 1)
            not in _conditions(p)[CONDITION_CONTROL_PLANE_HEALTHY]["message"]
        ),
    ),
    Case(
        "status.properties",
        _one_more_property,
        lambda p: "extra.example.test" not in _properties(p) and len(_properties(p)) == 3,
    ),
    Case(
        "status.properties[long.example.test]",
        _prop("long.example.test", value="v" * (MAX_VALUE + 1)),
        lambda p: _properties(p)["long.example.test"] == "v" * MAX_VALUE,
        marker="property",
    ),
    Case(
        "status.properties[region.example.test]",
        _prop("region.example.test", value="us", lastObservedTime="0001-01-01T00:30:00Z"),
        lambda p: _properties(p)["region.example.test"] == "eu",
        marker="property",
    ),
]


async def test_each_report_field_at_its_bound_is_copied_and_past_it_keeps_its_last_good_value(
    fleet: Fleet, test_namespace: str
) -> None:
    async with _hostile(fleet, test_namespace) as hostile:
        step = 0
        await hostile.report(_good(step))
        p = await hostile.until("every field at its bound copied", _copied(step))
        assert p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] == MEMBER_ID
        assert _cluster(p)["server"] == SERVER and _proxy_kept(p) and _ca_kept(p)
        assert _properties(p)["long.example.test"] == "v" * MAX_VALUE
        assert _conditions(p)[CONDITION_CONTROL_PLANE_HEALTHY]["message"] == "r" * MAX_MESSAGE
        for case in CASES:
            step += 1
            status = _good(step)
            if case.marker == "property":  # the version holds the last good one
                status["kubernetesVersion"] = f"v1.36.{step - 1}"
            case.bad(status)
            await hostile.report(status)

            def refused(p: dict[str, Any], case: Case = case, step: int = step) -> bool:
                condition = _conditions(p).get(CONDITION_REPORT_VALID, {})
                version = (p.get("status") or {}).get("version", {}).get("kubernetes")
                flowed = (
                    _properties(p).get("step.example.test") == str(step)
                    if case.marker == "property"
                    else version == f"v1.36.{step}"
                )
                return (
                    condition.get("status") == "False"
                    and f"{case.field}:" in condition.get("message", "")
                    and flowed
                )

            p = await hostile.until(f"{case.field} refused, the rest copied", refused)
            assert case.kept(p), (case.field, p["status"])
            message = _conditions(p)[CONDITION_REPORT_VALID]["message"]
            assert _conditions(p)[CONDITION_REPORT_VALID]["reason"] == REASON_INVALID_REPORT_FIELD
            assert "secret" not in message and "\x1b" not in message  # never quoted back
            step += 1
            await hostile.report(_good(step))
            await hostile.until(f"{case.field} good again: ReportValid True", _copied(step))
        events = await kube.list_objects(
            hostile.h.hub_client,
            kube.EVENTS,
            test_namespace,
            field_selector=f"regarding.name={NAME},reason={REASON_INVALID_REPORT_FIELD}",
        )
        assert events["items"] and all(e["type"] == "Warning" for e in events["items"])
        assert {e["regarding"]["kind"] for e in events["items"]} == {"MemberReport"}


async def test_a_first_report_bad_in_a_field_leaves_it_out_until_it_is_good(
    fleet: Fleet, test_namespace: str
) -> None:
    """No last good value yet: the field is left out (here: no access provider at all)."""
    async with _hostile(fleet, test_namespace) as hostile:
        status = _good(1)
        status["server"] = "https://[fd00:ec2::254]:6443"  # AWS's metadata service over IPv6
        await hostile.report(status)

        def left_out(p: dict[str, Any]) -> bool:
            condition = _conditions(p).get(CONDITION_REPORT_VALID, {})
            return condition.get("status") == "False" and "no good value yet" in condition.get(
                "message", ""
            )

        p = await hostile.until("the bad server left out", left_out)
        assert not _cluster(p)
        assert _properties(p).get("step.example.test") == "1"  # the rest flows
        await hostile.report(_good(2))
        p = await hostile.until("the good server copied", _copied(2))
        assert _cluster(p)["server"] == SERVER


async def test_a_reason_the_profile_schema_refuses_never_wedges_the_profile(
    fleet: Fleet, test_namespace: str
) -> None:
    """The report says False with a reason the ClusterProfile refuses: the profile says False.

    Before the checks, the status write was refused (422) again and again, and the profile
    kept saying True. So did a member id that is no label value, a property time at the
    calendar's start (written as ``1-01-01T00:30:00Z``) and a value holding DEL or a C1
    control (400: the apply body's YAML refused it).
    """
    async with _hostile(fleet, test_namespace) as hostile:
        await hostile.report(_good(1))
        await hostile.until("healthy", _copied(1))
        status = _good(2)
        status["apiServerHealth"] = {
            "status": "False",
            "reason": "etcd is down!",
            "message": "[-]etcd failed",
        }
        status["memberID"] = "not a label value/"
        status["properties"][1]["lastObservedTime"] = "0001-01-01T00:30:00Z"
        # Kept exactly, as KEP-4322 asks (the CLI escapes it): YAML, an apply body's
        # parser, refuses DEL and C1 controls raw, and did so with a 400 at every retry.
        status["properties"][0]["value"] = "\x1b[31m\x7f\x9b"
        await hostile.report(status)

        def unhealthy(p: dict[str, Any]) -> bool:
            healthy = _conditions(p).get(CONDITION_CONTROL_PLANE_HEALTHY, {})
            return (
                healthy.get("status") == "False" and _properties(p).get("step.example.test") == "2"
            )

        p = await hostile.until("the profile follows the report's False", unhealthy)
        healthy = _conditions(p)[CONDITION_CONTROL_PLANE_HEALTHY]
        assert (healthy["reason"], healthy["message"]) == ("AgentReported", "[-]etcd failed")
        assert p["metadata"]["labels"][LABEL_INVENTORY_MEMBER_ID] == MEMBER_ID
        assert _properties(p)["long.example.test"] == "\x1b[31m\x7f\x9b"
        message = _conditions(p)[CONDITION_REPORT_VALID]["message"]
        for field in (
            "status.memberID",
            "status.apiServerHealth.reason",
            "status.properties[region.example.test]",
        ):
            assert field in message, message


async def test_an_agents_own_68_year_lease_is_ignored_and_its_member_goes_stale(
    fleet: Fleet, test_namespace: str
) -> None:
    """The grace is the manager's: a ``leaseDurationSeconds`` past its bounds counts for nothing.

    The agent renews once naming 2^31 - 1 s (68 years), reports, and stops: its member is
    healthy, then with the manager's own 2 s x 2 turns Unknown (before, it stayed fresh for
    136 years).
    """
    async with _hostile(
        fleet,
        test_namespace,
        lease_duration=2,
        agent_lease_duration=2.0,
        agent_lease_duration_min=1.0,
        agent_lease_duration_max=10.0,
        agent_heartbeat_multiple=2.0,
    ) as hostile:
        renewed = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        await kube.request(
            hostile.agent,
            "PATCH",
            kube.LEASES.path(test_namespace, NAME),
            body={"spec": {"leaseDurationSeconds": 2**31 - 1, "renewTime": renewed}},
            content_type="application/merge-patch+json",
        )
        await hostile.report(_good(1))
        await hostile.until("healthy on the renewal", _copied(1))

        def stale(p: dict[str, Any]) -> bool:
            healthy = _conditions(p).get(CONDITION_CONTROL_PLANE_HEALTHY, {})
            return healthy.get("reason") == "AgentHeartbeatStale"

        p = await hostile.until("the member stale on the manager's own grace", stale)
        message = _conditions(p)[CONDITION_CONTROL_PLANE_HEALTHY]["message"]
        assert "lease duration 2 s x 2" in message and "outside the manager's 1-10 s" in message
