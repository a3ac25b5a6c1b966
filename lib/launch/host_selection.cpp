#include "lib/launch/host_selection.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/topology/filter.hpp"

namespace mtrain::launch {

bool names_other_host(const std::string& filter) {
  for (const auto& term : str::split(filter, '@')) {
    std::string host = term.substr(0, term.find(':'));
    if (!host.empty() && host != "localhost") return true;
  }
  return false;
}

std::optional<topology::Inventory> selected_hosts(const LaunchOptions& opt, LaunchProbes& probes) {
  const auto& m = opt.multi;
  const auto& p = opt.plan;
  if (m.hostfile.empty()) {
    if (opt.launcher == config::LauncherKind::Ssh)
      throw UsageError(
          "--launcher ssh needs a --hostfile naming the hosts to start the job on",
          "Give --hostfile FILE (lines like 'worker-0 slots=4'), or drop --launcher ssh to run on this machine.");
    if (m.num_nodes >= 0 || m.num_gpus >= 0)
      throw UsageError("--num-nodes/--num-gpus choose hosts from a hostfile, but no --hostfile was given",
                       "Give --hostfile FILE, or use --nproc-per-node on this machine.");
    return std::nullopt;
  }
  const int err = probes.stat_error(m.hostfile);
  // An explicit ssh launcher never falls back to this machine: the job would silently run
  // somewhere other than asked.
  if (opt.launcher == config::LauncherKind::Ssh && err != 0)
    throw UsageError(fmt::format("--launcher ssh: the hostfile {} cannot be read: {}", m.hostfile, std::strerror(err)),
                     "Check the path, or drop --launcher ssh to run on this machine.");
  if (err == ENOENT && !names_other_host(p.include) && !names_other_host(p.exclude) && m.num_nodes <= 1) {
    probes.note(fmt::format("mtrain: hostfile {} not found; running on this machine only (localhost)", m.hostfile));
    return std::nullopt;
  }
  topology::HostSelection sel;
  sel.include = p.include;
  sel.exclude = p.exclude;
  sel.num_nodes = m.num_nodes;
  sel.num_gpus = m.num_gpus;
  return topology::select_hosts(probes.load_hostfile(m.hostfile), sel);
}

}  // namespace mtrain::launch
