"""mqx from Python: a client of the node daemon mqxd, the kernelopt launch optimizer, mqx's
configuration, and workload tools (docs/python.md).

    import mqx
    mqx.status()                                   # the node's live state (mqx.NodeStatus)
    with mqx.Client("q1", weighted="600MiB", peak="1GiB") as query:
        query.request_admission(timeout=60)        # paper §5 admission; raises mqx.AdmissionTimeout
        ...
    mqx.occupancy(mqx.device_limits("sm_90"), 32, 0, 256).active_blocks_per_sm   # 8
    mqx.load_config()                              # MQX_CONFIG + MQX_* overrides, validated like C++

Errors are exceptions of mqx.errors carrying mqx's or mqxd's message: DaemonNotRunning (no mqxd,
or it died), AdmissionTimeout, ConfigError (names the key), MqxError; invalid kernelopt input
raises ValueError. Workloads of query commands and the paper's metrics: mqx.workload.
"""

from __future__ import annotations

from .errors import AdmissionTimeout, ConfigError, DaemonNotRunning, MqxError

try:
    from ._mqx import (
        BUILD_BIN_DIR,
        COMMIT,
        HAS_KERNELOPT,
        VERSION,
        Client,
        ClientActivity,
        ClientStatus,
        Config,
        DeviceStatus,
        NodeStatus,
        load_config,
        parse_config,
        parse_size,
        status,
    )
except ImportError as _error:  # the pure-Python parts (mqx.workload, mqx.daemon) work without it
    _extension_error: ImportError | None = _error
else:
    _extension_error = None
    from . import _mqx

    __version__ = VERSION

    if hasattr(_mqx, "load_plan"):
        from ._mqx import load_plan  # noqa: F401
    if HAS_KERNELOPT:
        from ._mqx import (  # noqa: F401
            Batch,
            BatchOptimizer,
            BatchPlan,
            DeviceLimits,
            FusedEstimate,
            FusionBudget,
            FusionGroup,
            FusionPlan,
            KernelDemand,
            KernelLaunch,
            KernelLevelOptimizer,
            KernelLevelSolution,
            KernelResources,
            Occupancy,
            OperatorGraph,
            SmUsage,
            device_limits,
            fusion_budget_for,
            fusion_candidates,
            known_architectures,
            occupancy,
            plan_fusion,
            running_rounds,
        )


def __getattr__(name: str) -> object:
    if _extension_error is not None and name == "_mqx":
        raise _extension_error
    if _extension_error is not None and not name.startswith("__"):
        raise ImportError(
            f"mqx.{name} needs the extension mqx._mqx, which is not built for this Python "
            f"({_extension_error}); build it with CMake (python/ in the mqx build) or `pip install ./python`"
        )
    raise AttributeError(f"module 'mqx' has no attribute '{name}'")


__all__ = [
    "AdmissionTimeout",
    "Client",
    "ClientActivity",
    "ClientStatus",
    "DeviceStatus",
    "Config",
    "ConfigError",
    "DaemonNotRunning",
    "MqxError",
    "NodeStatus",
    "load_config",
    "parse_config",
    "parse_size",
    "status",
]
