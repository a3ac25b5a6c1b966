// Settings the launcher itself consumes (Scope::Launch / Scope::Slurm): how many ranks, on which
// hosts and GPUs, where rank 0 listens, restarts and logs; and the Slurm allocation to ask for.
// Flag names follow torchrun / the deepspeed launcher so that habits carry over.
#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>

#include "lib/config/slurm_time.hpp"
#include "lib/config/slurm_values.hpp"

#include "lib/config/launch_choices.hpp"
#include "lib/config/rank_count.hpp"
#include "lib/config/setting_builders.hpp"
#include "lib/core/index_list.hpp"
#include "lib/core/node_count.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {
namespace detail {

namespace {

std::string check_nproc(const std::string& t) { return read_rank_count(t).problem; }

// "", "all", or indices and ranges: "0,1,3", "0-3" — the launcher's own grammar (core/index_list.hpp).
std::string check_gpus(const std::string& t) { return read_index_selection(t, "GPU id").problem; }

// Slurm's --time forms, as the Slurm job reads them (slurm_time.hpp).
std::string check_time(const std::string& t) { return read_slurm_time(t).problem; }

// N or MIN:MAX: the launcher's own grammar (core/node_count.hpp).
std::string check_nnodes(const std::string& t) { return read_nnodes(t).problem; }

// Slurm options are single lines in the sbatch script.
std::string check_line(const std::string& t) {
  return t.find_first_of(std::string("\n\r\0", 3)) == std::string::npos ? "" : "the value contains a line break";
}

std::string check_mem(const std::string& t) {
  static const std::regex re(R"(^\d+[KMGTkmgt]?[Bb]?$)");
  return t.empty() || std::regex_match(t, re) ? "" : "not a memory size like 64G";
}

std::string check_signal(const std::string& t) {
  try {
    (void)normalize_slurm_signal(t);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// "" or a size: digits (a decimal point allowed) and an optional unit B, K/KB/KiB … T/TB/TiB.
std::string check_size(const std::string& t) {
  if (t.empty()) return "";
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  std::string unit;
  for (char c : t.substr(i))
    if (c != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::vector<std::string> units = {"", "b", "k", "kb", "kib", "m", "mb", "mib", "g", "gb", "gib", "t", "tb", "tib"};
  if (i == 0 || std::find(units.begin(), units.end(), unit) == units.end()) return "not a size";
  // 0 is not "detect it" (that is leaving the setting out): a fit check against 0 bytes would
  // refuse every job, and reading it as auto silently ignored what was written.
  if (t.find_first_not_of("0.") >= i)
    return "0 bytes; give the memory each rank may use, e.g. 80GiB, or leave it out to use each GPU's "
           "memory (nvidia-smi) or this host's RAM";
  return "";
}

Setting checked(Setting s, std::string format, std::string (*fn)(const std::string&),
                std::vector<std::string> aliases = {}) {
  s.format = std::move(format);
  s.check_text = fn;
  s.aliases = std::move(aliases);
  return s;
}

// A slurm.* setting: its flag is the key with '-' (`mtrain slurm script --job-name`), its
// variable MTRAIN_SLURM_<FLAG> (plain MTRAIN_TIME or MTRAIN_OUTPUT would say nothing of Slurm),
// and text is a single line.
Setting slurm(Setting s) {
  std::string flag = s.key.substr(std::string("slurm.").size());
  std::replace(flag.begin(), flag.end(), '_', '-');
  s.flag = flag;
  s.env = env_name("slurm-" + flag);
  if (s.type == Type::String && !s.check_text) s.check_text = check_line;
  return s;
}

Setting many(Setting s) {
  s.list = true;
  return s;
}

// A setting of this node or this run only (Setting::per_invocation): flag and MTRAIN_* only.
Setting invocation(Setting s) {
  s.per_invocation = true;
  return s;
}

// --ranks-filter: "" or all (every rank), or ranks like "0" or "0,3" (core/index_list.hpp).
std::string check_ranks(const std::string& t) { return read_index_selection(t, "rank").problem; }

// How many ranks, started how, on which hosts and GPUs.
void add_placement_settings(Registry& r) {
  r.add(choice("launch.launcher", to_string(LauncherKind::Auto), choice_names<LauncherKind>(),
               "How ranks are started: auto (srun inside a Slurm allocation, ssh when a "
               "hostfile names other hosts, else this machine), local, ssh, slurm (an agent per node "
               "inside an allocation), or slurm-task (srun started every rank: translate its "
               "environment and run the program).",
               "launcher"));
  r.add(checked(text("launch.nproc_per_node", "auto",
                     "Ranks per node: a count, gpu (one per selected GPU), cpu (one per core) or "
                     "auto, the default (one per selected GPU, else 1).",
                     "nproc-per-node"),
                "a count, auto, cpu or gpu", check_nproc, {"nproc"}));
  r.add(checked(text("launch.nnodes", "1",
                     "Nodes taking part (hosts from the hostfile or the Slurm allocation): N, or "
                     "MIN:MAX with rdzv_backend mtrain (an elastic job).",
                     "nnodes"),
                "N or MIN:MAX (whole numbers from 1)", check_nnodes));
  r.add(choice("launch.device", to_string(DeviceKind::Auto), choice_names<DeviceKind>(),
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
}

// Where rank 0 and the node store listen, the job's names, this node's place in it, and how
// long nodes wait for each other.
void add_rendezvous_settings(Registry& r) {
  r.add(text("launch.master_addr", "", "Address of rank 0's host; empty: the first node.",
             "master-addr"));
  Setting port = integer("launch.master_port", 29500, 0, 65535,
                         "Port of the c10d store rank 0 hosts; 0 or auto: a free port the launcher picks "
                         "(single-node jobs).",
                         "master-port");
  port.allow_auto = true;  // the same values --master-port takes
  r.add(port);
  r.add(choice("launch.rdzv_backend", to_string(RdzvBackend::Static), choice_names<RdzvBackend>(),
               "Rendezvous: static (node ranks fixed by host order), mtrain (nodes join the "
               "launcher's store and agree on ranks; c10d is taken as mtrain) or etcd (the same, kept in "
               "the etcd cluster --rdzv-endpoint lists: no node holds the store).",
               "rdzv-backend"));
  r.add(integer("launch.rdzv_port", 29400, 1, 65535,
                "Port of the node-level rendezvous store: the one the ssh launcher's store listens on, "
                "and that of an --rdzv-endpoint given without one.",
                "rdzv-port"));
  r.add(text("launch.rdzv_endpoint", "",
             "HOST[:PORT] of the node rendezvous store (default port 29400); the node with that address holds "
             "it, listening only there. Needs MTRAIN_RDZV_TOKEN on every node.",
             "rdzv-endpoint"));
  r.add(text("launch.rdzv_id", "", "Run id (TORCHELASTIC_RUN_ID); default: the job id.", "rdzv-id"));
  // TLS and auth to etcd as etcdctl takes them (--cacert, --cert, --key, --user). The password is
  // no setting: a flag's value is in every process listing and shell history, and a setting's in
  // job files and `config show`; it comes from MTRAIN_ETCD_PASSWORD or a file only.
  r.add(choice("launch.rdzv_etcd_api", to_string(EtcdApi::Grpc), choice_names<EtcdApi>(),
               "With --rdzv-backend etcd: grpc (etcd's native API, as etcdctl speaks it) or gateway (its JSON "
               "gateway over HTTP/1.1, for members reached through a proxy that passes only HTTP/1.1; it costs "
               "etcd about 1.6x the CPU per heartbeat and 1.8x to form a job).",
               "rdzv-etcd-api"));
  r.add(text("launch.rdzv_etcd_cacert", "",
             "With --rdzv-backend etcd: PEM file of the CA that signed etcd's server certificate (its --cert-file); "
             "TLS (https) to every member, the certificate checked against it and the member's name or address. "
             "Empty: https:// members are checked against the system's CA certificates.",
             "rdzv-etcd-cacert"));
  r.add(text("launch.rdzv_etcd_cert", "",
             "With --rdzv-backend etcd: PEM client certificate this node presents (etcd --client-cert-auth: mutual "
             "TLS), signed by the CA of etcd's --trusted-ca-file; with --rdzv-etcd-key.",
             "rdzv-etcd-cert"));
  r.add(text("launch.rdzv_etcd_key", "", "The private key (PEM, no passphrase) of --rdzv-etcd-cert.", "rdzv-etcd-key"));
  Setting etcd_user = text("launch.rdzv_etcd_user", "",
                           "With --rdzv-backend etcd: the etcd user (etcd auth enabled; its role needs readwrite on "
                           "/mtrain/). Its password from the environment variable MTRAIN_ETCD_PASSWORD or "
                           "--rdzv-etcd-password-file, never a flag.",
                           "rdzv-etcd-user");
  etcd_user.env = "MTRAIN_ETCD_USERNAME";  // the variable the etcd backend read before this setting
  r.add(etcd_user);
  r.add(text("launch.rdzv_etcd_password_file", "",
             "File whose first line is the password of --rdzv-etcd-user (keep it chmod 600); instead of "
             "MTRAIN_ETCD_PASSWORD.",
             "rdzv-etcd-password-file"));
  // MTRAIN_JOB_ID, which every rank also finds in its environment: a launch started inside a rank
  // (or by a script that set it) joins that job's run folder, as --job-id always did.
  r.add(text("launch.job_id", "", "Job id (MTRAIN_JOB_ID); default: generated.", "job-id"));
  r.add(text("launch.role", "default", "Role name (ROLE_NAME).", "role"));
  r.add(invocation(integer("launch.node_rank", 0, 0, 65535, "This node's rank, 0..nnodes-1 (node 0 hosts rank 0).",
                           "node-rank")));
  r.add(invocation(text("launch.node_name", "", "This node's name in the job (default: the hostname).", "node-name")));
  r.add(number("launch.rdzv_timeout_s", 300, 1, 86400,
               "Seconds to wait for every node to join before giving up.", "rdzv-timeout"));
  r.add(number("launch.rdzv_last_call_s", 30, 0, 86400,
               "With --nnodes MIN:MAX: seconds to wait for more nodes once MIN have joined.", "rdzv-last-call"));
  r.add(number("launch.node_timeout_s", 30, 0.5, 86400,
               "Seconds without heartbeats after which a node counts as lost and the job stops.", "node-timeout"));
}

// When a rank counts as stalled, and how long a stopped rank gets before SIGKILL.
void add_liveness_settings(Registry& r) {
  r.add(number("launch.heartbeat_timeout_s", 0, 0, 864000,
               "Stop the job (exit 75) when a rank writes no output and does not touch its "
               "MTRAIN_HEARTBEAT_FILE for this many seconds; 0: a rank that touches the file (mtrain-worker "
               "does, every step) is watched once it has, with max(20 s, 20 x its longest gap).",
               "heartbeat-timeout"));
  r.add(number("launch.grace_period_s", 5, 0, 86400, "Seconds between SIGTERM and SIGKILL at teardown.",
               "grace-period"));
}

// Which of the hostfile's hosts and slots are used (the DeepSpeed launcher's --num_nodes and
// --num_gpus), and how the ssh launcher reaches them and what it passes along.
void add_remote_host_settings(Registry& r) {
  r.add(integer("launch.num_nodes", 0, 0, 1 << 20, "Use the first N hosts of the hostfile (0: all).", "num-nodes"));
  r.add(integer("launch.num_gpus", 0, 0, 1 << 20, "Use the first N slots of each host (0: all).", "num-gpus"));
  r.add(text("launch.remote_mtrain", "", "Path of mtrain on the other hosts (default: this binary's path).",
             "remote-mtrain"));
  r.add(text("launch.ssh_identity", "", "ssh private key (-i).", "ssh-identity"));
  r.add(many(text("launch.ssh_option", "", "Extra ssh -o KEY=VALUE (repeatable).", "ssh-option")));
  r.add(integer("launch.ssh_port", 0, 0, 65535, "ssh port on every host (0: ssh's own).", "ssh-port"));
  r.add(many(text("launch.export", "",
                  "Pass VAR (its value here) or VAR=VALUE to every host (repeatable); NCCL_*, GLOO_*, CUDA_*, "
                  "PYTHON*, OMP_* and MTRAIN_* are passed anyway.",
                  "export")));
  r.add(text("launch.export_env_file", "", "File of VAR=VALUE lines to pass to every host.", "export-env-file"));
}

// What reaches the console, and how each line is labelled.
void add_console_settings(Registry& r) {
  r.add(boolean("launch.tee", false, "With --log-dir, also show rank output on the console.", "tee"));
  r.add(text("launch.prefix", "[{host}:{rank}] ", "Console line prefix; {host} {rank} {local_rank} {role}.",
             "prefix"));
  r.add(boolean("launch.no_prefix", false, "No prefix on console lines.", "no-prefix"));
  r.add(checked(text("launch.ranks_filter", "", "Only these ranks reach the console, e.g. 0 or 0,3 (empty: every rank).",
                     "ranks-filter"),
                "ranks like 0 or 0,3", check_ranks));
}

// How PROGRAM is started: with which Python, as a module or not, and with --local_rank or not.
void add_program_settings(Registry& r) {
  r.add(text("launch.python", "python3",
             "Interpreter for PROGRAM.py and -m (resolved on PATH, shown by --dry-run).", "python"));
  Setting module = boolean("launch.module", false,
                           "Run PROGRAM as a Python module: PYTHON -u -m PROGRAM (PYTHON: see --python).", "module");
  module.aliases = {"m"};  // -m, as python and torchrun spell it
  r.add(module);
  r.add(boolean("launch.no_python", false, "Execute PROGRAM itself even when it ends in .py (torchrun --no-python).",
                "no-python"));
  r.add(boolean("launch.local_rank_arg", false,
                "Append --local_rank=N to the program's arguments (DeepSpeed launcher style).", "local-rank-arg"));
  r.add(boolean("launch.no_local_rank", false,
                "Do not append --local_rank (the default); wins over launch.local_rank_arg from any source.",
                "no-local-rank"));
}

// Elastic jobs and restarts: a node arriving while the job runs, a rank failing.
void add_restart_settings(Registry& r) {
  r.add(choice("launch.scale_up", to_string(ScaleUp::checkpoint), choice_names<ScaleUp>(),
               "With --nnodes MIN:MAX, a node that arrives while the job runs: checkpoint (the ranks get the "
               "preemption notice and save, then the job re-forms with the new node; not counted as a "
               "restart), now (re-form at once, as torchrun) or off (it waits for the next failure).",
               "scale-up"));
  r.add(integer("launch.max_restarts", 0, 0, 1000,
                "Times the whole group is restarted after a rank fails.", "max-restarts"));
}

// What the program is handed (the job's trainer settings) and where its output goes.
void add_program_io_settings(Registry& r) {
  r.add(choice("launch.pass_config", to_string(PassConfig::None), choice_names<PassConfig>(),
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

// Before any rank starts: print the plan instead (--dry-run), or check that the bundled
// trainer fits in the device memory (lib/estimate).
void add_preflight_settings(Registry& r) {
  r.add(invocation(boolean("launch.dry_run", false, "Print the launch plan; start nothing.", "dry-run")));
  r.add(invocation(choice("launch.format", to_string(PlanFormat::Text), choice_names<PlanFormat>(), "Plan format for --dry-run.", "format")));
  // The fit check (lib/estimate): before any rank of the bundled trainer starts.
  r.add(checked(text("launch.device_memory", "",
                     "Memory each rank may use, e.g. 80GiB or 24GB, for the fit check and --strategy auto "
                     "(empty: each GPU's memory from nvidia-smi, else this host's available RAM shared by "
                     "its ranks).",
                     "device-memory"),
                "a size such as 80GiB, 24GB or 512MiB", check_size));
  r.add(invocation(boolean("launch.force", false,
                           "Start the bundled trainer even when the estimate says the job does not fit in "
                           "the device memory.",
                           "force")));
}

}  // namespace

// The launch.* section of the settings table, in the order of `mtrain launch --help`, the
// settings reference and completion (the registry keeps insertion order).
void add_launch_settings(Registry& r) {
  add_placement_settings(r);
  add_rendezvous_settings(r);
  add_liveness_settings(r);
  add_remote_host_settings(r);
  add_console_settings(r);
  add_program_settings(r);
  add_restart_settings(r);
  add_program_io_settings(r);
  add_preflight_settings(r);
}

void add_slurm_settings(Registry& r) {
  // `mtrain slurm script|submit` take these as flags and from the job file's slurm: section
  // (lib/slurm/job_options.cpp binds each to its JobOptions field); `mtrain launch` reads the
  // same file inside the allocation and accepts them unchanged.
  r.add(slurm(text("slurm.job_name", "mtrain", "Job name shown by squeue (--job-name).")));
  r.add(slurm(text("slurm.partition", "", "Partition (--partition); empty: the cluster default.")));
  r.add(slurm(integer("slurm.nodes", 1, 1, 1 << 20, "Nodes to allocate (--nodes).")));
  r.add(slurm(integer("slurm.ntasks_per_node", 0, 0, 4096,
                      "Ranks per node; 0: one per GPU (gpus_per_node), else 1, or --nproc-per-node of the "
                      "launch options.")));
  r.add(slurm(integer("slurm.gpus_per_node", 0, 0, 1024, "GPUs per node (--gres=gpu:N); 0: none.")));
  r.add(slurm(text("slurm.gres", "", "Generic resources verbatim, e.g. gpu:a100:8 (instead of gpus_per_node).")));
  r.add(slurm(integer("slurm.cpus_per_task", 0, 0, 4096, "Cores per rank (--cpus-per-task); 0: the cluster default.")));
  r.add(slurm(checked(text("slurm.mem", "", "Memory per node (--mem), e.g. 64G; empty: the cluster default."),
                      "a memory size like 64G", check_mem)));
  r.add(slurm(checked(text("slurm.time", "", "Time limit (--time), e.g. 1-12:00:00; empty: the partition default."),
                      "a Slurm time: minutes, HH:MM:SS or D-HH:MM:SS", check_time)));
  r.add(slurm(text("slurm.account", "", "Account charged (--account).")));
  r.add(slurm(text("slurm.qos", "", "Quality of service (--qos).")));
  r.add(slurm(text("slurm.constraint", "", "Node features required (--constraint).")));
  r.add(slurm(boolean("slurm.exclusive", false, "Do not share nodes with other jobs (--exclusive).")));
  r.add(slurm(text("slurm.output", "", "Job output file (--output; %j job id, %x name); empty: "
                                       "mtrain-slurm/%x-%j.out in the job's folder.")));
  r.add(slurm(text("slurm.error", "", "Job error file (--error); empty: with the output.")));
  r.add(slurm(many(text("slurm.export", "",
                        "Environment for the job: ALL, NONE, NAME or NAME=value (NAME,NAME splits).")))); 
  r.add(slurm(many(text("slurm.sbatch", "", "An extra #SBATCH line, verbatim, e.g. --mail-type=END."))));
  r.add(slurm(many(text("slurm.setup", "", "A shell line run before the launch, e.g. 'module load cuda'."))));
  r.add(slurm(checked(text("slurm.signal", "USR1@90",
                           "Signal sent before the time limit and forwarded to the ranks: SIG@SECONDS, or none."),
                      "SIGNAL[@SECONDS] or none", check_signal)));
  r.add(slurm(boolean("slurm.requeue", false, "Requeue on that signal; the restarted job resumes (--resume auto).")));
  r.add(slurm(choice("slurm.pattern", to_string(SlurmPattern::AgentPerNode), choice_names<SlurmPattern>(),
                     "agent: one mtrain agent per node starts its ranks (default); task: srun starts one task "
                     "per GPU and mtrain translates Slurm's environment.")));
  r.add(slurm(text("slurm.template", "", "A custom sbatch template (same placeholders as templates/slurm/).")));
  r.add(slurm(text("slurm.mtrain", "", "Path of mtrain on the compute nodes; empty: this binary.")));
  r.add(slurm(text("slurm.chdir", "", "Working directory of the job; empty: where it is submitted.")));
}

}  // namespace detail

std::string normalize_slurm_signal(const std::string& v) {
  std::string t = str::trim(v);
  if (t == "none" || t == "off" || t.empty()) return "";
  static const std::regex re(R"(^(?:R?B?:)?(?:SIG)?([A-Z]+[0-9]*|[0-9]+)(?:@([0-9]+))?$)");
  std::smatch m;
  if (!std::regex_match(t, m, re)) throw std::invalid_argument("not SIGNAL[@SECONDS], e.g. USR1@90, or none");
  std::string secs = m[2].matched ? m[2].str() : "60";
  if (secs.size() > 5 || std::stoll(secs) > 65535)
    throw std::invalid_argument(secs + " seconds is more than Slurm accepts (65535)");
  return m[1].str() + "@" + secs;
}

}  // namespace mtrain::config
