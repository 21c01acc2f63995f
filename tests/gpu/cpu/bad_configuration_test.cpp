// A bad configuration under libmqx (docs/interposer.md, "Runtime: when a
// process is managed"): the first cuInit fails with
// CUDA_ERROR_NOT_INITIALIZED before the driver starts, allocation-like calls
// fail the same way, the advice API declares nothing, and the whole process
// says so in one error line naming the key. Run with libmqx preloaded over
// the fake libcuda.so.1 and MQX_POLICY_REPLACEMENT=bogus
// (interposer.bad_configuration).
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>


extern "C" int fake_calls(const char* name);

namespace {

// What the process writes to its standard error while `body` runs.
template <typename Body>
std::string standardErrorOf(Body&& body) {
  std::fflush(stderr);
  FILE* capture = std::tmpfile();
  const int saved = dup(STDERR_FILENO);
  dup2(fileno(capture), STDERR_FILENO);
  body();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text;
  std::rewind(capture);
  for (int c = std::fgetc(capture); c != EOF; c = std::fgetc(capture))
    text += static_cast<char>(c);
  std::fclose(capture);
  return text;
}

std::size_t countOf(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
    ++count;
  return count;
}

TEST(BadConfiguration, EveryManagedEntryRefusesAndOneLineNamesTheKey) {
  ASSERT_STREQ(std::getenv("MQX_POLICY_REPLACEMENT"), "bogus") << "run by ctest -R interposer.bad_configuration";
  using DeclareOperator = int (*)(double, std::uint64_t);
  const auto declareOperator = reinterpret_cast<DeclareOperator>(dlsym(RTLD_DEFAULT, "mqx_node_declare_operator"));
  ASSERT_NE(declareOperator, nullptr) << "run with LD_PRELOAD=libmqx.so";
  const std::string said = standardErrorOf([&] {
    EXPECT_EQ(cuInit(0), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(cuInit(0), CUDA_ERROR_NOT_INITIALIZED);
    CUdeviceptr pointer = 0;
    EXPECT_EQ(cuMemAlloc(&pointer, 64), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(declareOperator(1.0, 1 << 20), 0) << "nothing to declare to";
  });
  EXPECT_EQ(fake_calls("cuInit"), 0) << "the driver never started";
  EXPECT_EQ(countOf(said, "\n"), 1u) << said;
  EXPECT_EQ(countOf(said, "MQX_POLICY_REPLACEMENT"), 1u) << said; // the key, as it was given
  EXPECT_NE(said.find("CUDA_ERROR_NOT_INITIALIZED"), std::string::npos) << said;
}

} // namespace
