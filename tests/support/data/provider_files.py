"""Provider files (the KEP-5339 JSON format) whose plugin is our secretreader, for tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: Our ``cluster-inventory-secretreader`` console script, beside this interpreter.
PLUGIN = Path(sys.executable).parent / "cluster-inventory-secretreader"


def provider_file(
    path: Path, command: str, args: list[str], env: dict[str, str], *, cluster_info: bool = True
) -> Path:
    path.write_text(
        json.dumps(
            {
                "providers": [
                    {
                        "name": "secretreader",
                        "execConfig": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": command,
                            "args": args,
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                            "provideClusterInfo": cluster_info,
                        },
                    }
                ]
            }
        )
    )
    return path
