#include "device/cuda/driver_api.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "device/cuda/real_dlsym.hpp"

namespace mqx::device::cuda {
namespace {
constexpr bool Required = true;
constexpr bool Optional = false;
} // namespace

bool DriverApi::load(DriverApi& api, std::string& error) {
  // RTLD_NOLOAD first: when the program already loaded the driver, use that
  // very copy (a second path to another libcuda would be a second driver).
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (library == nullptr) library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    error = fmt::format("cannot load libcuda.so.1: {}", why != nullptr ? why : "not found");
    return false;
  }
  api.library = library;
#define MQX_CU_FN(name, type, need) api.name = reinterpret_cast<type>(realDlsym(library, #name));
#include "device/cuda/driver_functions.inc"
#undef MQX_CU_FN
  return true;
}

bool DriverApi::complete(std::string& missing) const {
  missing.clear();
#define MQX_CU_FN(name, type, need)                                                                                    \
  if (name == nullptr && (need)) missing += (missing.empty() ? "" : ", ") + std::string(#name);
#include "device/cuda/driver_functions.inc"
#undef MQX_CU_FN
  return missing.empty();
}

void* DriverApi::symbol(const char* exportedName) const noexcept {
  return library != nullptr ? realDlsym(library, exportedName) : nullptr;
}

std::string DriverApi::describe(std::string_view call, CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  return fmt::format("{}: {} ({})", call, name != nullptr ? name : fmt::format("CUresult {}", static_cast<int>(result)),
                     text != nullptr ? text : "no description");
}

} // namespace mqx::device::cuda
