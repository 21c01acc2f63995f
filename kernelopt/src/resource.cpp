#include "kernelopt/resource.hpp"

#include <array>

namespace mqx::kernelopt {

std::string_view toString(Resource resource) noexcept {
  switch (resource) {
  case Resource::Warps: return "warps";
  case Resource::Registers: return "registers";
  case Resource::SharedMemory: return "shared memory";
  case Resource::Blocks: return "blocks";
  }
  return "unknown";
}

std::string ResourceSet::toString() const {
  constexpr std::array order{Resource::Warps, Resource::Registers, Resource::SharedMemory, Resource::Blocks};
  std::string text;
  for (Resource resource : order) {
    if (!contains(resource))
      continue;
    if (!text.empty())
      text += '|';
    text += kernelopt::toString(resource);
  }
  return text.empty() ? "none" : text;
}

} // namespace mqx::kernelopt
