#pragma once
// Rank output shown to a person: control characters made visible (issue 17, item 9). A rank's
// bytes can carry terminal escape sequences (an OSC window title, clear screen, cursor moves)
// and NULs; on a terminal they act instead of being read, and a failure report is read on one.
//
// C0 controls other than TAB, and DEL, in caret notation (ESC "^[", BEL "^G", NUL "^@", DEL
// "^?"); C1 controls (U+0080–U+009F, as UTF-8 C2 80–C2 9F) as "\u0080"…; everything else
// (printable ASCII, other UTF-8, bytes that are not UTF-8) unchanged.
#include <string>
#include <string_view>

namespace mtrain::launch {

std::string visible_text(std::string_view line);

}  // namespace mtrain::launch
