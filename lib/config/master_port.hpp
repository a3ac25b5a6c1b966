#pragma once
// launch.master_port, parsed once: a TCP port, or auto (0 or "auto": a free port the launcher
// picks on this machine when it plans).
#include <string>
#include <string_view>

namespace mtrain::config {

struct MasterPort {
  bool pick_free = false;
  int number = 0;  // 1..65535 unless pick_free

  static MasterPort automatic() { return {true, 0}; }
  static MasterPort port(int n) { return {false, n}; }
  bool operator==(const MasterPort& o) const { return pick_free == o.pick_free && number == o.number; }
  bool operator!=(const MasterPort& o) const { return !(*this == o); }
};

// "auto", "0" or 1..65535; anything else throws mtrain::Error (exit 2) naming `key`.
MasterPort master_port_from_text(std::string_view text, const std::string& key);

// "auto" or the number.
std::string to_string(const MasterPort& p);

}  // namespace mtrain::config
