// What config.cpp's key table knows about names, for the environment
// variables' checks (config_variables.cpp): not part of the configuration's
// interface.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mqx::config_detail {

// "MQX_<SECTION>_" -> "section" for every section of the key table.
const std::map<std::string, std::string>& sectionPrefixes();
// MQX_SIM_COPY_BANDWIDTH_GBPS for sim.copy_bandwidth_gbps.
std::string variableOf(const std::string& key);
// Every key, "section.key".
std::vector<std::string> configKeys();
// `text` on one line (control characters replaced): messages stay one line.
std::string oneLine(const std::string& text);

} // namespace mqx::config_detail
