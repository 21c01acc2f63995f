#include "ssb/gpu/operator_advice.hpp"

#include <initializer_list>

namespace mqx::ssb::gpu {
namespace {

LaunchAdvice present(std::initializer_list<BufferAdvice> entries) {
  LaunchAdvice advice;
  for (const BufferAdvice &entry : entries)
    if (entry.buffer != nullptr)
      advice.push_back(entry);
  return advice;
}

constexpr BufferAccess kIn = BufferAccess::Input;
constexpr BufferAccess kOut = BufferAccess::Output;
constexpr BufferAccess kBoth = BufferAccess::Both;

} // namespace

LaunchAdvice selectAdvice(const std::int32_t *column, const std::int32_t *selection,
                          const std::int32_t *out, const std::uint32_t *counter) {
  return present({{column, kIn}, {selection, kIn}, {out, kBoth}, {counter, kBoth}});
}

LaunchAdvice gatherAdvice(const std::int32_t *source, const std::int32_t *indices,
                          const std::int32_t *out) {
  return present({{source, kIn}, {indices, kIn}, {out, kOut}});
}

LaunchAdvice clearTableAdvice(const DeviceHashTable &table) {
  return present({{table.keys, kOut}, {table.values, kOut}});
}

LaunchAdvice buildAdvice(const std::int32_t *keys, const std::int32_t *payload,
                         const std::int32_t *selection, const DeviceHashTable &table) {
  return present(
      {{keys, kIn}, {payload, kIn}, {selection, kIn}, {table.keys, kBoth}, {table.values, kBoth}});
}

LaunchAdvice probeAdvice(const std::int32_t *foreignKeys, const std::int32_t *selection,
                         const DeviceHashTable &table, const std::int32_t *rowsOut,
                         const std::int32_t *positionsOut, const std::int32_t *payloadOut,
                         const std::uint32_t *counter) {
  return present({{foreignKeys, kIn},
                  {selection, kIn},
                  {table.keys, kIn},
                  {table.values, kIn},
                  {rowsOut, kBoth},
                  {positionsOut, kBoth},
                  {payloadOut, kBoth},
                  {counter, kBoth}});
}

LaunchAdvice aggregateAdvice(const GroupKeys &keys, const std::int32_t *first,
                             const std::int32_t *second, const unsigned long long *sums,
                             const unsigned long long *counts) {
  LaunchAdvice advice;
  for (int j = 0; j < keys.count; ++j)
    advice.push_back({keys.column[j], kIn});
  for (const BufferAdvice &entry :
       present({{first, kIn}, {second, kIn}, {sums, kBoth}, {counts, kBoth}}))
    advice.push_back(entry);
  return advice;
}

LaunchAdvice fusedStarAdvice(const FusedStar &star, const unsigned long long *sums,
                             const unsigned long long *counts) {
  LaunchAdvice advice;
  for (int f = 0; f < star.filterCount; ++f)
    advice.push_back({star.filterColumn[f], kIn});
  for (int j = 0; j < star.joinCount; ++j) {
    advice.push_back({star.foreignKey[j], kIn});
    advice.push_back({star.table[j].keys, kIn});
    advice.push_back({star.table[j].values, kIn});
  }
  for (const BufferAdvice &entry :
       present({{star.first, kIn}, {star.second, kIn}, {sums, kBoth}, {counts, kBoth}}))
    advice.push_back(entry);
  return advice;
}

} // namespace mqx::ssb::gpu
