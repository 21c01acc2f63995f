// The fuzz targets' driver where libFuzzer is not available (a compiler
// without -fsanitize=fuzzer): runs LLVMFuzzerTestOneInput once over every
// file of the given corpus directories (or files), so that CI still runs
// the committed corpus through the parsers. Prints how many inputs it tried.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool replayFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return true;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t tried = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path root(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(root, error)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
        if (entry.is_regular_file() && replayFile(entry.path())) ++tried;
    } else if (replayFile(root)) {
      ++tried;
    } else {
      std::fprintf(stderr, "replay: cannot read '%s'\n", argv[i]);
      return 2;
    }
  }
  std::printf("replay: %zu inputs tried (corpus replay, no libFuzzer)\n", tried);
  // An empty corpus proves nothing: the committed seeds must be there.
  return tried > 0 ? 0 : 1;
}
