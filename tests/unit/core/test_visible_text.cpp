// Rank output shown to a person with its control characters visible (lib/core/visible_text.cpp).
#include <catch2/catch.hpp>

#include <string>

#include "lib/core/visible_text.hpp"

using namespace mtrain;

TEST_CASE("control characters are shown visibly", "[core][visible]") {
  CHECK(visible_text("plain text, tabs\tand UTF-8 é ✓") == "plain text, tabs\tand UTF-8 é ✓");
  CHECK(visible_text("\x1b]0;PWNED\x07") == "^[]0;PWNED^G");
  CHECK(visible_text("\x1b[2J") == "^[[2J");
  CHECK(visible_text(std::string("a\0b", 3)) == "a^@b");
  CHECK(visible_text("cr\rlf\n del\x7f") == "cr^Mlf^J del^?");
  CHECK(visible_text("csi \xc2\x9b" "31m") == "csi \\u009b31m");  // C1 CSI as UTF-8
  CHECK(visible_text("\xc2\xa0") == "\xc2\xa0");                  // NBSP is not a control
  CHECK(visible_text("\xc2") == "\xc2");                          // a lone lead byte stays
}
