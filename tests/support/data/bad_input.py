"""Hostile input for the bad-input campaign (issue 22), and the campaign's tally.

Strategies here build what others may write where the project reads: registration Secrets
with broken kubeconfigs, static-file entries, Cluster API objects, provider files,
ClusterProfiles with hostile status values and ``apply`` manifests. Every credential they
carry (token, client key, password, env value) contains :data:`MARKER`, so a test can
assert that no error message or log record repeats one (:func:`leaked`).

:data:`CAMPAIGN` counts what the campaign tried and what came of it; ``pytest
--campaign-report`` prints the table at the end (see tests/conftest.py), and
``bench/bad_input_campaign.py`` runs the campaign on its own.
"""

from __future__ import annotations

import base64
import copy
import os
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.support.data.strategies import cluster_profiles, dns_label

#: In every generated credential; must never appear in a message, an Event or a log record.
MARKER = "Cr3dM4rker"
#: Multiplies every campaign test's example count (bench/bad_input_campaign.py sets it).
SCALE_ENV = "CAMPAIGN_SCALE"


def campaign(examples: int) -> settings:
    """Settings of one campaign test: ``examples`` inputs times ``$CAMPAIGN_SCALE``.

    Inputs are large on purpose (huge values, 100 access providers), so the health checks
    about slow or large data are off.
    """
    scale = float(os.environ.get(SCALE_ENV) or 1)
    return settings(
        max_examples=max(1, round(examples * scale)),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# -- the tally ------------------------------------------------------------------------


@dataclass
class Campaign:
    """What the campaign tried: inputs per target, outcomes by kind, objects lost."""

    tried: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)

    def record(self, target: str, outcome: str) -> None:
        """Count one input of ``target`` and what it gave (``valid`` or ``Error field``)."""
        self.tried[target] += 1
        self.outcomes[(target, outcome)] += 1

    def table(self) -> str:
        """The tally as text: per target, the inputs, then every outcome with its count."""
        lines = [f"{'target':<28} {'inputs':>7}  outcome"]
        for target in sorted(self.tried):
            lines.append(f"{target:<28} {self.tried[target]:>7}")
            kinds = sorted(
                ((k, n) for (t, k), n in self.outcomes.items() if t == target),
                key=lambda kn: (-kn[1], kn[0]),
            )
            lines += [f"{'':<28} {n:>7}  {kind}" for kind, n in kinds]
        lost = sum(self.lost.values())
        lines.append(f"objects lost: {lost}" + "".join(f" {t}={n}" for t, n in self.lost.items()))
        return "\n".join(lines)


CAMPAIGN = Campaign()

_INDEX = re.compile(r"\[[^\]]*\]")


def field_kind(field_path: str) -> str:
    """A field with list indices and names dropped (``clusters[3].name`` -> ``clusters[].name``)."""
    return _INDEX.sub("[]", field_path)


def leaked(text: str, secrets: Iterable[str] = ()) -> bool:
    """True if ``text`` holds the marker or one of ``secrets`` (plain or base64)."""
    if MARKER in text:
        return True
    for secret in secrets:
        if secret and (secret in text or base64.b64encode(secret.encode()).decode() in text):
            return True
    return False


def check_outcome(
    target: str,
    call: Callable[[], Any],
    error: type[Exception] | tuple[type[Exception], ...],
    *,
    field_of: Callable[[Any], str],
    names: str,
    secrets: Iterable[str] = (),
) -> Any:
    """Run one input: a value, or ``error`` naming ``names`` and a field, nothing else.

    Args:
        target: The campaign's target (a row of the table).
        call: Parses the input.
        error: The one error type the target may raise.
        field_of: The field an error names.
        names: Text every error message must contain (the object).
        secrets: Credentials in the input; none may appear in the message.

    Returns:
        What ``call`` returned, or the error it raised.
    """
    try:
        value = call()
    except error as exc:
        where = field_of(exc)
        CAMPAIGN.record(target, f"{type(exc).__name__} {field_kind(where)}")
        message = str(exc)
        assert where, f"{target}: error names no field: {message}"
        assert names in message, f"{target}: error does not name {names!r}: {message}"
        assert not leaked(message, secrets), f"{target}: credential in message: {message}"
        assert "\n" not in message.strip(), f"{target}: message is not one line: {message!r}"
        return exc
    except Exception as exc:
        CAMPAIGN.record(target, f"ESCAPED {type(exc).__name__}")
        raise
    CAMPAIGN.record(target, "valid")
    return value


# -- building blocks ----------------------------------------------------------------------

printable = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
credential = st.text(string.ascii_letters + string.digits, min_size=4, max_size=12).map(
    lambda s: f"{MARKER}{s}"
)
huge_text = st.sampled_from(["A", "é", "\u202e", "\U0001f600", "\x00", " ,"]).flatmap(
    lambda c: st.integers(2_000, 20_000).map(lambda n: c * n)
)
hostile_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    printable,
    st.sampled_from(["", " ", "false", "true", "null", "~", "0", "-1", "\u0000", "☃"]),
    huge_text,
)
hostile_values = st.recursive(
    hostile_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(printable, inner, max_size=3),
    max_leaves=6,
)


def _pem(kind: str, body: str) -> str:
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@st.composite
def kubeconfigs(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A well-formed kubeconfig whose user holds a marked credential, and those credentials.

    The credential is a token, a client certificate and key, or a basic-auth password;
    there may be up to 80 contexts (only the current one matters).
    """
    secrets: list[str] = []
    user: dict[str, Any] = {}
    kind = draw(st.sampled_from(["token", "cert", "password"]))
    if kind == "token":
        token = draw(credential)
        secrets.append(token)
        user["token"] = token
    elif kind == "cert":
        key = _pem("PRIVATE KEY", draw(credential))
        secrets.append(key)
        user["client-certificate-data"] = _b64(_pem("CERTIFICATE", "MIIB"))
        user["client-key-data"] = _b64(key)
    else:
        password = draw(credential)
        secrets.append(password)
        user.update(username="admin", password=password)
    cluster: dict[str, Any] = {"server": f"https://{draw(dns_label)}.example:6443"}
    if draw(st.booleans()):
        cluster["certificate-authority-data"] = _b64(_pem("CERTIFICATE", "MIIC"))
    n = draw(st.integers(1, 80))
    current = draw(st.integers(0, n - 1))
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"c{i}", "cluster": dict(cluster)} for i in range(n)],
        "users": [{"name": f"u{i}", "user": dict(user)} for i in range(n)],
        "contexts": [
            {"name": f"x{i}", "context": {"cluster": f"c{i}", "user": f"u{i}"}} for i in range(n)
        ],
        "current-context": f"x{current}",
    }
    return doc, secrets


def paths_in(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``doc`` (keys and indices), depth first."""
    out: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.append((*prefix, key))
            out += paths_in(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:4]):
            out.append((*prefix, i))
            out += paths_in(value, (*prefix, i))
    return out


def set_at(doc: Any, path: tuple[Any, ...], value: Any, *, delete: bool = False) -> None:
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


#: Edits a careless or hostile writer makes to a kubeconfig's current cluster and user.
KUBECONFIG_EDITS: dict[str, Callable[[dict[str, Any], Any], None]] = {
    "ca not base64": lambda d, v: d["clusters"][0]["cluster"].update(
        {"certificate-authority-data": "%%not base64%%"}
    ),
    "ca not pem": lambda d, v: d["clusters"][0]["cluster"].update(
        {"certificate-authority-data": _b64("garbage")}
    ),
    "key not base64": lambda d, v: d["users"][0]["user"].update(
        {"client-certificate-data": _b64("c"), "client-key-data": f"!{MARKER}!"}
    ),
    "cert without key": lambda d, v: d["users"][0].update(
        {"user": {"client-certificate-data": _b64("c")}}
    ),
    "insecure as text": lambda d, v: d["clusters"][0]["cluster"].update(
        {"insecure-skip-tls-verify": "false"}
    ),
    "token file": lambda d, v: d["users"][0]["user"].update({"tokenFile": "/etc/hostname"}),
    "ca file": lambda d, v: d["clusters"][0]["cluster"].update(
        {"certificate-authority": "/etc/hostname"}
    ),
    "key file": lambda d, v: d["users"][0]["user"].update(
        {"client-certificate": "/etc/hostname", "client-key": "/etc/hostname"}
    ),
    "exec user": lambda d, v: d["users"][0]["user"].update({"exec": {"command": "sh"}}),
    "no current context": lambda d, v: d.pop("current-context"),
    "dangling context": lambda d, v: d.update({"current-context": "nowhere"}),
    "server of another type": lambda d, v: d["clusters"][0]["cluster"].update({"server": v}),
    "server not a URL": lambda d, v: d["clusters"][0]["cluster"].update({"server": "not a url ☃"}),
    "tls name of another type": lambda d, v: d["clusters"][0]["cluster"].update(
        {"tls-server-name": v}
    ),
    "proxy of another type": lambda d, v: d["clusters"][0]["cluster"].update({"proxy-url": v}),
    "token of another type": lambda d, v: d["users"][0]["user"].update({"token": v}),
}


@st.composite
def broken_kubeconfigs(draw: st.DrawFn) -> tuple[Any, list[str]]:
    """A kubeconfig (decoded) after 1 to 3 hostile edits, and the credentials it holds."""
    doc, secrets = draw(kubeconfigs())
    # The edits address the first cluster and user: make them the current context's.
    doc["current-context"] = "x0"
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["edit", "edit", "delete", "replace"]))
        if how == "edit":
            edit = KUBECONFIG_EDITS[draw(st.sampled_from(sorted(KUBECONFIG_EDITS)))]
            try:
                edit(doc, draw(hostile_values))
            except (KeyError, IndexError, TypeError, AttributeError):
                pass  # an earlier edit removed what this one changes
            continue
        paths = paths_in(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        try:
            set_at(doc, path, draw(hostile_values), delete=how == "delete")
        except (KeyError, IndexError, TypeError):
            continue
    return doc, secrets


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, allow_unicode=True)


#: Kubeconfig text that is not a kubeconfig at all.
garbage_texts = st.one_of(
    printable,
    huge_text,
    st.integers(1, 60_000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 60_000).map(lambda n: "- " * n + "x"),
    st.integers(1, 60_000).map(lambda n: "{a: " * n + "1" + "}" * n),
    st.just("a: &a [*a, *a]\n"),
    st.just("a: &a ['x','x']\nb: &b [*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b]\nd: [*c,*c,*c,*c]\n"),
    st.just("!!python/object/apply:os.system ['true']"),
    st.just("%YAML 9.9\n---\na: 1\n"),
    st.just("a: 1\n---\nb: 2\n"),
    st.just("clusters: {}\nusers: 3\ncontexts: x\ncurrent-context: [1]\n"),
)


@st.composite
def kubeconfig_payloads(draw: st.DrawFn) -> tuple[Any, list[str]]:
    """The value of a Secret's kubeconfig key: base64 text, or something that is not.

    Returns:
        ``(value, credentials)``; the value may be None (key absent).
    """
    kind = draw(
        st.sampled_from(
            ["broken", "broken", "broken", "good", "garbage", "bytes", "not base64", "absent"]
        )
    )
    if kind == "absent":
        return None, []
    if kind == "not base64":
        secret = draw(credential)
        return draw(st.sampled_from([f"{secret}!!", f"{secret}==x", "====", "é"])), [secret]
    if kind == "bytes":
        return base64.b64encode(draw(st.binary(min_size=1, max_size=64)) + b"\xff").decode(), []
    if kind == "garbage":
        return _b64(draw(garbage_texts)), []
    doc, secrets = draw(kubeconfigs() if kind == "good" else broken_kubeconfigs())
    return _b64(_dump(doc)), secrets


clusterset_values = st.one_of(
    st.lists(dns_label, min_size=1, max_size=4).map(",".join),
    st.sampled_from(["", " ", ",", " , ,", "Prod", "prod_1", "a" * 64, "prod,,dev", "☃"]),
    printable,
    huge_text,
)


@st.composite
def registration_secrets(
    draw: st.DrawFn, namespace: str = "cluster-inventory-system"
) -> tuple[dict[str, Any], list[str]]:
    """A registration Secret as the API server could hold it, mostly broken somewhere.

    Every value is a string, as the API server stores it; names are mostly valid.

    Returns:
        ``(secret, credentials in it)``.
    """
    # Mostly valid names and sets, so that most inputs reach the kubeconfig.
    name = draw(
        dns_label
        if draw(st.integers(0, 9))
        else st.sampled_from(["Bad_Name", "a" * 64, "-x", "x.y", "☃"])
    )
    annotations: dict[str, str] = {}
    sets = draw(st.integers(0, 9))
    if sets:
        annotations["cluster-inventory.dev/clustersets"] = draw(
            st.lists(dns_label, min_size=1, max_size=4).map(",".join)
            if sets > 2
            else clusterset_values
        )
    if draw(st.booleans()):
        annotations["cluster-inventory.dev/context"] = draw(
            st.one_of(st.sampled_from(["x0", "x1", "x79", "nowhere"]), printable)
        )
    if draw(st.booleans()):
        annotations["cluster-inventory.dev/display-name"] = draw(st.one_of(printable, huge_text))
    payload, secrets = draw(kubeconfig_payloads())
    data: dict[str, str] = {}
    if payload is not None:
        data["kubeconfig"] = payload
    if draw(st.booleans()):
        extra = draw(credential)
        secrets = [*secrets, extra]
        data["password"] = _b64(extra)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "cluster-inventory.dev/registration",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"cluster-inventory.dev/registration": "true"},
            "annotations": annotations,
        },
        "data": data,
    }
    return secret, secrets


@st.composite
def mistyped_registration_secrets(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A registration Secret with a value of the wrong type somewhere (a decoded file)."""
    secret, secrets = draw(registration_secrets())
    paths = [
        p
        for p in paths_in(secret)
        if p[0] in ("metadata", "data") and p != ("metadata", "namespace")
    ]
    set_at(secret, draw(st.sampled_from(paths)), draw(hostile_values))
    return secret, secrets


# -- ClusterProfiles written by others ------------------------------------------------------


@st.composite
def hostile_clusters(draw: st.DrawFn) -> dict[str, Any]:
    """An access provider's ``cluster`` as the CRD admits it, with hostile values."""
    # Huge values are drawn rarely: a profile has up to 100 of these.
    rare_huge = st.one_of(printable, printable, printable, printable, printable, huge_text)
    cluster: dict[str, Any] = {
        "server": draw(st.one_of(st.just("https://m.example:6443"), rare_huge, st.just("")))
    }
    if draw(st.booleans()):
        cluster["certificate-authority-data"] = draw(
            st.one_of(
                st.just(_b64(_pem("CERTIFICATE", "MIIC"))),
                st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()),
                st.just("%%%"),
            )
        )
    for key in ("tls-server-name", "proxy-url", "certificate-authority"):
        if draw(st.booleans()):
            cluster[key] = draw(rare_huge)
    for key in ("insecure-skip-tls-verify", "disable-compression"):
        if draw(st.booleans()):
            cluster[key] = draw(st.booleans())
    if draw(st.booleans()):
        names = st.sampled_from(
            [
                "client.authentication.k8s.io/exec",
                "multicluster.x-k8s.io/clusterprofiles/auth/exec/additional-args",
                "multicluster.x-k8s.io/clusterprofiles/auth/exec/additional-envs",
                "other",
            ]
        )
        cluster["extensions"] = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "name": names,
                        "extension": st.one_of(
                            st.dictionaries(printable, hostile_values, max_size=3),
                            st.fixed_dictionaries({"args": st.lists(printable, max_size=3)}),
                            st.dictionaries(
                                st.from_regex(r"\A[A-Z_]{1,8}\Z"), printable, max_size=3
                            ),
                        ),
                    }
                ),
                max_size=4,
            )
        )
    return cluster


@st.composite
def hostile_profiles(draw: st.DrawFn, *, crd_valid: bool = True) -> dict[str, Any]:
    """A ClusterProfile another writer stored: up to 100 access providers, huge and unicode
    values, missing fields; with ``crd_valid=False`` also values of the wrong type anywhere
    (a profile read from a file, or a hub whose CRD has no schema)."""
    profile = draw(cluster_profiles())
    status = profile.setdefault("status", {})
    n = draw(st.sampled_from([0, 1, 2, 3, 64, 65, 100]))
    names = [f"p{i}" for i in range(n)] + draw(
        st.lists(st.sampled_from(["secretreader", "google", "☃", "x" * 300]), unique=True)
    )
    providers = [{"name": name, "cluster": draw(hostile_clusters())} for name in names]
    for provider in providers:
        if draw(st.integers(0, 9)) == 0:
            del provider["cluster"]
    draw(st.randoms(use_true_random=False)).shuffle(providers)
    key = draw(st.sampled_from(["accessProviders", "credentialProviders"]))
    status[key] = providers
    if draw(st.booleans()):
        profile["spec"]["displayName"] = draw(st.one_of(printable, huge_text))
    if draw(st.booleans()):
        status["version"] = {"kubernetes": draw(st.one_of(printable, huge_text))}
    if draw(st.booleans()):
        status["properties"] = [
            {"name": f"p{i}.example", "value": draw(st.text(min_size=1, max_size=1024))}
            for i in range(draw(st.integers(0, 40)))
        ]
    if draw(st.booleans()):
        profile["metadata"]["labels"] = {
            **profile["metadata"]["labels"],
            "multicluster.x-k8s.io/inventory-member-id": draw(dns_label),
        }
    if not crd_valid:
        paths = paths_in(profile)
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(paths))
            try:
                set_at(profile, path, draw(hostile_values), delete=draw(st.booleans()))
            except (KeyError, IndexError, TypeError):
                pass
            paths = paths_in(profile)
            if not paths:
                break
    return profile


# -- provider files ------------------------------------------------------------------------------


@st.composite
def provider_files(draw: st.DrawFn) -> tuple[Any, list[str]]:
    """A provider file (decoded) after hostile edits, and the env values it holds."""
    secret = draw(credential)
    doc: dict[str, Any] = {
        "providers": [
            {
                "name": "secretreader",
                "execConfig": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "/bin/plugin",
                    "args": ["--flag"],
                    "env": [{"name": "TOKEN", "value": secret}],
                    "provideClusterInfo": True,
                },
                "profileSourcedCLIArgsPolicy": "Append",
                "profileSourcedEnvVarsPolicy": "AppendIfNotExists",
            }
            for _ in range(draw(st.integers(1, 3)))
        ]
    }
    for _ in range(draw(st.integers(0, 3))):
        paths = paths_in(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["delete", "replace", "rename"]))
        try:
            if how == "rename":
                parent = doc
                for step in path[:-1]:
                    parent = parent[step]
                if isinstance(parent, dict):
                    parent[draw(st.sampled_from([str(path[-1]).upper(), "Unknown", "☃"]))] = (
                        parent.pop(path[-1])
                    )
                continue
            set_at(doc, path, draw(hostile_values), delete=how == "delete")
        except (KeyError, IndexError, TypeError):
            continue
    return doc, [secret]


provider_file_texts = st.one_of(
    garbage_texts,
    st.integers(1, 60_000).map(lambda n: "[" * n + "]" * n),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)


# -- apply manifests ------------------------------------------------------------------------------


@st.composite
def manifest_texts(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A manifest file's text: Secrets and ConfigMaps, broken somewhere, and its credentials."""
    secret = draw(credential)
    docs: list[Any] = [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": draw(dns_label), "namespace": "default"},
            "stringData": {"password": secret},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMapList",
            "items": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": draw(dns_label)}}
            ],
        },
    ]
    for _ in range(draw(st.integers(0, 3))):
        paths = paths_in(docs)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        try:
            set_at(docs, path, draw(hostile_values), delete=draw(st.booleans()))
        except (KeyError, IndexError, TypeError):
            continue
    text = "---\n".join(yaml.safe_dump(d, allow_unicode=True) for d in docs)
    cut = draw(st.sampled_from(["none", "none", "truncate", "garbage", "tab", "quote"]))
    if cut == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif cut == "garbage":
        text = draw(garbage_texts)
    elif cut == "tab":
        text = text.replace(f"password: {secret}", f"password:\t{secret}\n\t- [")
    elif cut == "quote":
        text = text.replace(f"password: {secret}", f'password: "{secret}')
    return text, [secret]


def deep_copy(value: Any) -> Any:
    """A copy of ``value`` (inputs are parsed more than once)."""
    return copy.deepcopy(value)


def is_mapping(value: Any) -> bool:
    """True for a mapping (for assertions on decoded objects)."""
    return isinstance(value, Mapping)
