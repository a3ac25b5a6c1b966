#pragma once
// The in-memory machine of the `mtrain env` tests, the report options, and a warning lookup.
#include <string>

#include "lib/envreport/report.hpp"

namespace mtrain::envreport::testing {

// A healthy CPU machine: 4 cores, 16 GiB, 8 GiB /dev/shm, eth0 up, a worker that answers.
inline MemoryProbe healthy() {
  MemoryProbe p;
  p.files["/etc/os-release"] = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
  p.files["/proc/cpuinfo"] = "processor\t: 0\nmodel name\t: Test CPU 9000\n";
  p.files["/proc/meminfo"] = "MemTotal:       16777216 kB\nMemAvailable:    8388608 kB\n";
  p.nics = {{"lo", true, true, {"127.0.0.1"}}, {"eth0", true, false, {"10.0.0.5"}}};
  p.spaces["/dev/shm"] = {true, 8ull << 30, 8ull << 30};
  p.lim = {65536, 65536};
  p.cpus = 4;
  p.env = {{"HOME", "/nonexistent-home"}};
  CommandResult w;
  w.started = true;
  w.rc = 0;
  w.out = R"({"libtorch":"1.13.0","cuda":{"compiled":false,"version":null},"nccl":{"compiled":false,"version":null},"gloo":true,"threads":4})";
  p.commands["/opt/mtrain/bin/mtrain-worker build-info"] = w;
  p.programs["/opt/mtrain/bin/mtrain-worker"] = "/opt/mtrain/bin/mtrain-worker";
  return p;
}

inline ReportOptions opts() {
  ReportOptions o;
  o.version = "0.1.0";
  o.executable = "/opt/mtrain/bin/mtrain";
  o.worker_path = "/opt/mtrain/bin/mtrain-worker";
  return o;
}

inline bool has_warning(const json& r, const std::string& needle) {
  for (const auto& w : r.at("warnings"))
    if (w.at("what").get<std::string>().find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace mtrain::envreport::testing
