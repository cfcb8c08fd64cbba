"""The registration Secrets ``register`` and ``manager accept`` write (``docs/agent.md``).

Two modes, one Secret type and label, so one watch finds both: a probed member's Secret holds
the manager's kubeconfig for it (:func:`registration_secret`); an agent member's holds none,
since the hub has no route to it, and says so with the annotation
``cluster-inventory.dev/registration-mode: agent`` (:func:`agent_registration_secret`). Each
is checked before anything is written.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from cluster_inventory.api.agents import (
    AgentNameError,
    agent_user,
    bootstrap_user,
    check_acceptance_id,
)
from cluster_inventory.api.constants import (
    ANNOTATION_ACCEPTANCE,
    ANNOTATION_CLUSTERSETS,
    ANNOTATION_CONTEXT,
    ANNOTATION_DISPLAY_NAME,
    ANNOTATION_REGISTRATION_MODE,
    LABEL_REGISTRATION,
    REGISTRATION_KUBECONFIG_KEY,
    REGISTRATION_MODE_AGENT,
    REGISTRATION_SECRET_TYPE,
)
from cluster_inventory.manager.rules.registration import (
    RegistrationError,
    is_dns_label,
    parse_clustersets,
    parse_registration_secret,
)

__all__ = ["agent_registration_secret", "registration_secret"]

#: The longest CN a certificate request may carry (X.509's ub-common-name, which
#: ``cryptography`` enforces).
_CN_MAX = 64


def _secret(name: str, namespace: str, annotations: dict[str, str]) -> dict[str, Any]:
    # What both modes share: the type and label one watch finds them by.
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": REGISTRATION_SECRET_TYPE,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {LABEL_REGISTRATION: "true"},
            "annotations": annotations,
        },
    }


def registration_secret(
    name: str,
    namespace: str,
    kubeconfig: str,
    clustersets: Sequence[str],
    *,
    context: str | None = None,
    display_name: str | None = None,
) -> dict[str, Any]:
    """The registration Secret for a member (what ``cluster-inventory register`` writes).

    Raises:
        RegistrationError: The result would not parse (checked before anything is written).
    """
    annotations = {ANNOTATION_CLUSTERSETS: ",".join(clustersets)}
    if context:
        annotations[ANNOTATION_CONTEXT] = context
    if display_name:
        annotations[ANNOTATION_DISPLAY_NAME] = display_name
    secret = _secret(name, namespace, annotations)
    secret["data"] = {REGISTRATION_KUBECONFIG_KEY: base64.b64encode(kubeconfig.encode()).decode()}
    parse_registration_secret(secret)
    return secret


def agent_registration_secret(
    name: str,
    namespace: str,
    clustersets: Sequence[str],
    *,
    display_name: str | None = None,
    acceptance: str | None = None,
) -> dict[str, Any]:
    """The agent-mode registration Secret of member ``name`` (what ``manager accept`` writes).

    The hub's half of the double opt-in: the type, label and cluster sets of every
    registration, the annotation ``cluster-inventory.dev/registration-mode: agent``, the
    acceptance id ``cluster-inventory.dev/acceptance`` and no ``kubeconfig`` key.

    Args:
        name: The member name (a DNS-1123 label).
        namespace: The cluster manager's namespace.
        clustersets: Cluster sets the member joins.
        display_name: ``spec.displayName`` of its profiles (default: the name).
        acceptance: The acceptance id (:func:`~cluster_inventory.api.agents.new_acceptance_id`;
            None: no annotation, for a check of the other fields only).

    Raises:
        RegistrationError: The name or a cluster set is not a DNS-1123 label, no cluster set
            is given, or ``acceptance`` is no acceptance id; the error names the Secret and
            field.
    """
    source = f"Secret {namespace}/{name}"
    if not is_dns_label(name):
        raise RegistrationError(source, "metadata.name", "must be a DNS-1123 label (<= 63)")
    longest = max(agent_user(name), bootstrap_user(name), key=len)
    if len(longest) > _CN_MAX:
        # Its certificates name it in their CN, which X.509 bounds (ub-common-name).
        raise RegistrationError(
            source,
            "metadata.name",
            f"an agent member's name has at most {_CN_MAX - len(bootstrap_user(''))} "
            f"characters (its bootstrap certificate's CN {bootstrap_user('NAME')!r} has at "
            f"most {_CN_MAX})",
        )
    field = f"metadata.annotations[{ANNOTATION_CLUSTERSETS}]"
    sets = parse_clustersets(",".join(clustersets), source, field)
    annotations = {
        ANNOTATION_CLUSTERSETS: ",".join(sets),
        ANNOTATION_REGISTRATION_MODE: REGISTRATION_MODE_AGENT,
    }
    if display_name:
        annotations[ANNOTATION_DISPLAY_NAME] = display_name
    if acceptance is not None:
        field = f"metadata.annotations[{ANNOTATION_ACCEPTANCE}]"
        try:
            annotations[ANNOTATION_ACCEPTANCE] = check_acceptance_id(
                acceptance, source=source, field=field
            )
        except AgentNameError as exc:
            raise RegistrationError(source, field, exc.problem, member=name) from None
    return _secret(name, namespace, annotations)
