// The address part shared by customer and supplier: a nation drawn uniformly
// from the 25, its region, and a city drawn uniformly from the nation's 10.
// Uniform nations make every region 1/5 and every nation 1/25 of a table,
// the factors the specification's selectivities are built from.
#pragma once

#include "ssb/common/columnar_table.hpp"
#include "ssb/common/table_writer.hpp"
#include "ssb/datagen/domains.hpp"
#include "ssb/datagen/rng.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mqx::ssb {

struct GeographyCodes {
  std::int32_t city;
  std::int32_t nation;
  std::int32_t region;
};

class GeographyDrawer {
public:
  GeographyDrawer() : cities_(cityDomain()), nations_(nationDomain()), regions_(regionDomain()) {}

  GeographyCodes draw(Rng &rng) const {
    int nation = rng.uniform(0, kNationCount - 1);
    int digit = rng.uniform(0, kCitiesPerNation - 1);
    auto region = static_cast<std::size_t>(nations()[static_cast<std::size_t>(nation)].region);
    return GeographyCodes{
        cities_.code(static_cast<std::size_t>(nation * kCitiesPerNation + digit)),
        nations_.code(static_cast<std::size_t>(nation)),
        regions_.code(region),
    };
  }

  // Dictionaries under the column names of `prefix` ("c" or "s").
  void addDictionaries(DictionaryMap &map, const std::string &prefix) const {
    map.emplace(prefix + "_city", cities_.dictionary);
    map.emplace(prefix + "_nation", nations_.dictionary);
    map.emplace(prefix + "_region", regions_.dictionary);
  }

private:
  EncodedDomain cities_;
  EncodedDomain nations_;
  EncodedDomain regions_;
};

// The address columns of `prefix` ("c" or "s") in a table.
class AddressColumns {
public:
  AddressColumns(ColumnarTable &table, const std::string &prefix)
      : city_(table.column(prefix + "_city")), nation_(table.column(prefix + "_nation")),
        region_(table.column(prefix + "_region")) {}

  void push_back(const GeographyCodes &place) {
    city_.push_back(place.city);
    nation_.push_back(place.nation);
    region_.push_back(place.region);
  }

private:
  std::vector<std::int32_t> &city_;
  std::vector<std::int32_t> &nation_;
  std::vector<std::int32_t> &region_;
};

} // namespace mqx::ssb
