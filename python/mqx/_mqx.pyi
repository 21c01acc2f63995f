"""Types of the extension mqx._mqx (python/src); the documentation is in the docstrings there."""

from typing import Optional, Union

Bytes = Union[int, str]  # bytes, or a size string such as "512MiB"

BUILD_BIN_DIR: str
VERSION: str
COMMIT: str
HAS_KERNELOPT: bool

# Configuration (python/src/config_bindings.cpp)

class Config:
    def as_dict(self) -> dict[str, Union[int, float, bool, str, list[str]]]: ...
    def __getitem__(self, key: str) -> Union[int, float, bool, str, list[str]]: ...
    @property
    def instance(self) -> str: ...
    @property
    def capacity(self) -> int: ...
    @property
    def admission(self) -> str: ...

def load_config(path: Optional[str] = None, environment: Optional[dict[str, str]] = None) -> Config: ...
def parse_config(text: str, origin: str = "config") -> Config: ...
def parse_size(text: str, key: str = "size") -> int: ...
def load_plan(path: str) -> tuple[str, int, int]: ...

# The node (python/src/daemon_bindings.cpp)

class ClientActivity:
    bytes_to_device: int
    bytes_to_host: int
    bytes_written_back: int
    evictions: int
    launches: int
    swap_used_bytes: int
    swap_reserved_bytes: int
    def as_dict(self) -> dict[str, int]: ...

class ClientStatus:
    slot: int
    state: str
    pid: int
    name: str
    arrival: int
    weighted_demand: int
    peak_demand: int
    budget_held: int
    observed_peak: int
    query_slot: Optional[int]
    device: Optional[str]
    blocked_on_memory: bool
    activity: ClientActivity
    def as_dict(self) -> dict[str, object]: ...

class DeviceStatus:
    index: int
    identity: str
    capacity: int
    used: int
    running_queries: int
    waiting_queries: int
    memory_clients: int
    running_weighted_demand: int
    def as_dict(self) -> dict[str, object]: ...

class NodeStatus:
    instance: str
    segment: str
    daemon_pid: int
    capacity: int
    used: int
    reclaimed_bytes: int
    dead_clients: int
    eviction_requests_served: int
    bytes_evicted_for_others: int
    activity: ClientActivity
    devices: list[DeviceStatus]
    clients: list[ClientStatus]
    def as_dict(self) -> dict[str, object]: ...

def status(instance: Optional[str] = None, config: Optional[Config] = None) -> NodeStatus: ...

class Client:
    def __init__(
        self,
        name: str = "",
        weighted: Bytes = 0,
        peak: Bytes = 0,
        instance: Optional[str] = None,
        config: Optional[Config] = None,
        device: Optional[str] = None,
    ) -> None: ...
    def request_admission(
        self, weighted: Optional[Bytes] = None, peak: Optional[Bytes] = None, timeout: Optional[float] = None
    ) -> float: ...
    def update_demand(self, weighted: Bytes, peak: Bytes) -> None: ...
    def release(self) -> None: ...
    def close(self) -> None: ...
    @property
    def state(self) -> str: ...
    @property
    def slot(self) -> int: ...
    @property
    def device(self) -> Optional[str]: ...
    @property
    def name(self) -> str: ...
    @property
    def instance(self) -> str: ...
    def __enter__(self) -> "Client": ...
    def __exit__(self, *args: object) -> None: ...

# kernelopt (python/src/kernelopt_bindings.cpp); resource sets are frozensets of
# "warps", "registers", "shared_memory", "blocks".

class DeviceLimits:
    name: str
    compute_capability: int
    sm_count: int
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_warps_per_sm: int
    registers_per_sm: int
    max_registers_per_block: int
    max_registers_per_thread: int
    register_allocation_unit: int
    register_partitions: int
    shared_memory_per_sm: int
    max_shared_memory_per_block: int
    shared_memory_allocation_unit: int
    reserved_shared_memory_per_block: int
    def __init__(self) -> None: ...
    def validate(self) -> None: ...

def device_limits(architecture: Union[int, str]) -> DeviceLimits: ...
def known_architectures() -> list[int]: ...

class KernelResources:
    registers_per_thread: int
    shared_memory_per_block: int
    threads_per_block: int
    def __init__(self, registers_per_thread: int, shared_memory_per_block: int, threads_per_block: int) -> None: ...

class Occupancy:
    active_blocks_per_sm: int
    limiting_factors: frozenset[str]
    block_limit_warps: int
    block_limit_registers: int
    block_limit_shared_memory: int
    block_limit_blocks: int
    warps_per_block: int
    allocated_registers_per_block: int
    allocated_shared_memory_per_block: int
    active_warps_per_sm: int
    def fraction(self, limits: DeviceLimits) -> float: ...

def occupancy(
    limits: DeviceLimits, registers_per_thread: int, shared_memory_per_block: int, threads_per_block: int
) -> Occupancy: ...
def running_rounds(limits: DeviceLimits, occupancy: Occupancy, blocks: int) -> Optional[int]: ...

class KernelDemand:
    threads: int
    registers_per_thread: int
    shared_memory_per_block: int
    max_threads_per_block: int
    def __init__(
        self,
        threads: int,
        registers_per_thread: int = 0,
        shared_memory_per_block: int = 0,
        max_threads_per_block: int = 0,
    ) -> None: ...

class KernelLaunch:
    threads_per_block: int
    blocks_per_sm: int
    grid_blocks: int

class SmUsage:
    blocks: int
    warps: int
    register_units: int
    shared_memory: int

class KernelLevelSolution:
    feasible: bool
    exceeded: frozenset[str]
    unplaceable_kernel: Optional[int]
    launches: list[KernelLaunch]
    usage: SmUsage
    register_extension_used: bool

class KernelLevelOptimizer:
    def __init__(self, limits: DeviceLimits) -> None: ...
    def solve(self, kernels: list[KernelDemand]) -> KernelLevelSolution: ...
    def fits(self, kernels: list[KernelDemand]) -> bool: ...
    def minimum_shared_memory(self, kernels: list[KernelDemand]) -> Optional[int]: ...

class Batch:
    kernels: list[int]
    solution: KernelLevelSolution

class BatchPlan:
    batches: list[Batch]
    unplaceable: list[int]
    method: str  # "exact" or "column_generation"
    lower_bound: int
    proven_optimal: bool

class BatchOptimizer:
    def __init__(self, limits: DeviceLimits, exact_limit: int = 12) -> None: ...
    def plan(self, kernels: list[KernelDemand]) -> BatchPlan: ...
    def plan_exact(self, kernels: list[KernelDemand]) -> BatchPlan: ...
    def plan_column_generation(self, kernels: list[KernelDemand]) -> BatchPlan: ...

class OperatorGraph:
    def __init__(self) -> None: ...
    def add_operator(self, name: str, registers_per_thread: int, shared_memory_per_cta: int) -> int: ...
    def add_dependence(
        self,
        producer: int,
        consumer: int,
        kind: str,
        registers_per_thread: int = 1,
        shared_memory_per_cta: int = 0,
    ) -> None: ...
    def __len__(self) -> int: ...
    def topological_order(self) -> list[int]: ...

class FusionBudget:
    registers_per_thread: int
    shared_memory_per_cta: int
    def __init__(self, registers_per_thread: int, shared_memory_per_cta: int) -> None: ...

class FusedEstimate:
    registers_per_thread: int
    shared_memory_per_cta: int

class FusionGroup:
    operators: list[int]
    estimate: FusedEstimate
    end: str
    exceeded: frozenset[str]

class FusionPlan:
    candidates: list[list[int]]
    groups: list[FusionGroup]

def fusion_candidates(graph: OperatorGraph) -> list[list[int]]: ...
def plan_fusion(graph: OperatorGraph, budget: FusionBudget) -> FusionPlan: ...
def fusion_budget_for(limits: DeviceLimits, threads_per_cta: int, ctas_per_sm: int) -> FusionBudget: ...
