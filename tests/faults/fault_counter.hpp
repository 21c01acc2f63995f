// The number of faults the suite injected, printed when the test program
// ends (issue #8: the count is part of what CI shows).
#pragma once

#include <atomic>

namespace mqx::test {

std::atomic<int>& faultsInjected();

} // namespace mqx::test
