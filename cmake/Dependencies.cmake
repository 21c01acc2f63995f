# Every dependency comes from the distribution (scripts/install-deps installs
# them). On machines without a package registry (the GPU host), header-only
# copies may be carried in .carry/include, which is searched last.
set(MQX_CARRY_INCLUDE ${CMAKE_SOURCE_DIR}/.carry/include)

find_package(Threads REQUIRED)

# libfmt: the compiled library where installed, else header-only.
find_package(fmt CONFIG QUIET)
if(NOT fmt_FOUND)
  find_path(MQX_FMT_INCLUDE fmt/format.h HINTS ${MQX_CARRY_INCLUDE})
  if(NOT MQX_FMT_INCLUDE)
    message(FATAL_ERROR "libfmt not found: run scripts/install-deps")
  endif()
  add_library(fmt_header_only INTERFACE)
  target_include_directories(fmt_header_only SYSTEM INTERFACE ${MQX_FMT_INCLUDE})
  target_compile_definitions(fmt_header_only INTERFACE FMT_HEADER_ONLY=1)
  add_library(fmt::fmt ALIAS fmt_header_only)
endif()

# toml++ is used header-only so that the same build works where only its
# headers are present.
find_path(MQX_TOMLPP_INCLUDE NAMES toml++/toml.h toml++/toml.hpp HINTS ${MQX_CARRY_INCLUDE})
if(NOT MQX_TOMLPP_INCLUDE)
  message(FATAL_ERROR "toml++ not found: run scripts/install-deps")
endif()
add_library(mqx_tomlplusplus INTERFACE)
target_include_directories(mqx_tomlplusplus SYSTEM INTERFACE ${MQX_TOMLPP_INCLUDE})
target_compile_definitions(mqx_tomlplusplus INTERFACE TOML_HEADER_ONLY=1 TOML_EXCEPTIONS=1)

# nlohmann/json, header-only: the one JSON reader and writer of the project
# (statistics, traces, SSB manifests, benchmark results).
find_path(MQX_NLOHMANN_JSON_INCLUDE nlohmann/json.hpp HINTS ${MQX_CARRY_INCLUDE})
if(NOT MQX_NLOHMANN_JSON_INCLUDE)
  message(FATAL_ERROR "nlohmann/json not found (nlohmann/json.hpp): apt-get install nlohmann-json3-dev, "
                      "or run scripts/install-deps (tools/prepare-carry for a host without a package registry)")
endif()
add_library(mqx_nlohmann_json INTERFACE)
target_include_directories(mqx_nlohmann_json SYSTEM INTERFACE ${MQX_NLOHMANN_JSON_INCLUDE})
# Values are read with get<T>() only: an implicit conversion would turn a
# number of the wrong kind (1.5 for a row count) silently into another.
target_compile_definitions(mqx_nlohmann_json INTERFACE JSON_USE_IMPLICIT_CONVERSIONS=0)

# Boost.Interprocess is header-only.
find_path(MQX_BOOST_INCLUDE boost/interprocess/managed_shared_memory.hpp HINTS ${MQX_CARRY_INCLUDE})
if(NOT MQX_BOOST_INCLUDE)
  message(FATAL_ERROR "Boost.Interprocess not found: run scripts/install-deps")
endif()
add_library(mqx_boost_interprocess INTERFACE)
target_include_directories(mqx_boost_interprocess SYSTEM INTERFACE ${MQX_BOOST_INCLUDE})
target_link_libraries(mqx_boost_interprocess INTERFACE rt Threads::Threads)

if(MQX_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# The CUDA toolkit is optional: without it only the simulated backend is built.
if(MQX_WITH_CUDA STREQUAL "AUTO")
  find_package(CUDAToolkit QUIET)
  set(MQX_CUDA_ENABLED ${CUDAToolkit_FOUND})
elseif(MQX_WITH_CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(MQX_CUDA_ENABLED ON)
else()
  set(MQX_CUDA_ENABLED OFF)
endif()
if(MQX_CUDA_ENABLED)
  message(STATUS "mqx: CUDA toolkit ${CUDAToolkit_VERSION} found: building the CUDA backend and interposer")
else()
  message(STATUS "mqx: no CUDA toolkit: building the simulated backend alone")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/CudaLanguage.cmake)
