// Settings the launcher itself consumes (Scope::Launch / Scope::Slurm): how many ranks, on which
// hosts and GPUs, where rank 0 listens, restarts and logs; and the Slurm allocation to ask for.
// Flag names follow torchrun / the deepspeed launcher so that habits carry over.
#include <algorithm>
#include <cctype>

#include "mtrain/config/setting_builders.hpp"
#include "mtrain/core/strings.hpp"

namespace mtrain::config::detail {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

std::string check_nproc(const std::string& t) {
  if (t == "auto" || t == "cpu" || t == "gpu") return "";
  auto n = str::parse_uint(t);
  if (!n) return "not a count, auto, cpu or gpu";
  if (*n < 1) return "at least one process per node";
  return "";
}

// "", "all", or comma-separated indices and ranges: "0,1,3", "0-3".
std::string check_gpus(const std::string& t) {
  if (t.empty() || t == "all") return "";
  for (const auto& part : str::split(t, ',')) {
    auto ends = str::split(part, '-');
    if (ends.size() > 2 || !std::all_of(ends.begin(), ends.end(), all_digits))
      return "'" + part + "' is not a GPU index or range like 0-3";
    if (ends.size() == 2 && std::stoll(ends[0]) > std::stoll(ends[1]))
      return "range '" + part + "' runs backwards";
  }
  return "";
}

// Slurm's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (and "" for the partition default).
std::string check_time(const std::string& t) {
  if (t.empty() || t == "UNLIMITED" || t == "INFINITE") return "";
  std::string rest = t;
  auto dash = t.find('-');
  if (dash != std::string::npos) {
    if (!all_digits(t.substr(0, dash))) return "days before '-' must be a number";
    rest = t.substr(dash + 1);
  }
  auto parts = str::split(rest, ':');
  if (parts.size() > 3 || !std::all_of(parts.begin(), parts.end(), all_digits))
    return "not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)";
  return "";
}

Setting checked(Setting s, std::string format, std::string (*fn)(const std::string&)) {
  s.format = std::move(format);
  s.check_text = fn;
  return s;
}

}  // namespace

void add_launch_settings(Registry& r) {
  r.add(choice("launch.launcher", "auto", {"auto", "local", "ssh", "slurm"},
               "How ranks are started: auto (srun inside a Slurm allocation, ssh when a "
               "hostfile names other hosts, else this machine), local, ssh or slurm.",
               "launcher"));
  r.add(checked(text("launch.nproc_per_node", "auto",
                     "Ranks per node: a count, gpu (one per selected GPU), cpu (one per core) or "
                     "auto, the default (one per selected GPU, else 1).",
                     "nproc-per-node"),
                "a count, auto, cpu or gpu", check_nproc));
  r.add(integer("launch.nnodes", 1, 1, 1 << 20, "Nodes taking part (hosts from the hostfile or "
                                                "the Slurm allocation).",
                "nnodes"));
  r.add(choice("launch.device", "auto", {"auto", "cpu", "gpu"},
               "What ranks compute on: auto (GPUs when present), cpu (no GPU is assigned, "
               "CUDA_VISIBLE_DEVICES is empty) or gpu (fail when a node has none).",
               "device"));
  r.add(checked(text("launch.gpus", "",
                     "GPU indices used on every node, e.g. 0,1,3 or 0-3; empty or all: every "
                     "GPU.",
                     "gpus"),
                "GPU indices like 0,1,3 or 0-3, or all", check_gpus));
  r.add(text("launch.include", "",
             "Hosts and slots to use, deepspeed syntax: worker-0:0,1@worker-1 (empty: all).",
             "include"));
  r.add(text("launch.exclude", "",
             "Hosts and slots to leave out, deepspeed syntax: worker-1:0@worker-2.", "exclude"));
  r.add(text("launch.hostfile", "",
             "File listing hosts, one per line: 'worker-0 slots=8' (deepspeed/MPI style).",
             "hostfile"));
  r.add(text("launch.master_addr", "", "Address of rank 0's host; empty: the first node.",
             "master-addr"));
  Setting port = integer("launch.master_port", 29500, 0, 65535,
                         "Port of the c10d store rank 0 hosts; 0 or auto: a free port the launcher picks "
                         "(single-node jobs).",
                         "master-port");
  port.allow_auto = true;  // the same values --master-port takes
  r.add(port);
  r.add(choice("launch.rdzv_backend", "static", {"static", "mtrain", "c10d"},
               "Rendezvous: static (node ranks fixed by host order) or mtrain (nodes join the "
               "launcher's store and agree on ranks; c10d is taken as mtrain).",
               "rdzv-backend"));
  r.add(integer("launch.rdzv_port", 29400, 1, 65535,
                "Port of the node-level rendezvous store on the first node.", "rdzv-port"));
  r.add(number("launch.rdzv_timeout_s", 300, 1, 86400,
               "Seconds to wait for every node to join before giving up.", "rdzv-timeout"));
  r.add(choice("launch.scale_up", "checkpoint", {"checkpoint", "now", "off"},
               "With --nnodes MIN:MAX, a node that arrives while the job runs: checkpoint (the ranks get the "
               "preemption notice and save, then the job re-forms with the new node; not counted as a "
               "restart), now (re-form at once, as torchrun) or off (it waits for the next failure).",
               "scale-up"));
  r.add(integer("launch.max_restarts", 0, 0, 1000,
                "Times the whole group is restarted after a rank fails.", "max-restarts"));
  r.add(choice("launch.pass_config", "none", {"none", "deepspeed", "accelerate"},
               "How the job's trainer settings reach a program given to `mtrain launch` (the resolved "
               "job is always in the file MTRAIN_JOB_FILE names): none, deepspeed (each rank gets "
               "--deepspeed_config FILE, a ds_config.json made from the job) or accelerate (the "
               "ACCELERATE_*/FSDP_* variables `accelerate launch` sets).",
               "pass-config"));
  r.add(text("launch.log_dir", "",
             "Folder for one log file per rank (empty: output only on the console).",
             "log-dir"));
  r.add(boolean("launch.raw_output", false,
                "Relay rank output to a terminal byte for byte; by default control characters (escape "
                "sequences, NUL) are shown as ^[ ^@ … on a terminal and always in failure reports.",
                "raw-output"));
}

void add_slurm_settings(Registry& r) {
  r.add(text("slurm.partition", "", "Partition (-p); empty: the cluster default."));
  r.add(integer("slurm.nodes", 1, 1, 1 << 20, "Nodes to allocate (-N)."));
  r.add(integer("slurm.gpus_per_node", 0, 0, 1024, "GPUs per node (--gres=gpu:N); 0: none."));
  r.add(integer("slurm.ntasks_per_node", 0, 0, 4096,
                "Ranks per node; 0: one per GPU (or launch.nproc_per_node)."));
  r.add(integer("slurm.cpus_per_task", 0, 0, 4096, "Cores per rank (-c); 0: the cluster default."));
  r.add(checked(text("slurm.time", "", "Time limit (-t); empty: the partition default."),
                "a Slurm time: minutes, HH:MM:SS or D-HH:MM:SS", check_time));
  r.add(text("slurm.account", "", "Account charged (-A)."));
  r.add(text("slurm.qos", "", "Quality of service (--qos)."));
  r.add(text("slurm.job_name", "mtrain", "Job name (-J)."));
  r.add(text("slurm.constraint", "", "Node features required (-C)."));
  r.add(text("slurm.mem", "", "Memory per node (--mem), e.g. 64G; empty: the cluster default."));
  r.add(boolean("slurm.exclusive", false, "Ask for whole nodes (--exclusive)."));
}

}  // namespace mtrain::config::detail
