#include "query_work.hpp"

namespace mqx::daemon {

void QueryWork::finished(const std::string& name, std::uint64_t launches) {
  if (launches == 0) return;
  const auto count = static_cast<double>(launches);
  auto known = launchesPerRun_.find(name);
  if (known == launchesPerRun_.end()) {
    if (launchesPerRun_.size() >= kMaxNames) return;
    launchesPerRun_.emplace(name, count);
    sumOfLearned_ += count;
    return;
  }
  const double updated = (1 - smoothing_) * known->second + smoothing_ * count;
  sumOfLearned_ += updated - known->second;
  known->second = updated;
}

double QueryWork::workOf(const std::string& name, std::uint64_t launches) const {
  if (launches == 0) return 0;
  double perRun = kNominalLaunchesPerRun;
  if (auto known = launchesPerRun_.find(name); known != launchesPerRun_.end())
    perRun = known->second;
  else if (!launchesPerRun_.empty())
    perRun = sumOfLearned_ / static_cast<double>(launchesPerRun_.size());
  return static_cast<double>(launches) / (perRun > 0 ? perRun : kNominalLaunchesPerRun);
}

} // namespace mqx::daemon
