// A string that a hand-written JSON escaper gets wrong: quotes, backslashes,
// control characters and non-ASCII (2, 3 and 4 bytes in UTF-8).
#pragma once

#include <string>

namespace mqx::bench::test {

inline const std::string kAwkwardText = "quote \" backslash \\ newline \n tab \t bell \x07 unit \x1f "
                                        "\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E /slash";

} // namespace mqx::bench::test
