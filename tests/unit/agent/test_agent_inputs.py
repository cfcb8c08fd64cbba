"""The agent's settings and its state directory are checked before it acts (docs/agent.md)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cluster_inventory.agent import (
    AgentConfigError,
    IdentityStore,
    ReportingConfig,
    StateDirError,
    stored_member,
)
from cluster_inventory.agent.identity import AgentIdentity, new_private_key
from cluster_inventory.api.agents import agent_user
from cluster_inventory.testing import CertificateAuthority
from tests.support.data.certificates import T0, bootstrap_connection, certificate

_BASE = {"name": "edge-1", "namespace": "cluster-inventory-system"}


@pytest.mark.parametrize(
    ("changes", "field", "problem"),
    [
        ({"server": "http://10.0.0.1:6443"}, "server", "scheme https and a host"),
        ({"server": "https://"}, "server", "scheme https and a host"),
        ({"server": "https://10.0.0.1:99999"}, "server", "bad port"),
        ({"server": "https://x.example/" + "a" * 2100}, "server", "at most 2048"),
        ({"proxy_url": "ftp://bastion:21"}, "proxy_url", "http or https or socks5"),
        ({"proxy_url": "socks5://"}, "proxy_url", "and a host"),
        ({"ca_pem": b"not a certificate"}, "ca_pem", "not a PEM certificate bundle"),
        (
            {"ca_pem": b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
            "ca_pem",
            "not a PEM",
        ),
        ({"rejection_window": -1.0}, "rejection_window", "negative"),
        ({"consumer_token_lifetime": 599}, "consumer_token_lifetime", "under 600"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_field(
    changes: dict[str, object], field: str, problem: str
) -> None:
    with pytest.raises(AgentConfigError) as refused:
        ReportingConfig(**{**_BASE, **changes})  # type: ignore[arg-type]
    assert refused.value.field == field
    assert problem in refused.value.problem


def test_good_settings_pass_and_the_window_defaults_to_the_lease_duration() -> None:
    ca = CertificateAuthority("member-ca").cert_pem
    config = ReportingConfig(
        **_BASE,
        server="https://10.0.0.10:6443",
        ca_pem=ca + ca,  # a bundle
        proxy_url="socks5://127.0.0.1:1080",
        lease_duration=40,
    )
    assert config.window == 40
    assert ReportingConfig(**_BASE, rejection_window=0).window == 0


def test_prepare_makes_a_private_directory_before_anything_else(tmp_path: Path) -> None:
    store = IdentityStore(tmp_path / "a" / "state")
    store.prepare()
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert list(store.directory.iterdir()) == []  # the write test leaves nothing


@pytest.mark.parametrize("how", ["a file", "under a file"])
def test_a_directory_that_cannot_be_used_is_a_state_dir_error(tmp_path: Path, how: str) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    store = IdentityStore(blocker if how == "a file" else blocker / "state")
    with pytest.raises(StateDirError) as refused:
        store.prepare()
    assert str(refused.value).startswith(f"state directory {store.directory}: ")
    assert isinstance(refused.value, OSError)


def test_one_agent_per_directory_and_unjoin_waits_for_it_to_stop(tmp_path: Path) -> None:
    store = IdentityStore(tmp_path / "state")
    with store.locked():
        assert store.lock_path.read_text().strip().isdigit()
        with pytest.raises(StateDirError, match="in use by a running agent"):
            with IdentityStore(store.directory).locked():
                pass
        with pytest.raises(StateDirError, match="in use by a running agent"):
            store.remove()
    assert not store.lock_path.exists()


def test_remove_takes_exactly_what_the_agent_wrote(tmp_path: Path) -> None:
    store = IdentityStore(tmp_path / "state")
    key = new_private_key()
    identity = AgentIdentity(
        name="edge-1", key_pem=key, cert_pem=certificate(key, agent_user("edge-1"), T0, 24)
    )
    store.save(identity, bootstrap_connection())
    assert stored_member(store.directory) == "edge-1"
    mine = store.directory / "notes.txt"
    mine.write_text("the admin's")
    removed = store.remove()
    assert removed == [store.key_path, store.cert_path, store.kubeconfig_path]
    assert sorted(store.directory.iterdir()) == [mine]  # someone else's file stays, so does the dir
    mine.unlink()
    store.save(identity, bootstrap_connection())
    store.lock_path.write_text("4242\n")  # an agent killed with SIGKILL leaves its lock
    assert store.remove()[-2:] == [store.lock_path, store.directory]
    assert not store.directory.exists()
    assert store.remove() == []  # nothing left: nothing to do
    assert stored_member(store.directory) is None


def test_a_relative_state_dir_gives_a_kubeconfig_that_loads_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = IdentityStore(Path("agent-state"))
    key = new_private_key()
    cert = certificate(key, agent_user("edge-1"), T0, 24)
    store.save(AgentIdentity(name="edge-1", key_pem=key, cert_pem=cert), bootstrap_connection())
    monkeypatch.chdir(tmp_path.parent)
    from cluster_inventory import kube

    conn = kube.connection_from_kubeconfig(tmp_path / "agent-state" / "kubeconfig")
    assert conn.client_cert_data == cert and conn.client_key_data == key
