"""Hypothesis strategies for valid ClusterProfile documents (as the API server stores them)."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from hypothesis import strategies as st

from cluster_inventory.api import format_time

dns_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)
non_empty = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=60
)
times = st.datetimes(
    min_value=dt.datetime(2000, 1, 1),
    max_value=dt.datetime(2100, 1, 1),
    timezones=st.just(dt.UTC),
).map(lambda t: format_time(t.replace(microsecond=0)))
reasons = st.from_regex(r"\A[A-Za-z]([A-Za-z0-9_,:]{0,20}[A-Za-z0-9_])?\Z")
property_names = st.from_regex(r"\A[a-z0-9]([-a-z0-9.]{0,30}[a-z0-9])?\Z")


@st.composite
def conditions(draw: st.DrawFn) -> list[dict[str, Any]]:
    types = draw(
        st.lists(
            st.sampled_from(["ControlPlaneHealthy", "Joined", "example.com/Ready"]),
            unique=True,
            max_size=3,
        )
    )
    out = []
    for kind in types:
        cond = {
            "type": kind,
            "status": draw(st.sampled_from(["True", "False", "Unknown"])),
            "reason": draw(reasons),
            "message": draw(text),
            "lastTransitionTime": draw(times),
        }
        if draw(st.booleans()):
            cond["observedGeneration"] = draw(st.integers(0, 2**40))
        out.append(cond)
    return out


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": f"https://{draw(dns_label)}.example:6443"}
    if draw(st.booleans()):
        cluster["certificate-authority-data"] = base64.b64encode(
            draw(st.binary(min_size=1, max_size=64))
        ).decode()
    if draw(st.booleans()):
        cluster["tls-server-name"] = draw(dns_label)
    if draw(st.booleans()):
        cluster["insecure-skip-tls-verify"] = draw(st.booleans())
    if draw(st.booleans()):
        cluster["proxy-url"] = f"http://{draw(dns_label)}:3128"
    if draw(st.booleans()):
        cluster["disable-compression"] = draw(st.booleans())
    if draw(st.booleans()):
        cluster["extensions"] = [
            {
                "name": "client.authentication.k8s.io/exec",
                "extension": {
                    "clusterName": draw(dns_label),
                    "extra": draw(st.lists(st.integers(-5, 5), max_size=3)),
                },
            }
        ]
    return cluster


@st.composite
def cluster_profiles(draw: st.DrawFn, namespace: str = "inv") -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterManager": {"name": draw(dns_label)}}
    if draw(st.booleans()):
        spec["displayName"] = draw(text)
    profile: dict[str, Any] = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": draw(dns_label),
            "namespace": namespace,
            "labels": {"x-k8s.io/cluster-manager": spec["clusterManager"]["name"]},
        },
        "spec": spec,
    }
    status: dict[str, Any] = {}
    if draw(st.booleans()):
        status["conditions"] = draw(conditions())
    if draw(st.booleans()):
        status["version"] = {"kubernetes": draw(st.from_regex(r"\Av1\.[0-9]{1,2}\.[0-9]\Z"))}
    if draw(st.booleans()):
        names = draw(st.lists(property_names, unique=True, max_size=4))
        props = []
        for name in names:
            prop = {"name": name, "value": draw(non_empty)}
            if draw(st.booleans()):
                prop["lastObservedTime"] = draw(times)
            props.append(prop)
        status["properties"] = props
    if draw(st.booleans()):
        names = draw(
            st.lists(
                st.sampled_from(["secretreader", "google", "kubeconfig"]),
                unique=True,
                min_size=1,
                max_size=3,
            )
        )
        status["accessProviders"] = [{"name": n, "cluster": draw(clusters())} for n in names]
    if status:
        profile["status"] = status
    return profile
