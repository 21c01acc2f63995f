#include "kernelopt/kernel_level_optimizer.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace mqx::kernelopt {

namespace {

// "Infinity" of Algorithm 1. validate() keeps every sum of shared memory
// below 2^30, so INF + cost never overflows 32 bits.
constexpr std::int32_t kInfinity = std::int32_t{1} << 30;

// target[z] = min(target[z], source[z] + cost): the innermost loop of the DP,
// kept branch-free so that the compiler vectorises it.
void relaxRow(std::int32_t *__restrict target, const std::int32_t *__restrict source, int length, std::int32_t cost) {
  for (int z = 0; z < length; ++z) {
    const std::int32_t candidate = source[z] + cost;
    target[z] = candidate < target[z] ? candidate : target[z];
  }
}

} // namespace

KernelLevelOptimizer::KernelLevelOptimizer(DeviceLimits limits) : limits_(std::move(limits)) { validate(limits_); }

// Collects every kernel's Pareto options (Theorem 1) and the slack the SM has
// beyond each kernel's cheapest use of every resource. A kernel with a single
// option adds a constant to every cell of V, so only kernels with a choice
// ("flexible" ones) get a layer of the table: the recurrence is unchanged.
bool KernelLevelOptimizer::prepare(std::span<const KernelDemand> kernels, KernelLevelSolution &solution) {
  options_.clear();
  optionBegin_.clear();
  flexible_.clear();
  fixedSharedMemory_ = 0;
  narrowestFitRegisterFile_ = true;
  int minBlocks = 0, minWarps = 0, minRegisters = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const std::size_t begin = options_.size();
    optionBegin_.push_back(begin);
    const ResourceSet obstacles = appendLaunchOptions(limits_, kernels[i], options_);
    if (options_.size() == begin) {
      solution.unplaceableKernel = i;
      solution.exceeded = obstacles;
      return false;
    }
    // Options come with increasing blocks and shared memory, decreasing warps
    // and registers: the first is cheapest in blocks, the last in warps.
    minBlocks += options_[begin].blocksPerSm;
    minWarps += options_.back().warps;
    minRegisters += options_.back().registerUnits;
    narrowestFitRegisterFile_ = narrowestFitRegisterFile_ && options_.back().fitsRegisterFile;
    fixedSharedMemory_ += options_[begin].sharedMemory;
    if (options_.size() - begin > 1)
      flexible_.push_back(i);
  }
  optionBegin_.push_back(options_.size());
  slackBlocks_ = limits_.maxBlocksPerSm - minBlocks;
  slackWarps_ = limits_.warpsPerSm() - minWarps;
  slackRegisters_ = limits_.registerUnitsPerSm() - minRegisters;
  if (slackBlocks_ < 0)
    solution.exceeded.add(Resource::Blocks);
  if (slackWarps_ < 0)
    solution.exceeded.add(Resource::Warps);
  return solution.exceeded.empty();
}

// One step of the Bellman equation
//   V[i, b, w] = min_{b_i} V[i-1, b - b_i, w - w_i b_i] + s_i b_i,
// on indices shifted by the kernel's cheapest use of each resource, so that
// the table only spans the slack of the SM. Layer 0 is all zeros: V[i, b, w]
// is the least shared memory with at most b blocks and w warps (Algorithm 1,
// lines 1-6).
void KernelLevelOptimizer::relaxLayer(std::size_t layer) {
  const std::size_t cells = static_cast<std::size_t>(dims_[0]) * dims_[1] * dims_[2];
  const std::int32_t *previous = table_.data() + (layer - 1) * cells;
  std::int32_t *current = table_.data() + layer * cells;
  std::fill(current, current + cells, kInfinity);
  const std::size_t kernel = flexible_[layer - 1];
  for (std::size_t o = optionBegin_[kernel]; o < optionBegin_[kernel + 1]; ++o) {
    int shift[3];
    if (!shiftOf(kernel, o, shift))
      continue;
    const std::int32_t cost = options_[o].sharedMemory - options_[optionBegin_[kernel]].sharedMemory;
    for (int x = shift[0]; x < dims_[0]; ++x) {
      for (int y = shift[1]; y < dims_[1]; ++y) {
        const std::int32_t *source =
            previous + (static_cast<std::size_t>(x - shift[0]) * dims_[1] + (y - shift[1])) * dims_[2];
        std::int32_t *target = current + (static_cast<std::size_t>(x) * dims_[1] + y) * dims_[2];
        const int length = dims_[2] - shift[2];
        relaxRow(target + shift[2], source, length, cost);
      }
    }
  }
}

// The cell an option moves from, relative to the kernel's cheapest use of
// every resource; false when the option is out of this table's reach.
bool KernelLevelOptimizer::shiftOf(std::size_t kernel, std::size_t o, int shift[3]) const {
  const LaunchOption &option = options_[o];
  if (withRegisters_ && !option.fitsRegisterFile)
    return false;
  const LaunchOption &cheapest = options_[optionBegin_[kernel]];
  const LaunchOption &narrowest = options_[optionBegin_[kernel + 1] - 1];
  const int extraBlocks = option.blocksPerSm - cheapest.blocksPerSm;
  const int extraWarps = option.warps - narrowest.warps;
  const int extraRegisters = (option.registerUnits - narrowest.registerUnits) / registerScale_;
  shift[0] = withRegisters_ ? extraBlocks : 0;
  shift[1] = withRegisters_ ? extraWarps : extraBlocks;
  shift[2] = withRegisters_ ? extraRegisters : extraWarps;
  return shift[0] < dims_[0] && shift[1] < dims_[1] && shift[2] < dims_[2];
}

// Sizes the table. Each dimension spans the SM's slack, but never more than
// the flexible kernels can use together, and register units are counted in
// multiples of their greatest common divisor: both keep the table exact and
// small (the slack of 256 register units on an H100 would dominate).
void KernelLevelOptimizer::sizeTable(bool withRegisters) {
  withRegisters_ = withRegisters;
  int reachBlocks = 0, reachWarps = 0, reachRegisters = 0, divisor = 0;
  for (std::size_t kernel : flexible_) {
    const LaunchOption &cheapest = options_[optionBegin_[kernel]];
    const LaunchOption &narrowest = options_[optionBegin_[kernel + 1] - 1];
    reachBlocks += narrowest.blocksPerSm - cheapest.blocksPerSm;
    reachWarps += cheapest.warps - narrowest.warps;
    reachRegisters += cheapest.registerUnits - narrowest.registerUnits;
    for (std::size_t o = optionBegin_[kernel]; o < optionBegin_[kernel + 1]; ++o)
      divisor = std::gcd(divisor, options_[o].registerUnits - narrowest.registerUnits);
  }
  registerScale_ = std::max(divisor, 1);
  const int blocks = std::min(slackBlocks_, reachBlocks) + 1;
  const int warps = std::min(slackWarps_, reachWarps) + 1;
  const int registers = std::min(slackRegisters_, reachRegisters) / registerScale_ + 1;
  if (withRegisters) {
    dims_[0] = blocks;
    dims_[1] = warps;
    dims_[2] = registers;
  } else {
    dims_[0] = 1;
    dims_[1] = blocks;
    dims_[2] = warps;
  }
}

// Fills the table and returns V[n, B, W] (or V[n, B, W, R]) in bytes.
std::optional<int> KernelLevelOptimizer::runTable(bool withRegisters) {
  // Without flexible kernels every cell of V is the same constant.
  if (flexible_.empty())
    return fixedSharedMemory_;
  sizeTable(withRegisters);
  const std::size_t cells = static_cast<std::size_t>(dims_[0]) * dims_[1] * dims_[2];
  table_.resize((flexible_.size() + 1) * cells);
  std::fill(table_.begin(), table_.begin() + static_cast<std::ptrdiff_t>(cells), 0);
  for (std::size_t layer = 1; layer <= flexible_.size(); ++layer)
    relaxLayer(layer);
  const std::int32_t corner = table_[flexible_.size() * cells + cells - 1];
  if (corner >= kInfinity)
    return std::nullopt;
  return fixedSharedMemory_ + corner;
}

// The P table of Algorithm 1 is not stored: the choice of every layer is the
// option whose predecessor cell explains the cell's value.
std::vector<std::size_t> KernelLevelOptimizer::backtrack() const {
  std::vector<std::size_t> choice(optionBegin_.size() - 1);
  for (std::size_t kernel = 0; kernel + 1 < optionBegin_.size(); ++kernel)
    choice[kernel] = optionBegin_[kernel];
  const std::size_t cells = static_cast<std::size_t>(dims_[0]) * dims_[1] * dims_[2];
  int position[3] = {dims_[0] - 1, dims_[1] - 1, dims_[2] - 1};
  auto cellOf = [&](const int p[3]) { return (static_cast<std::size_t>(p[0]) * dims_[1] + p[1]) * dims_[2] + p[2]; };
  for (std::size_t layer = flexible_.size(); layer >= 1; --layer) {
    const std::size_t kernel = flexible_[layer - 1];
    const std::int32_t value = table_[layer * cells + cellOf(position)];
    for (std::size_t o = optionBegin_[kernel]; o < optionBegin_[kernel + 1]; ++o) {
      int shift[3];
      if (!shiftOf(kernel, o, shift))
        continue;
      const int before[3] = {position[0] - shift[0], position[1] - shift[1], position[2] - shift[2]};
      if (before[0] < 0 || before[1] < 0 || before[2] < 0)
        continue;
      const int cost = options_[o].sharedMemory - options_[optionBegin_[kernel]].sharedMemory;
      if (table_[(layer - 1) * cells + cellOf(before)] + cost != value)
        continue;
      choice[kernel] = o;
      std::copy(before, before + 3, position);
      break;
    }
  }
  return choice;
}

// Eq. (2) for the chosen options: the register units of all kernels fit the
// SM, and each kernel's warps fit the register file on their own.
bool KernelLevelOptimizer::registersFit(const std::vector<std::size_t> &choice) const {
  int units = 0;
  for (std::size_t o : choice) {
    if (!options_[o].fitsRegisterFile)
      return false;
    units += options_[o].registerUnits;
  }
  return units <= limits_.registerUnitsPerSm();
}

void KernelLevelOptimizer::finish(KernelLevelSolution &solution, const std::vector<std::size_t> &choice) const {
  solution.feasible = true;
  solution.exceeded = {};
  for (std::size_t o : choice) {
    const LaunchOption &option = options_[o];
    solution.options.push_back(option);
    solution.launches.push_back({option.warpsPerBlock * limits_.warpSize, option.blocksPerSm,
                                 static_cast<std::int64_t>(option.blocksPerSm) * limits_.smCount});
    solution.usage.blocks += option.blocksPerSm;
    solution.usage.warps += option.warps;
    solution.usage.registerUnits += option.registerUnits;
    solution.usage.sharedMemory += option.sharedMemory;
  }
}

KernelLevelSolution KernelLevelOptimizer::solve(std::span<const KernelDemand> kernels) {
  KernelLevelSolution solution;
  if (!prepare(kernels, solution))
    return solution;
  // Algorithm 1 on blocks and warps; its optimum is exact for the whole
  // model when it also meets S (Eq. 4) and R (Eq. 2).
  const std::optional<int> sharedMemory = runTable(false);
  if (!sharedMemory) {
    solution.exceeded = ResourceSet(Resource::Blocks) | Resource::Warps;
    return solution;
  }
  if (*sharedMemory > limits_.sharedMemoryPerSm) {
    solution.exceeded = Resource::SharedMemory;
    return solution;
  }
  const std::vector<std::size_t> choice = backtrack();
  if (registersFit(choice)) {
    finish(solution, choice);
    return solution;
  }
  // The register constraint binds: the same recurrence over blocks, warps and
  // register units finds the least shared memory among register-feasible
  // assignments (docs/kernelopt.md, section 4, "Registers").
  if (slackRegisters_ < 0 || !narrowestFitRegisterFile_) {
    solution.exceeded = Resource::Registers;
    return solution;
  }
  const std::optional<int> constrained = runTable(true);
  if (!constrained || *constrained > limits_.sharedMemoryPerSm) {
    solution.exceeded =
        constrained ? ResourceSet(Resource::Registers) | Resource::SharedMemory : ResourceSet(Resource::Registers);
    return solution;
  }
  solution.registerExtensionUsed = true;
  finish(solution, backtrack());
  return solution;
}

std::optional<int> KernelLevelOptimizer::minimumSharedMemory(std::span<const KernelDemand> kernels) {
  KernelLevelSolution ignored;
  if (!prepare(kernels, ignored))
    return std::nullopt;
  return runTable(false);
}

} // namespace mqx::kernelopt
