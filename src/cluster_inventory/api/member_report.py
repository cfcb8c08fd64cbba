"""``cluster-inventory.dev/v1alpha1``: MemberReport, what a pull-mode member's agent reports.

The hub creates a MemberReport (``NS/NAME``) when it accepts the member; the member's agent
writes its ``status`` only (``docs/agent.md``). Field names and limits are those of the CRD
(``crds/cluster-inventory.dev_memberreports.yaml``), so a status that validates here is
accepted by the API server; ``tests/unit/api/test_member_report.py`` keeps the two in step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from cluster_inventory.api._base import ConditionStatus, KubeList, KubeModel, KubeObject, Time

__all__ = [
    "API_VERSION",
    "REPORTED_PROPERTIES_MAX",
    "REPORTED_PROPERTY_VALUE_MAX_LENGTH",
    "APIServerHealth",
    "MemberReport",
    "MemberReportList",
    "MemberReportStatus",
    "ReportedProperty",
]

#: ``apiVersion``: the project domain as the group (``constants.MEMBER_REPORT_CRD``).
API_VERSION = "cluster-inventory.dev/v1alpha1"
#: ``status.properties`` holds at most this many entries (the CRD's ``maxItems``).
REPORTED_PROPERTIES_MAX = 256
#: ``status.properties[].value`` limit: a ClusterProperty's value may be long (the
#: ClusterProfile's 1024 applies only when the hub copies it into a profile).
REPORTED_PROPERTY_VALUE_MAX_LENGTH = 128000


class APIServerHealth(KubeModel):
    """``status.apiServerHealth``: the member API server's ``/readyz``, probed from inside.

    Attributes:
        status: ``"True"``, ``"False"`` or ``"Unknown"``.
        reason: CamelCase reason, as the cluster manager gives ``ControlPlaneHealthy`` for
            the same answer (``APIServerReady``, ``ReadyzCheckFailed``, ...).
        message: What failed, for a person.
        last_probe_time: When the probe that decided it ran (a change of this time alone
            is never written).
    """

    status: ConditionStatus
    reason: str | None = Field(default=None, max_length=1024)
    message: str | None = Field(default=None, max_length=32768)
    last_probe_time: Time | None = Field(default=None, alias="lastProbeTime")


class ReportedProperty(KubeModel):
    """One ``status.properties`` entry: a ClusterProperty of the member (KEP-2149).

    Attributes:
        name: The ClusterProperty's name.
        value: Its ``spec.value``, exactly.
        last_observed_time: When the agent first saw this value.
    """

    name: str = Field(max_length=253)
    value: str = Field(max_length=REPORTED_PROPERTY_VALUE_MAX_LENGTH)
    last_observed_time: Time | None = Field(default=None, alias="lastObservedTime")


class MemberReportStatus(KubeModel):
    """``status``: the member as its agent sees it.

    Attributes:
        member_id: UID of the member's ``kube-system`` namespace.
        kubernetes_version: ``gitVersion`` of the member's ``/version``.
        server: API server URL consumers should use for the member.
        certificate_authority_data: Base64 PEM CA bundle of that server.
        proxy_url: Proxy consumers must use to reach it.
        cluster_proxy: The agent keeps tunnels to the hub's cluster proxy.
        tls_server_name: Name consumers behind the cluster proxy verify the member's
            serving certificate against.
        agent_version: Version of the agent writing the report.
        api_server_health: The member API server's own health.
        properties: The member's ClusterProperty objects, by name.
    """

    member_id: str | None = Field(default=None, alias="memberID", max_length=128)
    kubernetes_version: str | None = Field(default=None, alias="kubernetesVersion", max_length=64)
    server: str | None = Field(default=None, max_length=2048)
    certificate_authority_data: str | None = Field(default=None, alias="certificateAuthorityData")
    proxy_url: str | None = Field(default=None, alias="proxyURL", max_length=2048)
    cluster_proxy: bool | None = Field(default=None, alias="clusterProxy")
    tls_server_name: str | None = Field(default=None, alias="tlsServerName", max_length=253)
    agent_version: str | None = Field(default=None, alias="agentVersion", max_length=64)
    api_server_health: APIServerHealth | None = Field(default=None, alias="apiServerHealth")
    properties: list[ReportedProperty] | None = Field(
        default=None, max_length=REPORTED_PROPERTIES_MAX
    )


class MemberReport(KubeObject):
    """A member's report on the hub (namespaced; named after the member)."""

    api_version: Literal["cluster-inventory.dev/v1alpha1"] = Field(
        default="cluster-inventory.dev/v1alpha1", alias="apiVersion"
    )
    kind: Literal["MemberReport"] = "MemberReport"
    spec: dict[str, Any] | None = None
    status: MemberReportStatus | None = None


class MemberReportList(KubeList):
    """A list of MemberReports."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["MemberReportList"] = "MemberReportList"
    items: list[MemberReport] = Field(default_factory=list)
