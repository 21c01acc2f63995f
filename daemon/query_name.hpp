// The name mqx-run gives a query run without --name or a plan: demand is
// learned per name (DemandHistory, UndeclaredDemand), so the name must tell
// programs apart. A program's file name does, except for an interpreter's:
// every PyTorch job would be "python3" and learn one demand for all of them,
// so there the script (or `-m` module) joins it: "python3 train.py".
#pragma once

#include <string>
#include <vector>

namespace mqx::daemon {

[[nodiscard]] std::string defaultQueryName(const std::vector<std::string>& command);

} // namespace mqx::daemon
