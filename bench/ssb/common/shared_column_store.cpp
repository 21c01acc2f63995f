#include "ssb/common/shared_column_store.hpp"

#include "ssb/common/column_file.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/ssb_data.hpp"

#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

namespace mqx::ssb {

namespace bip = boost::interprocess;

namespace {

constexpr char kMagic[8] = {'M', 'Q', 'X', 'S', 'S', 'B', 'C', 'S'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kMaxColumns = 64; // the schema has 50
constexpr std::size_t kMaxTexts = 32;
constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kPathBytes = 4096;
// Columns start on host page boundaries: a lazy copy of one then covers
// whole pages only (docs/design.md, "Copy-on-write").
constexpr std::size_t kColumnAlignment = 4096;
constexpr auto kPollInterval = std::chrono::milliseconds(20);

enum StoreState : std::uint32_t { kLoading = 0, kReady = 1 };

} // namespace

struct ColumnSlot {
  char table[16];
  char column[48];
  std::uint64_t offset;
  std::uint64_t rows;
};

struct TextSlot {
  char key[kKeyBytes];
  std::uint64_t offset;
  std::uint64_t length;
};

struct StoreHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t headerBytes;
  std::atomic<std::uint32_t> state;
  std::atomic<std::uint32_t> stopRequested;
  std::int32_t loaderPid;
  std::uint32_t columnCount;
  double scaleFactor;
  std::uint64_t seed;
  std::uint64_t totalBytes;
  std::uint64_t textOffset;
  std::uint64_t textCapacity;
  std::uint64_t textUsed;
  std::uint32_t textCount;
  char dataDirectory[kPathBytes];
  ColumnSlot columns[kMaxColumns];
  TextSlot texts[kMaxTexts];
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free,
              "the store's state is read across processes without a lock");

struct SharedColumnStore::Mapping {
  bip::mapped_region region;
  StoreHeader* header() const { return static_cast<StoreHeader*>(region.get_address()); }
  const char* base() const { return static_cast<const char*>(region.get_address()); }
};

namespace {

std::size_t alignUp(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

void checkName(const std::string& name) {
  bool valid = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (!valid)
    throw DataError("shared column store name '" + name + "': expected 1 to 64 letters, digits, '.', '_' or '-'");
}

// A zombie (dead, not yet reaped by its parent) is not alive.
bool processAlive(pid_t pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
  std::FILE* stat = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
  if (stat == nullptr) return true;
  char buffer[512] = {};
  std::size_t length = std::fread(buffer, 1, sizeof buffer - 1, stat);
  std::fclose(stat);
  buffer[length] = '\0';
  const char* end = std::strrchr(buffer, ')');
  return end == nullptr || end[1] != ' ' || end[2] != 'Z';
}

void copyText(char* to, std::size_t capacity, std::string_view from, const char* what) {
  if (from.size() >= capacity)
    throw DataError(std::string(what) + " '" + std::string(from) + "' is longer than " + std::to_string(capacity - 1) +
                    " bytes");
  std::memcpy(to, from.data(), from.size());
  to[from.size()] = '\0';
}

bool validHeader(const bip::mapped_region& region) {
  if (region.get_size() < sizeof(StoreHeader)) return false;
  const auto* header = static_cast<const StoreHeader*>(region.get_address());
  return std::memcmp(header->magic, kMagic, sizeof kMagic) == 0 && header->version == kVersion &&
         header->headerBytes == sizeof(StoreHeader) && header->totalBytes <= region.get_size();
}

// The pid of the loader that holds store `object`, or 0 when there is no
// valid store by that name.
pid_t holderOf(const std::string& object) {
  try {
    bip::shared_memory_object shm(bip::open_only, object.c_str(), bip::read_only);
    bip::offset_t size = 0;
    if (!shm.get_size(size) || size < static_cast<bip::offset_t>(sizeof(StoreHeader))) return 0;
    bip::mapped_region region(shm, bip::read_only, 0, sizeof(StoreHeader));
    const auto* header = static_cast<const StoreHeader*>(region.get_address());
    if (std::memcmp(header->magic, kMagic, sizeof kMagic) != 0) return 0;
    return header->loaderPid;
  } catch (const bip::interprocess_exception&) {
    return 0;
  }
}

} // namespace

std::string sharedStoreObjectName(const std::string& name) {
  checkName(name);
  return "mqx-ssb-store-" + std::to_string(::getuid()) + "-" + name;
}

SharedColumnStore SharedColumnStore::create(const std::string& name, const SsbData& data, std::size_t textBytes) {
  const std::string object = sharedStoreObjectName(name);
  if (pid_t holder = holderOf(object); holder != 0 && processAlive(holder) && holder != ::getpid())
    throw DataError("shared column store " + name + " is already kept by loader pid " + std::to_string(holder) +
                    " (ssb-loader --stop --name " + name + ")");
  // Left by a loader that died (or garbage): replace it.
  bip::shared_memory_object::remove(object.c_str());

  // The layout: header, columns in schema order, texts.
  std::size_t offset = alignUp(sizeof(StoreHeader), kColumnAlignment);
  struct Planned {
    const TableSchema* table;
    const ColumnSchema* column;
    std::size_t offset;
    std::int64_t rows;
  };
  std::vector<Planned> planned;
  for (const TableSchema& table : ssbSchema()) {
    std::int64_t rows = data.rows(table.id);
    for (const ColumnSchema& column : table.columns) {
      planned.push_back({&table, &column, offset, rows});
      offset = alignUp(offset + static_cast<std::size_t>(rows) * sizeof(std::int32_t), kColumnAlignment);
    }
  }
  if (planned.size() > kMaxColumns) throw DataError("the schema has more columns than a shared column store holds");
  const std::size_t textOffset = offset;
  const std::size_t total = textOffset + textBytes;

  SharedColumnStore store;
  store.name_ = name;
  store.owner_ = true;
  store.mapping_ = std::make_unique<Mapping>();
  try {
    bip::permissions owner;
    owner.set_permissions(0600);
    bip::shared_memory_object shm(bip::create_only, object.c_str(), bip::read_write, owner);
    shm.truncate(static_cast<bip::offset_t>(total));
    store.mapping_->region = bip::mapped_region(shm, bip::read_write, 0, total);
  } catch (const bip::interprocess_exception& error) {
    bip::shared_memory_object::remove(object.c_str());
    throw DataError("shared column store " + name + ": cannot create " + std::to_string(total >> 20) +
                    " MiB of shared memory (" + error.what() + "; /dev/shm too small?)");
  }

  StoreHeader* header = store.mapping_->header();
  header->version = kVersion;
  header->headerBytes = sizeof(StoreHeader);
  header->state.store(kLoading, std::memory_order_relaxed);
  header->stopRequested.store(0, std::memory_order_relaxed);
  header->loaderPid = ::getpid();
  header->scaleFactor = data.manifest().scaleFactor;
  header->seed = data.manifest().seed;
  header->totalBytes = total;
  header->textOffset = textOffset;
  header->textCapacity = textBytes;
  header->textUsed = 0;
  header->textCount = 0;
  copyText(header->dataDirectory, kPathBytes, std::filesystem::absolute(data.directory()).lexically_normal().string(),
           "data directory");
  header->columnCount = static_cast<std::uint32_t>(planned.size());
  for (std::size_t i = 0; i < planned.size(); ++i) {
    ColumnSlot& slot = header->columns[i];
    copyText(slot.table, sizeof slot.table, planned[i].table->name, "table name");
    copyText(slot.column, sizeof slot.column, planned[i].column->name, "column name");
    slot.offset = planned[i].offset;
    slot.rows = static_cast<std::uint64_t>(planned[i].rows);
  }
  // The magic last: a query that maps the store before this waits.
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(header->magic, kMagic, sizeof kMagic);

  for (const Planned& column : planned) {
    auto* values =
        reinterpret_cast<std::int32_t*>(static_cast<char*>(store.mapping_->region.get_address()) + column.offset);
    const ColumnEntry& entry = data.manifest().table(column.table->name).column(column.column->name);
    readInt32ColumnInto(data.directory() / entry.file, column.rows, {values, static_cast<std::size_t>(column.rows)});
  }
  return store;
}

SharedColumnStore SharedColumnStore::open(const std::string& name, std::chrono::milliseconds wait) {
  const std::string object = sharedStoreObjectName(name);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string waitingFor = "it to exist";
  for (;;) {
    try {
      bip::shared_memory_object shm(bip::open_only, object.c_str(), bip::read_only);
      bip::offset_t size = 0;
      if (shm.get_size(size) && size >= static_cast<bip::offset_t>(sizeof(StoreHeader))) {
        bip::mapped_region region(shm, bip::read_only);
        if (validHeader(region)) {
          const auto* header = static_cast<const StoreHeader*>(region.get_address());
          const pid_t loader = header->loaderPid;
          const bool ready = header->state.load(std::memory_order_acquire) == kReady;
          if (!processAlive(loader))
            throw DataError("shared column store " + name + ": its loader (pid " + std::to_string(loader) +
                            ") is gone" + (ready ? "" : " before the store was ready") + "; start ssb-loader again");
          if (ready) {
            SharedColumnStore store;
            store.name_ = name;
            store.mapping_ = std::make_unique<Mapping>();
            store.mapping_->region = std::move(region);
            return store;
          }
          waitingFor = "its loader (pid " + std::to_string(loader) + ") to finish loading";
        } else {
          waitingFor = "its loader to write a valid header";
        }
      } else {
        waitingFor = "its loader to size it";
      }
    } catch (const bip::interprocess_exception&) {
      // Not created yet: wait for it.
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw DataError("shared column store " + name + " not ready: waited " + std::to_string(wait.count()) +
                      " ms for " + waitingFor + " (start it with ssb-loader --data DIR --name " + name + ")");
    std::this_thread::sleep_for(kPollInterval);
  }
}

bool SharedColumnStore::requestStop(const std::string& name) {
  try {
    bip::shared_memory_object shm(bip::open_only, sharedStoreObjectName(name).c_str(), bip::read_write);
    bip::offset_t size = 0;
    if (!shm.get_size(size) || size < static_cast<bip::offset_t>(sizeof(StoreHeader))) return false;
    bip::mapped_region region(shm, bip::read_write, 0, sizeof(StoreHeader));
    auto* header = static_cast<StoreHeader*>(region.get_address());
    if (std::memcmp(header->magic, kMagic, sizeof kMagic) != 0) return false;
    header->stopRequested.store(1, std::memory_order_release);
    return true;
  } catch (const bip::interprocess_exception&) {
    return false;
  }
}

SharedColumnStore::SharedColumnStore(SharedColumnStore&& other) noexcept
    : name_(std::move(other.name_)), mapping_(std::move(other.mapping_)), owner_(std::exchange(other.owner_, false)) {}

SharedColumnStore& SharedColumnStore::operator=(SharedColumnStore&& other) noexcept {
  std::swap(name_, other.name_);
  std::swap(mapping_, other.mapping_);
  std::swap(owner_, other.owner_);
  return *this;
}

SharedColumnStore::~SharedColumnStore() {
  if (owner_ && mapping_) bip::shared_memory_object::remove(sharedStoreObjectName(name_).c_str());
}

std::filesystem::path SharedColumnStore::dataDirectory() const { return mapping_->header()->dataDirectory; }
double SharedColumnStore::scaleFactor() const { return mapping_->header()->scaleFactor; }
std::uint64_t SharedColumnStore::seed() const { return mapping_->header()->seed; }
pid_t SharedColumnStore::loaderPid() const { return mapping_->header()->loaderPid; }
std::size_t SharedColumnStore::bytes() const { return mapping_->header()->totalBytes; }
std::size_t SharedColumnStore::columnCount() const { return mapping_->header()->columnCount; }

std::span<const std::int32_t> SharedColumnStore::column(TableId table, std::string_view column) const {
  const StoreHeader* header = mapping_->header();
  const std::string_view wantedTable = tableName(table);
  for (std::uint32_t i = 0; i < header->columnCount; ++i) {
    const ColumnSlot& slot = header->columns[i];
    if (wantedTable == slot.table && column == slot.column)
      return {reinterpret_cast<const std::int32_t*>(mapping_->base() + slot.offset),
              static_cast<std::size_t>(slot.rows)};
  }
  throw DataError("shared column store " + name_ + " has no column " + std::string(wantedTable) + "." +
                  std::string(column));
}

void SharedColumnStore::putText(std::string_view key, std::string_view text) {
  StoreHeader* header = mapping_->header();
  if (!owner_ || header->state.load(std::memory_order_relaxed) == kReady)
    throw DataError("shared column store " + name_ +
                    ": texts are written by its loader before "
                    "it is published");
  if (header->textCount == kMaxTexts || header->textUsed + text.size() > header->textCapacity)
    throw DataError("shared column store " + name_ + ": no room for text '" + std::string(key) + "' (" +
                    std::to_string(text.size()) + " bytes)");
  TextSlot& slot = header->texts[header->textCount];
  copyText(slot.key, sizeof slot.key, key, "text key");
  slot.offset = header->textOffset + header->textUsed;
  slot.length = text.size();
  std::memcpy(static_cast<char*>(mapping_->region.get_address()) + slot.offset, text.data(), text.size());
  header->textUsed += text.size();
  ++header->textCount;
}

std::optional<std::string_view> SharedColumnStore::text(std::string_view key) const {
  const StoreHeader* header = mapping_->header();
  for (std::uint32_t i = 0; i < header->textCount; ++i)
    if (key == header->texts[i].key)
      return std::string_view(mapping_->base() + header->texts[i].offset, header->texts[i].length);
  return std::nullopt;
}

void SharedColumnStore::publish() { mapping_->header()->state.store(kReady, std::memory_order_release); }

bool SharedColumnStore::stopRequested() const {
  return mapping_->header()->stopRequested.load(std::memory_order_acquire) != 0;
}

} // namespace mqx::ssb
