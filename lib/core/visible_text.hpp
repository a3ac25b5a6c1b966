#pragma once
// Bytes from outside shown to a person: control characters made visible (issue 17 item 9, issue 40
// item 6). A rank's output, a zip record's name, a run folder's name, a YAML key or a metrics value
// can carry terminal escape sequences (an OSC window title, clear screen, cursor moves) and NULs;
// on a terminal they act instead of being read. Every name or value that came from a file goes
// through this one function before an error, a warning or a listing prints it.
//
// C0 controls other than TAB, and DEL, in caret notation (ESC "^[", BEL "^G", NUL "^@", DEL
// "^?"); C1 controls (U+0080–U+009F, as UTF-8 C2 80–C2 9F) as "\u0080"…; everything else
// (printable ASCII, other UTF-8, bytes that are not UTF-8) unchanged.
#include <string>
#include <string_view>

namespace mtrain {

std::string visible_text(std::string_view line);

}  // namespace mtrain
