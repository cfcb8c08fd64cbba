"""What a hub will store of a ClusterProfile's access providers, checked before a write.

Two shapes that documents and older tools produce are refused by the server, or stored in
a way a newer reader cannot use:

- an extension payload that is not an object: the CRD types ``extension`` as an object in
  both versions, so the KEP's own ``clusterprofiles.multicluster.x-k8s.io/exec/additional-args``
  example (a list) cannot be stored at all;
- two extensions with one name in a provider: v1alpha2 keys the list by name (a server-side
  apply of such a list fails with a 500, a merge patch with a 422), while v1alpha1 keeps both
  and readers see only the first.

:func:`check_storable` reports them with the field path, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["StorableError", "check_storable"]


class StorableError(ValueError):
    """A ClusterProfile status the hub would refuse; the message names the object and field."""


def check_storable(profile: Mapping[str, Any]) -> None:
    """Refuse access providers the hub cannot store as they are.

    Args:
        profile: A ClusterProfile (or a status-only body) as a decoded object.

    Raises:
        StorableError: An extension payload is not an object, or a provider has two
            extensions of one name; the message names the profile and the field path, e.g.
            ``team-a/east: status.accessProviders[0].cluster.extensions[1].name``.
    """
    meta = profile.get("metadata") or {}
    who = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
    status = profile.get("status") or {}
    for list_name in ("accessProviders", "credentialProviders"):
        for i, provider in enumerate(status.get(list_name) or ()):
            extensions = ((provider or {}).get("cluster") or {}).get("extensions") or ()
            seen: dict[str, int] = {}
            for j, ext in enumerate(extensions):
                where = f"status.{list_name}[{i}].cluster.extensions[{j}]"
                name = str((ext or {}).get("name", ""))
                if not isinstance((ext or {}).get("extension"), Mapping):
                    raise StorableError(
                        f"{who}: {where}.extension ({name}): the payload must be an object; "
                        "the CRD cannot store a list or a scalar"
                    )
                if name in seen:
                    raise StorableError(
                        f"{who}: {where}.name: {name!r} repeats extensions[{seen[name]}]; "
                        "extension names must be unique in a provider"
                    )
                seen[name] = j
