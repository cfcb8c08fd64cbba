"""Structured logs for long-running commands: logfmt text or JSON lines on stderr.

Records carry keys passed as ``extra`` (``cluster``, ``object``, ...); they are printed as
``key=value`` pairs (or JSON fields) after the message, so a log line can be filtered by
cluster or object. No record field ever holds a credential: callers never pass one.
"""

from __future__ import annotations

import json
import logging
import sys
import time

__all__ = ["check_log_format", "configure_logging"]

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class _Formatter(logging.Formatter):
    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.json = fmt == "json"

    def format(self, record: logging.LogRecord) -> str:
        fields = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        ts += f".{int(record.msecs):03d}Z"
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        if self.json:
            return json.dumps(
                {
                    "ts": ts,
                    "level": record.levelname.lower(),
                    "logger": record.name,
                    "msg": message,
                    **fields,
                },
                default=str,
            )
        pairs = " ".join(f"{k}={json.dumps(str(v))}" for k, v in fields.items())
        return f"{ts} {record.levelname:<7} {record.name}: {message}" + (
            f" {pairs}" if pairs else ""
        )


def check_log_format(fmt: str) -> None:
    """Check ``--log-format`` before anything else happens.

    Raises:
        ValueError: ``fmt`` is neither ``text`` nor ``json``.
    """
    if fmt not in ("text", "json"):
        raise ValueError(f"log format {fmt!r}: use text or json")


def configure_logging(fmt: str = "text", level: int = logging.INFO) -> None:
    """Send ``cluster_inventory`` logs to stderr as ``text`` (logfmt pairs) or ``json``.

    Raises:
        ValueError: ``fmt`` is neither ``text`` nor ``json``.
    """
    check_log_format(fmt)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter(fmt))
    root = logging.getLogger("cluster_inventory")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
