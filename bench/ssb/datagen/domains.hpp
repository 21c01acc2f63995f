// The value domains of the SSB specification (most inherited from TPC-H):
// regions and nations, the 250 cities, the part hierarchy
// MFGR#m / MFGR#mc / MFGR#mcbb, colours, types, containers, market segments,
// order priorities, ship modes and the calendar names.
//
// Each domain is listed in its generation order (the order in which the
// generator draws an index) and encoded for storage as a sorted Dictionary
// plus the code of each generation index.
#pragma once

#include "ssb/common/dictionary.hpp"
#include "ssb/datagen/rng.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mqx::ssb {

inline constexpr int kNationCount = 25;
inline constexpr int kRegionCount = 5;
inline constexpr int kCitiesPerNation = 10;
inline constexpr int kMfgrCount = 5;
inline constexpr int kCategoriesPerMfgr = 5;
inline constexpr int kBrandsPerCategory = 40;
inline constexpr int kCalendarYears = 7; // 1992..1998

struct Nation {
  std::string_view name;
  int region; // index into regionNames()
};

std::span<const std::string_view> regionNames(); // TPC-H order: AFRICA, AMERICA, ...
std::span<const Nation> nations();               // TPC-H order: ALGERIA, ARGENTINA, ...

// The spec's city: the nation's name cut or space-padded to 9 characters,
// followed by one digit, e.g. "UNITED KI1", "PERU     7".
std::string cityName(int nation, int digit);
std::string mfgrName(int mfgr);                           // "MFGR#1".."MFGR#5"
std::string categoryName(int mfgr, int category);         // "MFGR#11".."MFGR#55"
std::string brandName(int mfgr, int category, int brand); // "MFGR#1101".."MFGR#5540"

// Calendar names and flags of the date dimension.
std::string_view monthName(int month);          // 1..12 -> "January".."December"
std::string_view weekdayName(int weekday);      // 0..6 -> "Sunday".."Saturday"
std::string yearMonthName(int year, int month); // "Dec1997"
int sellingSeasonIndex(int month);              // index into sellingSeasonNames()
std::span<const std::string_view> sellingSeasonNames();
bool isHoliday(int month, int day);

// A domain in generation order with its storage encoding.
struct EncodedDomain {
  Dictionary dictionary;
  std::vector<std::int32_t> codes; // codes[generation index]

  std::int32_t code(std::size_t generationIndex) const { return codes[generationIndex]; }
  std::int32_t size() const { return static_cast<std::int32_t>(codes.size()); }
};

// A value of `domain` drawn uniformly: its code.
inline std::int32_t drawCode(Rng &rng, const EncodedDomain &domain) {
  return domain.code(static_cast<std::size_t>(rng.uniform(0, domain.size() - 1)));
}

// Throws DataError if `values` has duplicates.
EncodedDomain encodeDomain(std::vector<std::string> values);

// Generation indices: region and nation as above; city = nation * 10 + digit;
// mfgr = m - 1; category = (m - 1) * 5 + (c - 1);
// brand = category index * 40 + (b - 1); year-month = (year - 1992) * 12 + month - 1;
// weekday 0 = Sunday; month 0 = January.
EncodedDomain regionDomain();
EncodedDomain nationDomain();
EncodedDomain cityDomain();
EncodedDomain mfgrDomain();
EncodedDomain categoryDomain();
EncodedDomain brandDomain();
EncodedDomain colorDomain();
EncodedDomain partTypeDomain();
EncodedDomain containerDomain();
EncodedDomain marketSegmentDomain();
EncodedDomain orderPriorityDomain();
EncodedDomain shipModeDomain();
EncodedDomain weekdayDomain();
EncodedDomain monthDomain();
EncodedDomain yearMonthDomain();
EncodedDomain sellingSeasonDomain();

} // namespace mqx::ssb
