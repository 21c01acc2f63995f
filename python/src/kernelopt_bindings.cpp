#include "kernelopt_bindings.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "kernelopt/architectures.hpp"
#include "kernelopt/batch_optimizer.hpp"
#include "kernelopt/fusion_planner.hpp"
#include "kernelopt/kernel_level_optimizer.hpp"
#include "kernelopt/occupancy.hpp"

namespace py = pybind11;

namespace mqx::python {
namespace {

using namespace mqx::kernelopt;

py::frozenset names(ResourceSet set) {
  py::set result;
  for (Resource resource : {Resource::Warps, Resource::Registers, Resource::SharedMemory, Resource::Blocks})
    if (set.contains(resource)) {
      std::string name(kernelopt::toString(resource));
      std::replace(name.begin(), name.end(), ' ', '_');
      std::replace(name.begin(), name.end(), '-', '_');
      result.add(py::str(name));
    }
  return py::frozenset(result);
}

// "sm_90", "90", 90 or "h100"-less: by compute capability.
DeviceLimits limitsFor(const py::object& architecture) {
  int capability = 0;
  if (py::isinstance<py::int_>(architecture)) {
    capability = architecture.cast<int>();
  } else {
    std::string text = architecture.cast<std::string>();
    if (text.rfind("sm_", 0) == 0) text = text.substr(3);
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw std::invalid_argument("unknown architecture '" + architecture.cast<std::string>() +
                                  "' (expected e.g. 'sm_90' or 90)");
    capability = std::stoi(text);
  }
  const auto known = architectureFor(capability);
  if (!known)
    throw std::invalid_argument("no known architecture with compute capability " + std::to_string(capability));
  return deviceLimits(*known);
}

Dependence dependenceOf(const std::string& kind) {
  if (kind == "thread") return Dependence::Thread;
  if (kind == "cta") return Dependence::Cta;
  if (kind == "kernel") return Dependence::Kernel;
  throw std::invalid_argument("unknown dependence '" + kind + "' (expected thread, cta or kernel)");
}

const char* toString(GroupEnd end) {
  switch (end) {
  case GroupEnd::KernelDependence: return "kernel_dependence";
  case GroupEnd::EndOfCandidates: return "end_of_candidates";
  case GroupEnd::Budget: return "budget";
  case GroupEnd::Ordering: return "ordering";
  case GroupEnd::Dependence: return "dependence";
  case GroupEnd::OverBudget: return "over_budget";
  }
  return "?";
}

void bindLimits(py::module_& m) {
  py::class_<DeviceLimits>(m, "DeviceLimits",
                           "The per-SM and per-block limits of one GPU (kernelopt/device_limits.hpp).")
      .def(py::init<>())
      .def_readwrite("name", &DeviceLimits::name)
      .def_readwrite("compute_capability", &DeviceLimits::computeCapability)
      .def_readwrite("sm_count", &DeviceLimits::smCount)
      .def_readwrite("warp_size", &DeviceLimits::warpSize)
      .def_readwrite("max_threads_per_block", &DeviceLimits::maxThreadsPerBlock)
      .def_readwrite("max_threads_per_sm", &DeviceLimits::maxThreadsPerSm)
      .def_readwrite("max_blocks_per_sm", &DeviceLimits::maxBlocksPerSm)
      .def_readwrite("max_warps_per_sm", &DeviceLimits::maxWarpsPerSm)
      .def_readwrite("registers_per_sm", &DeviceLimits::registersPerSm)
      .def_readwrite("max_registers_per_block", &DeviceLimits::maxRegistersPerBlock)
      .def_readwrite("max_registers_per_thread", &DeviceLimits::maxRegistersPerThread)
      .def_readwrite("register_allocation_unit", &DeviceLimits::registerAllocationUnit)
      .def_readwrite("register_partitions", &DeviceLimits::registerPartitions)
      .def_readwrite("shared_memory_per_sm", &DeviceLimits::sharedMemoryPerSm)
      .def_readwrite("max_shared_memory_per_block", &DeviceLimits::maxSharedMemoryPerBlock)
      .def_readwrite("shared_memory_allocation_unit", &DeviceLimits::sharedMemoryAllocationUnit)
      .def_readwrite("reserved_shared_memory_per_block", &DeviceLimits::reservedSharedMemoryPerBlock)
      .def(
          "validate", [](const DeviceLimits& limits) { validate(limits); },
          "Raises ValueError naming the first field that cannot describe a device.")
      .def("__repr__", [](const DeviceLimits& l) { return "<mqx.DeviceLimits " + l.name + ">"; });
  m.def("device_limits", &limitsFor, py::arg("architecture"),
        "The limits of a known architecture: 'sm_70' .. 'sm_90' or the compute capability (90).");
  m.def(
      "known_architectures",
      [] {
        std::vector<int> capabilities;
        for (Architecture a : knownArchitectures())
          capabilities.push_back(deviceLimits(a).computeCapability);
        return capabilities;
      },
      "The compute capabilities of the known architectures.");
}

void bindOccupancy(py::module_& m) {
  py::class_<KernelResources>(m, "KernelResources", "What the compiler and the launch fix for one kernel.")
      .def(py::init([](int registers, int sharedMemory, int threads) {
             return KernelResources{registers, sharedMemory, threads};
           }),
           py::arg("registers_per_thread"), py::arg("shared_memory_per_block"), py::arg("threads_per_block"))
      .def_readwrite("registers_per_thread", &KernelResources::registersPerThread)
      .def_readwrite("shared_memory_per_block", &KernelResources::sharedMemoryPerBlock)
      .def_readwrite("threads_per_block", &KernelResources::threadsPerBlock);
  py::class_<Occupancy>(m, "Occupancy", "The occupancy of one kernel running alone (cuda-streams paper §III-A).")
      .def_readonly("active_blocks_per_sm", &Occupancy::activeBlocksPerSm, "beta")
      .def_property_readonly("limiting_factors", [](const Occupancy& o) { return names(o.limitingFactors); })
      .def_readonly("block_limit_warps", &Occupancy::blockLimitWarps)
      .def_readonly("block_limit_registers", &Occupancy::blockLimitRegisters)
      .def_readonly("block_limit_shared_memory", &Occupancy::blockLimitSharedMemory)
      .def_readonly("block_limit_blocks", &Occupancy::blockLimitBlocks)
      .def_readonly("warps_per_block", &Occupancy::warpsPerBlock)
      .def_readonly("allocated_registers_per_block", &Occupancy::allocatedRegistersPerBlock)
      .def_readonly("allocated_shared_memory_per_block", &Occupancy::allocatedSharedMemoryPerBlock)
      .def_property_readonly("active_warps_per_sm", &Occupancy::activeWarpsPerSm)
      .def("fraction", &Occupancy::fraction, py::arg("limits"),
           "Active threads over the SM's thread capacity (Eq. 9).");
  m.def(
      "occupancy",
      [](const DeviceLimits& limits, int registers, int sharedMemory, int threads) {
        return computeOccupancy(limits, {registers, sharedMemory, threads});
      },
      py::arg("limits"), py::arg("registers_per_thread"), py::arg("shared_memory_per_block"),
      py::arg("threads_per_block"), "The occupancy model of one kernel. Raises ValueError for invalid input.");
  m.def(
      "running_rounds",
      [](const DeviceLimits& limits, const Occupancy& occupancy, std::int64_t blocks) {
        return runningRounds(limits, occupancy, blocks);
      },
      py::arg("limits"), py::arg("occupancy"), py::arg("blocks"),
      "Eq. (1): the rounds in which `blocks` blocks run on the whole GPU; None when no block fits an SM.");
}

void bindKernelLevel(py::module_& m) {
  py::class_<KernelDemand>(m, "KernelDemand", "One resizable kernel: c_i threads, r_i registers, s_i bytes per block.")
      .def(py::init([](std::int64_t threads, int registers, int sharedMemory, int maxThreads) {
             return KernelDemand{threads, registers, sharedMemory, maxThreads};
           }),
           py::arg("threads"), py::arg("registers_per_thread") = 0, py::arg("shared_memory_per_block") = 0,
           py::arg("max_threads_per_block") = 0)
      .def_readwrite("threads", &KernelDemand::threads)
      .def_readwrite("registers_per_thread", &KernelDemand::registersPerThread)
      .def_readwrite("shared_memory_per_block", &KernelDemand::sharedMemoryPerBlock)
      .def_readwrite("max_threads_per_block", &KernelDemand::maxThreadsPerBlock)
      .def("__repr__", [](const KernelDemand& k) {
        return "KernelDemand(threads=" + std::to_string(k.threads) +
               ", registers_per_thread=" + std::to_string(k.registersPerThread) +
               ", shared_memory_per_block=" + std::to_string(k.sharedMemoryPerBlock) +
               ", max_threads_per_block=" + std::to_string(k.maxThreadsPerBlock) + ")";
      });
  py::class_<KernelLaunch>(m, "KernelLaunch", "The launch parameters chosen for one kernel.")
      .def_readonly("threads_per_block", &KernelLaunch::threadsPerBlock)
      .def_readonly("blocks_per_sm", &KernelLaunch::blocksPerSm)
      .def_readonly("grid_blocks", &KernelLaunch::gridBlocks)
      .def("__repr__", [](const KernelLaunch& l) {
        return "KernelLaunch(threads_per_block=" + std::to_string(l.threadsPerBlock) +
               ", blocks_per_sm=" + std::to_string(l.blocksPerSm) + ", grid_blocks=" + std::to_string(l.gridBlocks) +
               ")";
      });
  py::class_<SmUsage>(m, "SmUsage", "What a solution takes from one SM.")
      .def_readonly("blocks", &SmUsage::blocks)
      .def_readonly("warps", &SmUsage::warps)
      .def_readonly("register_units", &SmUsage::registerUnits)
      .def_readonly("shared_memory", &SmUsage::sharedMemory);
  py::class_<KernelLevelSolution>(m, "KernelLevelSolution")
      .def_readonly("feasible", &KernelLevelSolution::feasible)
      .def_property_readonly("exceeded", [](const KernelLevelSolution& s) { return names(s.exceeded); })
      .def_readonly("unplaceable_kernel", &KernelLevelSolution::unplaceableKernel)
      .def_readonly("launches", &KernelLevelSolution::launches, "one per kernel, in input order; empty when infeasible")
      .def_readonly("usage", &KernelLevelSolution::usage)
      .def_readonly("register_extension_used", &KernelLevelSolution::registerExtensionUsed);
  py::class_<KernelLevelOptimizer>(m, "KernelLevelOptimizer",
                                   "The knapsack paper's kernel-level optimizer (Eqs. 11-15, Algorithm 1), exact for "
                                   "all four SM resources.")
      .def(py::init<DeviceLimits>(), py::arg("limits"))
      .def(
          "solve", [](KernelLevelOptimizer& o, const std::vector<KernelDemand>& k) { return o.solve(k); },
          py::arg("kernels"), py::call_guard<py::gil_scoped_release>())
      .def(
          "fits", [](KernelLevelOptimizer& o, const std::vector<KernelDemand>& k) { return o.fits(k); },
          py::arg("kernels"), py::call_guard<py::gil_scoped_release>())
      .def(
          "minimum_shared_memory",
          [](KernelLevelOptimizer& o, const std::vector<KernelDemand>& k) { return o.minimumSharedMemory(k); },
          py::arg("kernels"), py::call_guard<py::gil_scoped_release>(),
          "V[n, B, W]: Algorithm 1's least total shared memory within the block and warp slots; None when none.");
}

void bindBatch(py::module_& m) {
  py::class_<Batch>(m, "Batch")
      .def_readonly("kernels", &Batch::kernels, "indices into the input, increasing")
      .def_readonly("solution", &Batch::solution);
  py::class_<BatchPlan>(m, "BatchPlan")
      .def_readonly("batches", &BatchPlan::batches)
      .def_readonly("unplaceable", &BatchPlan::unplaceable)
      .def_property_readonly(
          "method", [](const BatchPlan& p) { return p.method == BatchMethod::Exact ? "exact" : "column_generation"; })
      .def_readonly("lower_bound", &BatchPlan::lowerBound)
      .def_readonly("proven_optimal", &BatchPlan::provenOptimal);
  py::class_<BatchOptimizer>(m, "BatchOptimizer", "Groups kernels into the fewest batches that each fit an SM.")
      .def(py::init([](const DeviceLimits& limits, std::size_t exactLimit) {
             BatchOptions options;
             options.exactLimit = exactLimit;
             return std::make_unique<BatchOptimizer>(limits, options);
           }),
           py::arg("limits"), py::arg("exact_limit") = BatchOptions{}.exactLimit)
      .def(
          "plan", [](BatchOptimizer& o, const std::vector<KernelDemand>& k) { return o.plan(k); }, py::arg("kernels"),
          py::call_guard<py::gil_scoped_release>())
      .def(
          "plan_exact", [](BatchOptimizer& o, const std::vector<KernelDemand>& k) { return o.planExact(k); },
          py::arg("kernels"), py::call_guard<py::gil_scoped_release>())
      .def(
          "plan_column_generation",
          [](BatchOptimizer& o, const std::vector<KernelDemand>& k) { return o.planColumnGeneration(k); },
          py::arg("kernels"), py::call_guard<py::gil_scoped_release>());
}

void bindFusion(py::module_& m) {
  py::class_<OperatorGraph>(m, "OperatorGraph", "A query plan's operators and their dependences (Kernel Weaver §4.1).")
      .def(py::init<>())
      .def(
          "add_operator",
          [](OperatorGraph& g, const std::string& name, int registers, int sharedMemory) {
            return g.addOperator({name, registers, sharedMemory});
          },
          py::arg("name"), py::arg("registers_per_thread"), py::arg("shared_memory_per_cta"),
          "Adds an operator; returns its index.")
      .def(
          "add_dependence",
          [](OperatorGraph& g, std::size_t producer, std::size_t consumer, const std::string& kind, int registers,
             int sharedMemory) {
            g.addDependence(producer, consumer, dependenceOf(kind), {registers, sharedMemory});
          },
          py::arg("producer"), py::arg("consumer"), py::arg("kind"), py::arg("registers_per_thread") = 1,
          py::arg("shared_memory_per_cta") = 0,
          "kind: 'thread', 'cta' or 'kernel'; the rest is the intermediate data passed once fused.")
      .def("__len__", &OperatorGraph::size)
      .def("topological_order", &OperatorGraph::topologicalOrder);
  py::class_<FusionBudget>(m, "FusionBudget")
      .def(py::init([](int registers, int sharedMemory) {
             return FusionBudget{registers, sharedMemory};
           }),
           py::arg("registers_per_thread"), py::arg("shared_memory_per_cta"))
      .def_readwrite("registers_per_thread", &FusionBudget::registersPerThread)
      .def_readwrite("shared_memory_per_cta", &FusionBudget::sharedMemoryPerCta);
  py::class_<FusedEstimate>(m, "FusedEstimate")
      .def_readonly("registers_per_thread", &FusedEstimate::registersPerThread)
      .def_readonly("shared_memory_per_cta", &FusedEstimate::sharedMemoryPerCta);
  py::class_<FusionGroup>(m, "FusionGroup")
      .def_readonly("operators", &FusionGroup::operators, "topological order")
      .def_readonly("estimate", &FusionGroup::estimate)
      .def_property_readonly(
          "end", [](const FusionGroup& g) { return toString(g.end); },
          "why the group ends: kernel_dependence, end_of_candidates, budget, ordering, "
          "dependence or over_budget")
      .def_property_readonly("exceeded", [](const FusionGroup& g) { return names(g.exceeded); });
  py::class_<FusionPlan>(m, "FusionPlan")
      .def_readonly("candidates", &FusionPlan::candidates)
      .def_readonly("groups", &FusionPlan::groups);
  m.def("fusion_candidates", &fusionCandidates, py::arg("graph"), "Algorithm 1's candidate sets.");
  m.def("plan_fusion", &planFusion, py::arg("graph"), py::arg("budget"), "Algorithm 2's groups within the budget.");
  m.def("fusion_budget_for", &fusionBudgetFor, py::arg("limits"), py::arg("threads_per_cta"), py::arg("ctas_per_sm"),
        "The largest per-CTA budget that keeps `ctas_per_sm` CTAs of `threads_per_cta` threads resident.");
}

} // namespace

void bindKernelopt(py::module_& m) {
  bindLimits(m);
  bindOccupancy(m);
  bindKernelLevel(m);
  bindBatch(m);
  bindFusion(m);
}

} // namespace mqx::python
