// The one exception type of the SSB tools: a data directory that is missing,
// malformed or inconsistent with its manifest. Query programs treat it as
// fatal, so a single type with a precise message is all they need.
#pragma once

#include <stdexcept>
#include <string>

namespace mqx::ssb {

class DataError : public std::runtime_error {
public:
  explicit DataError(const std::string &what) : std::runtime_error(what) {}
};

} // namespace mqx::ssb
