"""Which URLs a member may advertise to consumers (``api.advertised_urls``, pure)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_inventory.api.advertised_urls import (
    PROXY_URL_SCHEMES,
    SERVER_SCHEMES,
    AddressPolicy,
    url_problem,
)

DEFAULT = AddressPolicy()
STRICT = AddressPolicy(allow_loopback=False)
LOOSE = AddressPolicy(allow_link_local=True)


def _server(url: str, policy: AddressPolicy = DEFAULT) -> str | None:
    return url_problem(url, schemes=SERVER_SCHEMES, policy=policy)


@given(st.ip_addresses(network="169.254.0.0/16") | st.ip_addresses(network="fe80::/10"))
def test_every_link_local_address_is_refused_unless_allowed(address: object) -> None:
    host = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    assert _server(f"https://{host}:6443") is not None
    assert _server(f"https://{host}:6443", LOOSE) is None


@given(st.ip_addresses(network="127.0.0.0/8"))
def test_loopback_is_allowed_by_default_and_refused_when_the_manager_says_so(
    address: object,
) -> None:
    assert _server(f"https://{address}:6443") is None
    assert "loopback" in (_server(f"https://{address}:6443", STRICT) or "")


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_a_host_that_is_a_number_must_be_written_as_a_dotted_quad(number: int) -> None:
    assert "dotted-quad" in (_server(f"https://{number}") or "")
    assert "dotted-quad" in (_server(f"https://{hex(number)}") or "")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://edge.example.test:6443/k8s/clusters/c-1", None),
        ("https://10.0.0.10:6443", None),
        ("https://[2001:db8::1]:6443", None),
        ("HTTPS://edge.example.test", None),
        ("http://edge.example.test", "the scheme is http"),
        ("https://", "has no host"),
        ("https://edge.example.test:70000", "port"),
        ("https://a:b@edge.example.test", "user name or password"),
        ("https://edge.example.test#frag", "query or a fragment"),
        ("https://edge.example.test?", "query or a fragment"),
        ("https://edge .example.test", "white space"),
        ("https://edge.example.test\x00", "control character"),
        ("https://0.0.0.0", "not an address a consumer can dial"),
        ("https://[::]", "not an address a consumer can dial"),
        ("https://224.0.0.1", "not an address a consumer can dial"),
        ("https://255.255.255.255", "not an address a consumer can dial"),
        ("https://169.254.169.254", "cloud metadata"),
        ("https://[fd00:ec2::254]", "cloud metadata"),
        ("https://100.100.100.200", "cloud metadata"),
        ("https://[::ffff:169.254.169.254]", "cloud metadata"),
        ("https://metadata.google.internal.", "cloud metadata"),
        ("https://METADATA.GOOGLE.INTERNAL", "cloud metadata"),
        ("https://0251.0376.0251.0376", "dotted-quad"),
    ],
)
def test_server_urls(url: str, problem: str | None) -> None:
    found = _server(url)
    assert (found is None) if problem is None else (problem in (found or "")), found


def test_a_proxy_may_be_http_https_or_socks5_and_never_carries_a_password() -> None:
    for scheme in PROXY_URL_SCHEMES:
        assert url_problem(f"{scheme}://p:1", schemes=PROXY_URL_SCHEMES, policy=DEFAULT) is None
    problem = url_problem("socks5://u:pw@p:1", schemes=PROXY_URL_SCHEMES, policy=DEFAULT)
    assert problem is not None and "pw" not in problem
