"""kernelopt from Python: the cases of tests/kernelopt (occupancy, kernel-level and batch-level
optimizer, fusion planner) give the same answers through the bindings."""

from __future__ import annotations

import pytest

import mqx
from conftest import requires_kernelopt

pytestmark = requires_kernelopt


def gtx680() -> mqx.DeviceLimits:
    """tests/kernelopt/paper_devices.hpp: the GTX 680 of the cuda-streams paper, Table I."""
    limits = mqx.DeviceLimits()
    limits.name = "GTX 680 (cuda-streams paper, Table I)"
    limits.compute_capability = 30
    limits.sm_count = 8
    limits.warp_size = 32
    limits.max_threads_per_block = 1024
    limits.max_threads_per_sm = 2048
    limits.max_blocks_per_sm = 16
    limits.max_warps_per_sm = 64
    limits.registers_per_sm = 65536
    limits.max_registers_per_block = 65536
    limits.max_registers_per_thread = 63
    limits.register_allocation_unit = 256
    limits.register_partitions = 4
    limits.shared_memory_per_sm = 49152
    limits.max_shared_memory_per_block = 49152
    limits.shared_memory_allocation_unit = 256
    limits.reserved_shared_memory_per_block = 0
    return limits


H100 = mqx.device_limits("sm_90") if getattr(mqx, "HAS_KERNELOPT", False) else None


def on_every_sm(per_sm: int, registers: int = 16, shared_memory: int = 0, max_threads: int = 0) -> mqx.KernelDemand:
    return mqx.KernelDemand(per_sm * 132, registers, shared_memory, max_threads)


# occupancy_test.cpp


@pytest.mark.parametrize(
    "registers, shared, threads, blocks, factors, fraction",
    [
        (11, 0, 1024, 2, {"warps"}, 1.0),  # kernel A
        (33, 0, 1024, 1, {"registers"}, 0.5),  # kernel B
        (11, 0, 256, 8, {"warps"}, 1.0),  # kernel C
        (44, 0, 256, 5, {"registers"}, 0.625),  # kernel D
        (11, 24576, 256, 2, {"shared_memory"}, None),  # kernel E
        (44, 24576, 256, 2, {"shared_memory"}, None),  # kernel F
    ],
)
def test_occupancy_of_the_cuda_streams_paper_kernels(registers, shared, threads, blocks, factors, fraction):
    occupancy = mqx.occupancy(gtx680(), registers, shared, threads)
    assert occupancy.active_blocks_per_sm == blocks
    assert occupancy.limiting_factors == frozenset(factors)
    if fraction is not None:
        assert occupancy.fraction(gtx680()) == fraction


def test_occupancy_details_of_kernels_b_and_f():
    b = mqx.occupancy(gtx680(), 33, 0, 1024)
    assert b.block_limit_registers == 1
    assert b.allocated_registers_per_block == 1280 * 32
    assert mqx.occupancy(gtx680(), 44, 24576, 256).block_limit_registers == 5


def test_running_rounds_of_figure_five():
    a = mqx.occupancy(gtx680(), 11, 0, 1024)
    assert [mqx.running_rounds(gtx680(), a, n) for n in (4, 16, 32, 33)] == [1, 1, 2, 3]
    none = mqx.occupancy(gtx680(), 64, 0, 256)
    assert none.active_blocks_per_sm == 0
    assert mqx.running_rounds(gtx680(), none, 4) is None


def test_h100_occupancy():
    full = mqx.occupancy(H100, 32, 0, 256)
    assert full.active_blocks_per_sm == 8
    assert full.limiting_factors == {"warps", "registers"}
    assert full.allocated_shared_memory_per_block == 1024
    assert full.block_limit_shared_memory == 228
    shared = mqx.occupancy(H100, 64, 48 * 1024, 128)
    assert (shared.block_limit_shared_memory, shared.block_limit_registers, shared.active_blocks_per_sm) == (4, 8, 4)
    assert shared.limiting_factors == {"shared_memory"}
    assert mqx.occupancy(H100, 32, 227 * 1024, 256).active_blocks_per_sm == 1
    assert mqx.occupancy(H100, 32, 227 * 1024 + 1, 256).active_blocks_per_sm == 0
    slots = mqx.occupancy(H100, 0, 0, 32)
    assert (slots.active_blocks_per_sm, slots.limiting_factors) == (32, {"blocks"})
    assert mqx.occupancy(mqx.device_limits(75), 0, 0, 256).active_blocks_per_sm == 4
    assert mqx.occupancy(mqx.device_limits("sm_86"), 0, 0, 512).active_blocks_per_sm == 3
    volta = mqx.occupancy(mqx.device_limits("sm_70"), 16, 1000, 32)
    assert (volta.block_limit_shared_memory, volta.active_blocks_per_sm) == (96, 32)


def test_invalid_input_raises_value_error():
    with pytest.raises(ValueError):
        mqx.occupancy(H100, 32, 0, 0)
    with pytest.raises(ValueError):
        mqx.occupancy(H100, -1, 0, 32)
    broken = mqx.device_limits("sm_90")
    broken.sm_count = 0
    with pytest.raises(ValueError):
        mqx.occupancy(broken, 32, 0, 32)
    with pytest.raises(ValueError, match="smCount"):
        broken.validate()
    with pytest.raises(ValueError, match="compute capability 12"):
        mqx.device_limits(12)
    with pytest.raises(ValueError, match="unknown architecture"):
        mqx.device_limits("hopper")
    assert 90 in mqx.known_architectures()


# kernel_level_optimizer_test.cpp


def test_theorem_one_rounding_forces_an_extra_block():
    solution = mqx.KernelLevelOptimizer(H100).solve([on_every_sm(1056, 16, 4096), on_every_sm(992)])
    assert solution.feasible
    first, second = solution.launches
    assert (first.threads_per_block, first.blocks_per_sm, first.grid_blocks) == (352, 3, 3 * 132)
    assert (second.threads_per_block, second.blocks_per_sm, second.grid_blocks) == (992, 1, 132)
    assert (solution.usage.blocks, solution.usage.warps) == (4, 64)
    assert solution.usage.shared_memory == 3 * 5120 + 1024
    assert solution.usage.register_units == 2 * 64
    assert not solution.register_extension_used


def test_fewer_blocks_when_the_warps_allow_it():
    optimizer = mqx.KernelLevelOptimizer(H100)
    kernels = [on_every_sm(1056, 16, 4096), on_every_sm(960)]
    solution = optimizer.solve(kernels)
    assert (solution.launches[0].blocks_per_sm, solution.launches[0].threads_per_block) == (2, 544)
    assert solution.usage.shared_memory == 2 * 5120 + 1024
    assert optimizer.minimum_shared_memory(kernels) == 2 * 5120 + 1024


def test_register_extension_when_algorithm_one_breaks_equation_two():
    optimizer = mqx.KernelLevelOptimizer(H100)
    kernels = [on_every_sm(130, 96, 2048, 64), on_every_sm(1000, 48)]
    assert optimizer.minimum_shared_memory(kernels) == 3 * 3072 + 1024
    solution = optimizer.solve(kernels)
    assert solution.feasible and solution.register_extension_used
    assert [(l.blocks_per_sm, l.threads_per_block) for l in solution.launches] == [(5, 32), (1, 1024)]
    assert solution.usage.register_units == 60 + 192
    assert solution.usage.shared_memory == 5 * 3072 + 1024


def test_infeasible_sets_name_the_exceeded_resource():
    optimizer = mqx.KernelLevelOptimizer(H100)
    shared = [on_every_sm(256, 32, 120 * 1024)] * 2
    assert optimizer.minimum_shared_memory(shared) == 2 * 121 * 1024
    solution = optimizer.solve(shared)
    assert (solution.feasible, solution.exceeded, solution.launches) == (False, {"shared_memory"}, [])
    assert optimizer.solve([on_every_sm(32)] * 33).exceeded == {"blocks"}
    assert optimizer.minimum_shared_memory([on_every_sm(32)] * 33) is None
    assert optimizer.solve([on_every_sm(1024), on_every_sm(1025)]).exceeded == {"warps"}
    assert optimizer.fits([on_every_sm(1024), on_every_sm(1024)])
    registers = optimizer.solve([on_every_sm(512, 64), on_every_sm(512, 64), on_every_sm(32, 64)])
    assert registers.exceeded == {"registers"}
    alone = optimizer.solve([on_every_sm(256), on_every_sm(256, 300)])
    assert (alone.feasible, alone.unplaceable_kernel, alone.exceeded) == (False, 1, {"registers"})
    assert optimizer.solve([]).feasible


# batch_optimizer_test.cpp


def test_warp_bound_proves_a_plan_optimal():
    kernels = [on_every_sm(1024)] * 7
    optimizer = mqx.BatchOptimizer(H100)
    for plan in (optimizer.plan_exact(kernels), optimizer.plan_column_generation(kernels)):
        assert (len(plan.batches), plan.lower_bound, plan.proven_optimal) == (4, 4, True)
        assert sorted(k for batch in plan.batches for k in batch.kernels) == list(range(7))
        assert all(batch.solution.feasible for batch in plan.batches)


def test_kernels_that_fit_nowhere_are_set_aside():
    kernels = [on_every_sm(512), on_every_sm(4096), on_every_sm(512), on_every_sm(256, 300)]
    plan = mqx.BatchOptimizer(H100).plan(kernels)
    assert plan.method == "exact"
    assert plan.unplaceable == [1, 3]
    assert [batch.kernels for batch in plan.batches] == [[0, 2]]


def test_large_instances_use_column_generation():
    kernels = [on_every_sm(64 + (i * 97) % 1000, 16 + (i * 7) % 80, (i * 1511) % (48 * 1024)) for i in range(40)]
    plan = mqx.BatchOptimizer(H100).plan(kernels)
    assert plan.method == "column_generation"
    assert sorted([k for b in plan.batches for k in b.kernels] + list(plan.unplaceable)) == list(range(40))
    assert 1 <= plan.lower_bound <= len(plan.batches) <= plan.lower_bound + 2
    assert mqx.BatchOptimizer(H100).plan([]).batches == []


# fusion_planner_test.cpp: Kernel Weaver, Figures 9 and 10


def figure_nine() -> tuple[mqx.OperatorGraph, dict[str, int]]:
    graph = mqx.OperatorGraph()
    ops = {}
    for key, name, registers, shared in [
        ("sortA", "SORT(data0)", 20, 4096),
        ("sortB", "SORT(data1)", 20, 4096),
        ("sortC", "SORT(data2)", 20, 4096),
        ("select1", "data3 = SELECT(data0)", 12, 2048),
        ("select2", "data4 = SELECT(data1)", 12, 2048),
        ("join1", "data5 = JOIN(data3, data4)", 24, 6144),
        ("join2", "data6 = JOIN(data5, data2)", 24, 6144),
        ("sortD", "data7 = SORT(data6)", 20, 4096),
        ("select3", "data8 = SELECT(data7)", 12, 2048),
    ]:
        ops[key] = graph.add_operator(name, registers, shared)
    graph.add_dependence(ops["sortA"], ops["select1"], "kernel")
    graph.add_dependence(ops["sortB"], ops["select2"], "kernel")
    graph.add_dependence(ops["sortC"], ops["join2"], "kernel")
    graph.add_dependence(ops["select1"], ops["join1"], "cta", 1, 2048)
    graph.add_dependence(ops["select2"], ops["join1"], "cta", 1, 2048)
    graph.add_dependence(ops["join1"], ops["join2"], "cta", 1, 4096)
    graph.add_dependence(ops["join2"], ops["sortD"], "kernel")
    graph.add_dependence(ops["sortD"], ops["select3"], "kernel")
    return graph, ops


def test_figure_nine_candidates_are_bounded_by_sorts():
    graph, o = figure_nine()
    assert mqx.fusion_candidates(graph) == [[o["select1"], o["select2"], o["join1"], o["join2"]]]


def test_figure_ten_fuses_the_first_three_operators():
    graph, o = figure_nine()
    plan = mqx.plan_fusion(graph, mqx.FusionBudget(63, 16 * 1024))
    assert len(plan.groups) == 7
    fused = plan.groups[3]
    assert fused.operators == [o["select1"], o["select2"], o["join1"]]
    assert (fused.end, fused.exceeded) == ("budget", {"shared_memory"})
    assert (fused.estimate.shared_memory_per_cta, fused.estimate.registers_per_thread) == (14 * 1024, 26)
    assert (plan.groups[4].operators, plan.groups[4].end) == ([o["join2"]], "end_of_candidates")
    for g in (0, 1, 2, 5, 6):
        assert (len(plan.groups[g].operators), plan.groups[g].end) == (1, "kernel_dependence")
    assert plan.groups[6].operators == [o["select3"]]
    larger = mqx.plan_fusion(graph, mqx.FusionBudget(63, 32 * 1024))
    assert len(larger.groups) == 6
    assert larger.groups[3].estimate.shared_memory_per_cta == 24 * 1024


def test_thread_dependences_are_bound_by_registers():
    graph = mqx.OperatorGraph()
    selects = [graph.add_operator("SELECT", 20, 0) for _ in range(5)]
    for producer, consumer in zip(selects, selects[1:]):
        graph.add_dependence(producer, consumer, "thread", 4, 0)
    plan = mqx.plan_fusion(graph, mqx.FusionBudget(32, 48 * 1024))
    assert [len(g.operators) for g in plan.groups] == [4, 1]
    assert plan.groups[0].estimate.registers_per_thread == 32
    assert plan.groups[0].exceeded == {"registers"}


def test_bad_graphs_raise_value_error():
    graph = mqx.OperatorGraph()
    a = graph.add_operator("A", 10, 0)
    with pytest.raises(ValueError):
        graph.add_dependence(a, a, "thread")
    with pytest.raises(ValueError, match="unknown dependence"):
        graph.add_dependence(a, 5, "pipe")
    with pytest.raises(ValueError):
        graph.add_dependence(a, 7, "thread")
