"""The exceptions of mqx. The extension raises these, with the daemon's or the parser's message."""

from __future__ import annotations


class MqxError(RuntimeError):
    """Something mqx or mqxd refused or could not do (the message says what)."""


class DaemonNotRunning(MqxError):
    """No mqxd serves this user and instance, or it went away (its segment is gone or stale)."""


class AdmissionTimeout(MqxError, TimeoutError):
    """mqxd did not admit the query within the timeout; the request was withdrawn."""


class ConfigError(MqxError, ValueError):
    """A configuration key, value or file that the C++ side rejects; the message names the key."""
