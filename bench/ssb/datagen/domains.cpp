#include "ssb/datagen/domains.hpp"

#include "ssb/common/error.hpp"
#include "ssb/datagen/calendar.hpp"

#include <array>
#include <cstdio>

namespace mqx::ssb {
namespace {

constexpr std::array<std::string_view, kRegionCount> kRegions{"AFRICA", "AMERICA", "ASIA", "EUROPE",
                                                              "MIDDLE EAST"};

constexpr std::array<Nation, kNationCount> kNations{{
    {"ALGERIA", 0},       {"ARGENTINA", 1}, {"BRAZIL", 1}, {"CANADA", 1},
    {"EGYPT", 4},         {"ETHIOPIA", 0},  {"FRANCE", 3}, {"GERMANY", 3},
    {"INDIA", 2},         {"INDONESIA", 2}, {"IRAN", 4},   {"IRAQ", 4},
    {"JAPAN", 2},         {"JORDAN", 4},    {"KENYA", 0},  {"MOROCCO", 0},
    {"MOZAMBIQUE", 0},    {"PERU", 1},      {"CHINA", 2},  {"ROMANIA", 3},
    {"SAUDI ARABIA", 4},  {"VIETNAM", 2},   {"RUSSIA", 3}, {"UNITED KINGDOM", 3},
    {"UNITED STATES", 1},
}};

// TPC-H's colour words; SSB's p_color is the first word of the TPC-H p_name.
constexpr std::array<std::string_view, 92> kColors{
    "almond",   "antique",   "aquamarine", "azure",      "beige",     "bisque",    "black",
    "blanched", "blue",      "blush",      "brown",      "burlywood", "burnished", "chartreuse",
    "chiffon",  "chocolate", "coral",      "cornflower", "cornsilk",  "cream",     "cyan",
    "dark",     "deep",      "dim",        "dodger",     "drab",      "firebrick", "floral",
    "forest",   "frosted",   "gainsboro",  "ghost",      "goldenrod", "green",     "grey",
    "honeydew", "hot",       "indian",     "ivory",      "khaki",     "lace",      "lavender",
    "lawn",     "lemon",     "light",      "lime",       "linen",     "magenta",   "maroon",
    "medium",   "metallic",  "midnight",   "mint",       "misty",     "moccasin",  "navajo",
    "navy",     "olive",     "orange",     "orchid",     "pale",      "papaya",    "peach",
    "peru",     "pink",      "plum",       "powder",     "puff",      "purple",    "red",
    "rose",     "rosy",      "royal",      "saddle",     "salmon",    "sandy",     "seashell",
    "sienna",   "sky",       "slate",      "smoke",      "snow",      "spring",    "steel",
    "tan",      "thistle",   "tomato",     "turquoise",  "violet",    "wheat",     "white",
    "yellow",
};

// p_type is three syllables, p_container two (TPC-H clause 4.2.2.13).
constexpr std::array<std::string_view, 6> kTypeSize{"STANDARD", "SMALL",   "MEDIUM",
                                                    "LARGE",    "ECONOMY", "PROMO"};
constexpr std::array<std::string_view, 5> kTypeFinish{"ANODIZED", "BURNISHED", "PLATED", "POLISHED",
                                                      "BRUSHED"};
constexpr std::array<std::string_view, 5> kTypeMetal{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"};
constexpr std::array<std::string_view, 5> kContainerSize{"SM", "LG", "MED", "JUMBO", "WRAP"};
constexpr std::array<std::string_view, 8> kContainerKind{"CASE", "BOX",  "BAG", "JAR",
                                                         "PKG",  "PACK", "CAN", "DRUM"};

constexpr std::array<std::string_view, 5> kSegments{"AUTOMOBILE", "BUILDING", "FURNITURE",
                                                    "MACHINERY", "HOUSEHOLD"};
constexpr std::array<std::string_view, 5> kPriorities{"1-URGENT", "2-HIGH", "3-MEDIUM",
                                                      "4-NOT SPECIFIED", "5-LOW"};
constexpr std::array<std::string_view, 7> kShipModes{"REG AIR", "AIR",  "RAIL", "SHIP",
                                                     "TRUCK",   "MAIL", "FOB"};

constexpr std::array<std::string_view, 12> kMonths{"January",   "February", "March",    "April",
                                                   "May",       "June",     "July",     "August",
                                                   "September", "October",  "November", "December"};
constexpr std::array<std::string_view, 7> kWeekdays{"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                    "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 5> kSeasons{"Winter", "Spring", "Summer", "Fall",
                                                   "Christmas"};

// dbgen's holiday flags: fixed month/day pairs, the same every year.
constexpr std::array<std::pair<int, int>, 10> kHolidays{
    {{12, 24}, {1, 1}, {2, 20}, {4, 20}, {5, 20}, {7, 20}, {8, 20}, {9, 20}, {10, 20}, {11, 20}}};

template <std::size_t N>
std::vector<std::string> toStrings(const std::array<std::string_view, N> &a) {
  return {a.begin(), a.end()};
}

} // namespace

std::span<const std::string_view> regionNames() { return kRegions; }
std::span<const Nation> nations() { return kNations; }

std::string cityName(int nation, int digit) {
  std::string city(kNations[static_cast<std::size_t>(nation)].name.substr(0, 9));
  city.resize(9, ' ');
  city += static_cast<char>('0' + digit);
  return city;
}

std::string mfgrName(int mfgr) { return "MFGR#" + std::to_string(mfgr); }

std::string categoryName(int mfgr, int category) {
  return mfgrName(mfgr) + std::to_string(category);
}

std::string brandName(int mfgr, int category, int brand) {
  // Two digits, as the specification's range MFGR#1101..MFGR#5540 shows
  // (dbgen prints MFGR#121 for brand 1); fixed width keeps byte order equal
  // to numeric order.
  char digits[3];
  std::snprintf(digits, sizeof digits, "%02d", brand);
  return categoryName(mfgr, category) + digits;
}

std::string_view monthName(int month) { return kMonths[static_cast<std::size_t>(month - 1)]; }
std::string_view weekdayName(int weekday) { return kWeekdays[static_cast<std::size_t>(weekday)]; }

std::string yearMonthName(int year, int month) {
  return std::string(monthName(month).substr(0, 3)) + std::to_string(year);
}

int sellingSeasonIndex(int month) {
  if (month <= 3)
    return 0; // Winter
  if (month == 4)
    return 1; // Spring
  if (month <= 8)
    return 2; // Summer
  if (month <= 10)
    return 3; // Fall
  return 4;   // Christmas: November and December
}

std::span<const std::string_view> sellingSeasonNames() { return kSeasons; }

bool isHoliday(int month, int day) {
  for (auto [m, d] : kHolidays)
    if (m == month && d == day)
      return true;
  return false;
}

EncodedDomain encodeDomain(std::vector<std::string> values) {
  Dictionary dictionary = Dictionary::fromValues(values);
  if (dictionary.size() != static_cast<std::int32_t>(values.size()))
    throw DataError("domain has duplicate values");
  std::vector<std::int32_t> codes;
  codes.reserve(values.size());
  for (const std::string &value : values)
    codes.push_back(dictionary.code(value));
  return EncodedDomain{std::move(dictionary), std::move(codes)};
}

EncodedDomain regionDomain() { return encodeDomain(toStrings(kRegions)); }

EncodedDomain nationDomain() {
  std::vector<std::string> values;
  for (const Nation &nation : kNations)
    values.emplace_back(nation.name);
  return encodeDomain(std::move(values));
}

EncodedDomain cityDomain() {
  std::vector<std::string> values;
  for (int nation = 0; nation < kNationCount; ++nation)
    for (int digit = 0; digit < kCitiesPerNation; ++digit)
      values.push_back(cityName(nation, digit));
  return encodeDomain(std::move(values));
}

EncodedDomain mfgrDomain() {
  std::vector<std::string> values;
  for (int m = 1; m <= kMfgrCount; ++m)
    values.push_back(mfgrName(m));
  return encodeDomain(std::move(values));
}

EncodedDomain categoryDomain() {
  std::vector<std::string> values;
  for (int m = 1; m <= kMfgrCount; ++m)
    for (int c = 1; c <= kCategoriesPerMfgr; ++c)
      values.push_back(categoryName(m, c));
  return encodeDomain(std::move(values));
}

EncodedDomain brandDomain() {
  std::vector<std::string> values;
  for (int m = 1; m <= kMfgrCount; ++m)
    for (int c = 1; c <= kCategoriesPerMfgr; ++c)
      for (int b = 1; b <= kBrandsPerCategory; ++b)
        values.push_back(brandName(m, c, b));
  return encodeDomain(std::move(values));
}

EncodedDomain colorDomain() { return encodeDomain(toStrings(kColors)); }

EncodedDomain partTypeDomain() {
  std::vector<std::string> values;
  for (std::string_view size : kTypeSize)
    for (std::string_view finish : kTypeFinish)
      for (std::string_view metal : kTypeMetal)
        values.push_back(std::string(size) + " " + std::string(finish) + " " + std::string(metal));
  return encodeDomain(std::move(values));
}

EncodedDomain containerDomain() {
  std::vector<std::string> values;
  for (std::string_view size : kContainerSize)
    for (std::string_view kind : kContainerKind)
      values.push_back(std::string(size) + " " + std::string(kind));
  return encodeDomain(std::move(values));
}

EncodedDomain marketSegmentDomain() { return encodeDomain(toStrings(kSegments)); }
EncodedDomain orderPriorityDomain() { return encodeDomain(toStrings(kPriorities)); }
EncodedDomain shipModeDomain() { return encodeDomain(toStrings(kShipModes)); }
EncodedDomain weekdayDomain() { return encodeDomain(toStrings(kWeekdays)); }
EncodedDomain monthDomain() { return encodeDomain(toStrings(kMonths)); }
EncodedDomain sellingSeasonDomain() { return encodeDomain(toStrings(kSeasons)); }

EncodedDomain yearMonthDomain() {
  std::vector<std::string> values;
  for (int year = kCalendarStartYear; year < kCalendarStartYear + kCalendarYears; ++year)
    for (int month = 1; month <= 12; ++month)
      values.push_back(yearMonthName(year, month));
  return encodeDomain(std::move(values));
}

} // namespace mqx::ssb
