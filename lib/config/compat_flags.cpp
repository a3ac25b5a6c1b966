// The foreign launch flags and their rewrite. Meanings were checked against the tools' own
// parsers: torch/distributed/run.py (get_args_parser, config_from_args, run), 
// deepspeed/launcher/runner.py (parse_args, main) and accelerate/commands/launch.py with
// accelerate/utils/launch.py (prepare_multi_gpu_env, prepare_deepspeed_cmd_env).
#include "lib/config/compat_flags.hpp"
#include "lib/config/names.hpp"
#include "lib/config/registry.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

namespace {

using A = CompatAction;
constexpr unsigned T = kTorchrun, D = kDeepSpeed, X = kAccelerate;

// torchrun (torch.distributed.run; torch 2.x takes both spellings, 1.x the underscore one).
std::vector<CompatFlag> torchrun_flags() {
  return {
      {{"--nproc_per_node"}, T, true, A::Rename, "--nproc-per-node", "ranks per node: N, auto, cpu or gpu"},
      {{"--nnodes"}, T, true, A::Rename, "--nnodes", "N, or MIN:MAX with --rdzv-backend c10d"},
      {{"--node_rank"}, T, true, A::Rename, "--node-rank", "this node's rank"},
      {{"--master_addr"}, T | D, true, A::Rename, "--master-addr", "address of rank 0's store"},
      {{"--master_port"}, T | D, true, A::Rename, "--master-port", "port of rank 0's store (0: a free one)"},
      {{"--rdzv_backend"}, T | X, true, A::Rename, "--rdzv-backend", "static, or c10d (mtrain's dynamic rendezvous)"},
      {{"--rdzv_endpoint"}, T, true, A::Rename, "--rdzv-endpoint", "HOST[:PORT] of the node rendezvous"},
      {{"--rdzv_id"}, T, true, A::Rename, "--rdzv-id", "run id, the same on every node"},
      {{"--rdzv_conf", "--rdzv-conf"}, T, true, A::Translate, "rdzv_conf",
       "join_timeout=S → --rdzv-timeout S, last_call_timeout=S → --rdzv-last-call S; other keys are refused"},
      {{"--standalone"}, T, false, A::Translate, "standalone",
       "one node, local store (mtrain's default); explicit --rdzv_* values are ignored, as torchrun does"},
      {{"--max_restarts"}, T, true, A::Rename, "--max-restarts", "restarts of the whole group"},
      {{"--monitor_interval", "--monitor-interval"}, T, true, A::Accept, "",
       "accepted and ignored: mtrain learns of a rank's exit at once, without polling"},
      {{"--start_method", "--start-method"}, T, true, A::Translate, "start_method",
       "spawn is accepted (every rank is a fresh process); fork and forkserver are refused"},
      {{"--module"}, T | D | X, false, A::Rename, "--module", "run PROGRAM as a Python module (-m)"},
      {{"--no_python"}, T | D | X, false, A::Rename, "--no-python", "run the program itself, not with Python"},
      {{"--run_path", "--run-path"}, T, false, A::Refuse, "",
       "--run_path runs the script inside the launcher's own interpreter; mtrain starts every rank as "
       "its own process. Drop the flag: a PROGRAM ending in .py runs with Python (--python PATH picks "
       "the interpreter)."},
      {{"--log_dir"}, T, true, A::Translate, "log_dir",
       "logs under DIR with the console kept, unless --redirects 3 (torchrun's meaning; mtrain's own "
       "--log-dir sends output to files instead of the console)"},
      {{"--redirects", "-r"}, T, true, A::Translate, "redirects",
       "3 (every rank's stdout and stderr) → files under --log_dir only; 0 → the console"},
      {{"--tee", "-t"}, T, true, A::Translate, "tee",
       "3 → files under --log_dir and the console (mtrain's --tee); 0 → the console. Without a value "
       "--tee is mtrain's flag"},
      {{"--role"}, T, true, A::Rename, "--role", "role name (ROLE_NAME)"},
      {{"--local_addr", "--local-addr"}, T, true, A::Refuse, "",
       "--local_addr sets the address this node is reached at in the dynamic rendezvous; mtrain "
       "takes it from the node's name. Use --node-name NAME (a name or address the other nodes can "
       "reach), or --master-addr for rank 0's store."},
      {{"--local_ranks_filter", "--local-ranks-filter"}, T, true, A::Refuse, "",
       "--local_ranks_filter picks local ranks for the console; mtrain's --ranks-filter takes global "
       "ranks (on one node they are the same): use --ranks-filter 0,1."},
      {{"--logs_specs", "--logs-specs"}, T, true, A::Refuse, "",
       "--logs_specs plugs a Python class into torchrun's log handling; mtrain has none. Use --log-dir "
       "DIR (and --tee) for per-rank files."},
      {{"--use_env", "--use-env"}, T, false, A::Accept, "",
       "accepted: ranks always get LOCAL_RANK in the environment (torch.distributed.launch --use_env)"},
  };
}

// The DeepSpeed launcher (deepspeed/launcher/runner.py).
std::vector<CompatFlag> deepspeed_flags() {
  return {
      {{"--num_gpus", "--num_accelerators"}, D, true, A::Translate, "num_gpus",
       "GPUs 0..N-1 of each host: --num-gpus N with a hostfile, else --nproc-per-node N"},
      {{"--num_nodes"}, D, true, A::Translate, "num_nodes",
       "the first N hosts of the hostfile (--num-nodes N); without a hostfile only 1 is possible"},
      {{"-H"}, D, true, A::Rename, "--hostfile", "hostfile ('worker-0 slots=4' lines)"},
      {{"-i"}, D, true, A::Rename, "--include", "hosts and slots to use, e.g. localhost:0,2"},
      {{"-e"}, D, true, A::Rename, "--exclude", "hosts and slots to leave out"},
      {{"--no_local_rank"}, D, false, A::Rename, "--no-local-rank",
       "no --local_rank argument (mtrain appends one only with --local-rank-arg)"},
      {{"--launcher"}, D, true, A::Translate, "launcher",
       "pdsh → ssh (mtrain's ssh launcher); openmpi, mvapich, impi, mpich are refused; mtrain's own "
       "values (auto, local, ssh, slurm, slurm-task) keep mtrain's meaning"},
      {{"--launcher_args"}, D, true, A::Refuse, "",
       "--launcher_args passes options to pdsh or mpirun, which mtrain does not use. Use --ssh-option "
       "KEY=VALUE, --ssh-port or --ssh-identity for the ssh launcher."},
      {{"--force_multi"}, D, false, A::Rename, "--launcher=ssh",
       "start even a single host over ssh (--launcher ssh)"},
      {{"--elastic_training"}, D, false, A::Refuse, "",
       "--elastic_training runs DeepSpeed's elastic agent. mtrain's elastic form is --nnodes MIN:MAX "
       "--rdzv-backend c10d --rdzv-endpoint HOST:PORT (nodes join within --rdzv-timeout)."},
      {{"--min_elastic_nodes"}, D, true, A::Refuse, "",
       "--min_elastic_nodes belongs to --elastic_training. Use --nnodes MIN:MAX --rdzv-backend c10d "
       "--rdzv-endpoint HOST:PORT."},
      {{"--max_elastic_nodes"}, D, true, A::Refuse, "",
       "--max_elastic_nodes belongs to --elastic_training. Use --nnodes MIN:MAX --rdzv-backend c10d "
       "--rdzv-endpoint HOST:PORT."},
      {{"--no_ssh_check"}, D, false, A::Accept, "",
       "accepted: mtrain runs no separate ssh check before starting the hosts"},
      {{"--enable_each_rank_log"}, D, true, A::Rename, "--log-dir",
       "each rank's output to files under DIR (mtrain's layout: DIR/JOB/attempt_K/RANK/)"},
      {{"--save_pid"}, D, false, A::Refuse, "",
       "--save_pid writes /tmp/<pid>.ds; mtrain writes no pid file. Take the pid from the shell ($!) "
       "and stop the job with SIGTERM: mtrain forwards it to every rank."},
      {{"--autotuning"}, D, true, A::Refuse, "",
       "--autotuning runs DeepSpeed's autotuner; mtrain has none. `mtrain bench` measures the "
       "bundled trainer's throughput for settings you choose."},
      {{"--bind_cores_to_rank", "--bind_core_list"}, D, false, A::Refuse, "",
       "mtrain does not pin ranks to cores; it sets OMP_NUM_THREADS to cores / ranks. Pin in the "
       "program command (numactl, taskset) if you need it."},
  };
}

// accelerate launch (accelerate/commands/launch.py).
std::vector<CompatFlag> accelerate_flags() {
  return {
      {{"--num_processes", "--num-processes"}, X, true, A::Translate, "num_processes",
       "processes over all machines: --nproc-per-node N / num_machines"},
      {{"--num_machines", "--num-machines"}, X, true, A::Rename, "--nnodes", "machines (nodes)"},
      {{"--machine_rank", "--machine-rank"}, X, true, A::Rename, "--node-rank", "this machine's rank"},
      {{"--main_process_ip", "--main-process-ip"}, X, true, A::Rename, "--master-addr", "rank 0's address"},
      {{"--main_process_port", "--main-process-port"}, X, true, A::Rename, "--master-port", "rank 0's port"},
      {{"--gpu_ids", "--gpu-ids"}, X, true, A::Rename, "--gpus", "GPU ids, e.g. 0,3"},
      {{"--cpu"}, X, false, A::Rename, "--device=cpu", "CPU ranks only (--device cpu)"},
      {{"--multi_gpu", "--multi-gpu"}, X, false, A::Accept, "",
       "accepted: every rank gets the torchrun environment, and ddp is the default strategy"},
      // Every accelerate-only flag also sets --pass-config accelerate (unless given): the
      // program gets the ACCELERATE_* variables `accelerate launch` would set.
      {{"--mixed_precision", "--mixed-precision"}, X, true, A::Translate, "mixed_precision",
       "no|fp16|bf16 → --precision fp32|fp16|bf16; a program gets ACCELERATE_MIXED_PRECISION "
       "(--pass-config accelerate)"},
      {{"--use_deepspeed", "--use-deepspeed"}, X, false, A::Translate, "use_deepspeed",
       "--strategy zero2 (accelerate's default stage) or zero<--zero_stage>; a program gets "
       "ACCELERATE_USE_DEEPSPEED… (--pass-config accelerate)"},
      {{"--zero_stage", "--zero-stage"}, X, true, A::Translate, "zero_stage",
       "ZeRO stage 0-3 → --strategy ddp|zero1|zero2|zero3 (--pass-config accelerate)"},
      {{"--use_fsdp", "--use-fsdp"}, X, false, A::Translate, "use_fsdp",
       "--strategy fsdp; a program gets ACCELERATE_USE_FSDP, FSDP_* (--pass-config accelerate)"},
      {{"--gradient_accumulation_steps", "--gradient-accumulation-steps"}, X, true, A::Translate,
       "gradient_accumulation_steps", "--grad-accum N (--pass-config accelerate)"},
      {{"--gradient_clipping", "--gradient-clipping"}, X, true, A::Translate, "gradient_clipping",
       "--grad-clip X (--pass-config accelerate)"},
      {{"--offload_optimizer_device", "--offload-optimizer-device"}, X, true, A::Translate,
       "offload_optimizer_device", "--set zero.offload_optimizer_device=none|cpu|nvme"},
      {{"--offload_param_device", "--offload-param-device"}, X, true, A::Translate, "offload_param_device",
       "--set zero.offload_param_device=none|cpu|nvme"},
      {{"--config_file", "--config-file"}, X, true, A::Translate, "config_file",
       "--config FILE: the accelerate config.yaml (or ds_config.json), imported on the fly "
       "(--pass-config accelerate)"},
      {{"--num_cpu_threads_per_process", "--num-cpu-threads-per-process"}, X, true, A::Refuse, "",
       "mtrain sets OMP_NUM_THREADS to cores / ranks for every rank unless it is already set: run "
       "`OMP_NUM_THREADS=N mtrain launch …` to choose it."},
  };
}

// The table in help order: torchrun's spellings, then the DeepSpeed launcher's, then accelerate's.
std::vector<CompatFlag> build() {
  std::vector<CompatFlag> table;
  for (auto family : {torchrun_flags, deepspeed_flags, accelerate_flags}) {
    std::vector<CompatFlag> flags = family();
    table.insert(table.end(), std::make_move_iterator(flags.begin()), std::make_move_iterator(flags.end()));
  }
  return table;
}

struct Item {
  std::string flag;
  std::optional<std::string> value;
};

bool is_std_value(const std::string& v) {
  // torchrun's Std.from_str: 0-3, or per local rank "0:1,1:2".
  if (v.size() == 1 && v[0] >= '0' && v[0] <= '3') return true;
  if (v.empty()) return false;
  for (const auto& part : str::split(v, ',')) {
    auto kv = str::split(part, ':');
    if (kv.size() != 2 || !str::parse_uint(kv[0]) || kv[1].size() != 1 || kv[1][0] < '0' || kv[1][0] > '3') return false;
  }
  return true;
}

Error refused(const std::string& spelling, const std::string& paragraph) {
  return Error(fmt::format("{} is not an mtrain launch option", spelling), paragraph);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string tools_of(unsigned bits) {
  std::vector<std::string> t;
  if (bits & kTorchrun) t.push_back("torchrun");
  if (bits & kDeepSpeed) t.push_back("deepspeed");
  if (bits & kAccelerate) t.push_back("accelerate");
  return str::join(t, ", ");
}

class Rewriter {
 public:
  explicit Rewriter(const KnownFlags& known) : known_(known) {}

  CompatRewrite run(const std::vector<std::string>& args) {
    size_t i = 0;
    for (; i < args.size(); ++i) {
      const std::string& tok = args[i];
      if (tok.size() < 2 || tok[0] != '-') break;  // the program starts here
      std::string name = tok;
      std::optional<std::string> inline_value;
      if (str::starts_with(tok, "--")) {
        auto eq = tok.find('=');
        if (eq != std::string::npos) name = tok.substr(0, eq), inline_value = tok.substr(eq + 1);
      }
      auto next_value = [&]() -> std::string {
        if (inline_value) return *inline_value;
        if (i + 1 >= args.size())
          throw Error(fmt::format("{} needs a value", name), "Write it as " + name + " VALUE or " + name + "=VALUE.");
        return args[++i];
      };
      if (const CompatFlag* c = find_compat_flag(name)) {
        // A foreign spelling that is also mtrain's own (--tee, --launcher) keeps mtrain's meaning
        // unless the value is one only the foreign tool has.
        if (c->target == "tee" && name == "--tee" && !inline_value &&
            !(i + 1 < args.size() && is_std_value(args[i + 1]))) {
          add("--tee", std::nullopt);
          continue;
        }
        if (!c->takes_value && inline_value)
          throw Error(fmt::format("{} takes no value (got '{}')", name, *inline_value));
        foreign(*c, name, c->takes_value ? std::optional<std::string>(next_value()) : std::nullopt);
        continue;
      }
      auto k = known_.find(name);
      if (k == known_.end()) throw unknown(name);
      if (k->second) add(name, next_value());
      else if (inline_value) add(name, inline_value);  // CLI11 reports a value on a flag
      else add(name, std::nullopt);
    }
    finish();
    CompatRewrite out;
    for (const auto& it : items_) {
      if (!it.value) {
        out.args.push_back(it.flag);
      } else if (it.value->empty()) {
        // CLI11 reads "--flag=" as a flag without its value and takes the next word instead
        // (`--model-path "" --max-steps 5` set model.path to "--max-steps"): an empty value
        // travels as a word of its own.
        out.args.push_back(it.flag);
        out.args.push_back("");
      } else {
        out.args.push_back(it.flag + "=" + *it.value);
      }
    }
    out.args.insert(out.args.end(), args.begin() + static_cast<long>(i), args.end());
    out.notes = notes_;
    return out;
  }

 private:
  void add(const std::string& flag, std::optional<std::string> value) {
    given_.insert(flag);
    items_.push_back({flag, std::move(value)});
  }

  // A rule's product, added once the whole line is read (see finish).
  void produce(const std::string& from, const std::string& flag, const std::string& value) {
    produced_.push_back({from, {flag, value}});
  }

  void foreign(const CompatFlag& c, const std::string& name, const std::optional<std::string>& v) {
    // Words only `accelerate launch` has: the program was written for it and reads the variables
    // it sets (ACCELERATE_*), as it would under accelerate (tests/e2e/peers parity).
    if (c.tools == kAccelerate && c.action != A::Refuse) accelerate_ = true;
    switch (c.action) {
      case A::Refuse:
        throw refused(name, c.meaning);
      case A::Accept:
        notes_.push_back(fmt::format("{}: {}", name, c.meaning));
        return;
      case A::Rename: {
        auto eq = c.target.find('=');
        if (eq != std::string::npos) add(c.target.substr(0, eq), c.target.substr(eq + 1));
        else add(c.target, v);
        return;
      }
      case A::Translate:
        translate(c.target, name, v.value_or(""));
        return;
    }
  }

  // A Translate rule (CompatFlag::target names it), by the tool whose flag it is.
  void translate(const std::string& rule, const std::string& name, const std::string& v) {
    if (!translate_torchrun(rule, name, v) && !translate_deepspeed(rule, name, v) && !translate_accelerate(rule, name, v))
      throw Error("internal: compat rule '" + rule + "' has no translation");
  }

  // torchrun's rules; false for another tool's.
  bool translate_torchrun(const std::string& rule, const std::string& name, const std::string& v) {
    if (rule == "standalone") {
      standalone_ = true;
    } else if (rule == "rdzv_conf") {
      rdzv_conf(name, v);
    } else if (rule == "start_method") {
      if (v != "spawn")
        throw Error(fmt::format("{} {}: mtrain starts every rank as a fresh process (exec), never by fork", name, v),
                    "Use --start_method spawn or drop the flag.");
      notes_.push_back(fmt::format("{} spawn: every rank is a fresh process", name));
    } else if (rule == "log_dir") {
      torch_log_dir_ = v;
    } else if (rule == "redirects" || rule == "tee") {
      if (!is_std_value(v))
        throw Error(fmt::format("{} '{}' is not one of torchrun's values", name, v),
                    "Give 0 (console), 3 (stdout and stderr), or LOCAL_RANK:N pairs like 0:3,1:0.");
      if (v != "0" && v != "3")
        throw Error(fmt::format("{} {}: mtrain keeps stdout and stderr of every rank together", name, v),
                    "Use 3 (both streams, every rank) or 0, and --ranks-filter to choose which ranks reach "
                    "the console.");
      (rule == "tee" ? tee_ : redirects_) = v;
    } else {
      return false;
    }
    return true;
  }

  // --rdzv_conf key=value,...: the two keys mtrain has a setting for.
  void rdzv_conf(const std::string& name, const std::string& v) {
    for (const auto& part : str::split(v, ',')) {
      if (str::trim(part).empty()) continue;
      auto eq = part.find('=');
      if (eq == std::string::npos)
        throw Error(fmt::format("{} '{}': '{}' is not key=value", name, v, part),
                    "Write it as --rdzv_conf join_timeout=600,last_call_timeout=30.");
      const std::string key = str::trim(part.substr(0, eq)), val = str::trim(part.substr(eq + 1));
      if (key == "join_timeout") add("--rdzv-timeout", val);
      else if (key == "last_call_timeout") add("--rdzv-last-call", val);
      else
        throw Error(fmt::format("{} key '{}' has no mtrain counterpart", name, key),
                    "mtrain takes join_timeout (--rdzv-timeout) and last_call_timeout (--rdzv-last-call); "
                    "a lost node is detected by --node-timeout. Drop the other keys.");
    }
  }

  // The DeepSpeed launcher's rules; false for another tool's.
  bool translate_deepspeed(const std::string& rule, const std::string& name, const std::string& v) {
    if (rule == "launcher") {
      const std::string l = lower(v);
      if (l == "pdsh") {
        add("--launcher", "ssh");
        notes_.push_back(fmt::format("{} {}: mtrain's ssh launcher starts one agent per host", name, v));
      } else if (l == "openmpi" || l == "mvapich" || l == "impi" || l == "mpich") {
        throw Error(fmt::format("{} {}: mtrain does not start ranks through MPI", name, v),
                    "Use --launcher ssh with the same --hostfile (mtrain starts one agent per host), or "
                    "`mtrain slurm submit` on a Slurm cluster.");
      } else {
        add("--launcher", l == "slurm" ? l : v);  // mtrain's own values, and its errors for the rest
      }
    } else if (rule == "num_gpus") {
      num_gpus_ = v;
    } else if (rule == "num_nodes") {
      num_nodes_ = v;
    } else {
      return false;
    }
    return true;
  }

  // accelerate launch's rules; false for another tool's.
  bool translate_accelerate(const std::string& rule, const std::string& name, const std::string& v) {
    if (rule == "num_processes") {
      num_processes_ = v;
    } else if (rule == "mixed_precision") {
      const std::string p = lower(v);
      if (p != "no" && p != "fp16" && p != "bf16")
        throw Error(fmt::format("{} '{}' has no mtrain precision", name, v),
                    "Use no (fp32), fp16 or bf16 (fp8 is not supported).");
      produce(name, "--precision", p == "no" ? "fp32" : p);
      accelerate_ = true;
    } else if (rule == "config_file") {
      add("--config", v);
      accelerate_ = true;
    } else if (rule == "use_deepspeed") {
      use_deepspeed_ = true;
      accelerate_ = true;
    } else if (rule == "zero_stage") {
      auto s = str::parse_uint(v);
      if (!s || *s > 3) throw Error(fmt::format("{} '{}' is not a ZeRO stage", name, v), "Give 0, 1, 2 or 3.");
      zero_stage_ = static_cast<int>(*s);
      accelerate_ = true;
    } else if (rule == "use_fsdp") {
      produce(name, "--strategy", to_string(StrategyName::Fsdp));
      accelerate_ = true;
    } else if (rule == "gradient_accumulation_steps") {
      produce(name, "--grad-accum", v);
      accelerate_ = true;
    } else if (rule == "gradient_clipping") {
      produce(name, "--grad-clip", v);
      accelerate_ = true;
    } else if (rule == "offload_optimizer_device") {
      produce(name, "--set", "zero.offload_optimizer_device=" + lower(v));
      accelerate_ = true;
    } else if (rule == "offload_param_device") {
      produce(name, "--set", "zero.offload_param_device=" + lower(v));
      accelerate_ = true;
    } else {
      return false;
    }
    return true;
  }

  // What needs the whole command line: totals over machines, the log/tee pair, --standalone.
  void finish() {
    if (standalone_) {
      auto dropped = std::remove_if(items_.begin(), items_.end(), [](const Item& it) {
        return it.flag == "--rdzv-backend" || it.flag == "--rdzv-endpoint" || it.flag == "--rdzv-id";
      });
      if (dropped != items_.end()) {
        notes_.push_back("--standalone: the --rdzv_backend/--rdzv_endpoint/--rdzv_id given are ignored, as torchrun does");
        items_.erase(dropped, items_.end());
      }
      notes_.push_back("--standalone: one node with a local store (mtrain's default)");
    }
    if (torch_log_dir_) {
      produce("--log_dir", "--log-dir", *torch_log_dir_);
      if (redirects_ != "3" || tee_ == "3") produce("--log_dir", "--tee", "");
    } else if (given_.count("--log-dir")) {
      if (tee_ == "3") produce("--tee", "--tee", "");  // mtrain's --log-dir already redirects
    } else if (redirects_ == "3" || tee_ == "3") {
      throw Error(fmt::format("--{} 3 writes every rank's output under --log_dir, but none was given",
                              redirects_ == "3" ? "redirects" : "tee"),
                  "Add --log_dir DIR (or use mtrain's --log-dir DIR [--tee]).");
    }
    const bool hostfile = given_.count("--hostfile") > 0;
    if (num_gpus_) produce("--num_gpus", hostfile ? "--num-gpus" : "--nproc-per-node", *num_gpus_);
    if (num_nodes_) {
      if (hostfile) {
        produce("--num_nodes", "--num-nodes", *num_nodes_);
      } else if (*num_nodes_ != "1" && *num_nodes_ != "-1") {
        throw Error(fmt::format("--num_nodes {} needs a hostfile to pick the nodes from", *num_nodes_),
                    "Add --hostfile FILE (-H), as deepspeed needs it too.");
      }
    }
    if (num_processes_) {
      auto total = str::parse_uint(*num_processes_);
      if (!total || *total < 1)
        throw Error(fmt::format("--num_processes '{}' is not a process count", *num_processes_), "Give a positive number.");
      long long machines = 1;
      for (const auto& it : items_)
        if (it.flag == "--nnodes" && it.value) machines = str::parse_uint(*it.value).value_or(1);
      if (machines < 1 || *total % machines != 0)
        throw Error(fmt::format("--num_processes {} does not divide over {} machines", *total, machines),
                    "accelerate counts processes over all machines: give a multiple of --num_machines.");
      produce("--num_processes", "--nproc-per-node", std::to_string(*total / machines));
    }
    if (use_deepspeed_ || zero_stage_) {
      const int stage = zero_stage_.value_or(2);  // accelerate's DeepSpeedPlugin default
      produce(use_deepspeed_ ? "--use_deepspeed" : "--zero_stage", "--strategy", strategy_text_of_zero_stage(stage));
    }
    if (accelerate_ && !given_.count("--pass-config")) produce("accelerate flags", "--pass-config", "accelerate");
    // A product the user also gave as mtrain's flag is two answers to one question.
    for (auto& [from, it] : produced_) {
      if (it.flag == "--tee") {
        if (!given_.count("--tee")) items_.push_back({"--tee", std::nullopt});
        continue;
      }
      if (it.flag != "--set" && given_.count(it.flag))
        throw Error(fmt::format("{} sets {}, which is also given", from, it.flag), "Keep one of them.");
      items_.push_back(it);
    }
  }

  Error unknown(const std::string& name) const {
    std::vector<std::string> names;
    for (const auto& [flag, _] : known_)
      if (str::starts_with(flag, "--")) names.push_back(flag);
    for (const auto& c : compat_flags())
      for (const auto& s : c.spellings)
        if (str::starts_with(s, "--")) names.push_back(s);
    auto near = str::closest(name, names);
    std::string hint = near ? fmt::format("Did you mean {}? ", *near) : std::string();
    hint += "`mtrain launch --help` lists the options (torchrun, deepspeed and accelerate spellings under "
            "Compatibility). The program starts at the first word that is not an option, or after `--`.";
    return Error(fmt::format("unknown option {} before the program", name), hint);
  }

  const KnownFlags& known_;
  std::vector<Item> items_;
  std::set<std::string> given_;
  std::vector<std::pair<std::string, Item>> produced_;
  std::vector<std::string> notes_;
  bool standalone_ = false, use_deepspeed_ = false, accelerate_ = false;
  std::optional<std::string> torch_log_dir_, num_gpus_, num_nodes_, num_processes_;
  std::string redirects_ = "0", tee_ = "0";
  std::optional<int> zero_stage_;
};

}  // namespace

const std::vector<CompatFlag>& compat_flags() {
  static const std::vector<CompatFlag> table = build();
  return table;
}

const CompatFlag* find_compat_flag(std::string_view spelling) {
  for (const auto& c : compat_flags())
    for (const auto& s : c.spellings)
      if (s == spelling) return &c;
  return nullptr;
}

std::vector<std::string> flag_spellings(const std::string& key) {
  const Setting& s = job_registry().require(key);
  std::vector<std::string> out = {dashed(cli_flag(s))};
  for (const auto& a : s.aliases) out.push_back(dashed(a));
  for (const auto& c : compat_flags())
    if (c.action == A::Rename && c.target == out.front())
      for (const auto& sp : c.spellings)
        if (std::find(out.begin(), out.end(), sp) == out.end()) out.push_back(sp);
  return out;
}

CompatRewrite rewrite_launch_args(const std::vector<std::string>& args, const KnownFlags& known) {
  return Rewriter(known).run(args);
}

std::string compat_help() {
  std::string out =
      "Compatibility (torchrun, deepspeed and `accelerate launch` spellings; taken with that tool's "
      "meaning, or refused naming mtrain's equivalent):\n";
  for (const auto& c : compat_flags()) {
    std::string left = str::join(c.spellings, ", ") + (c.takes_value ? " V" : "");
    std::string right;
    switch (c.action) {
      case A::Rename: right = (c.target == c.spellings[0] ? "" : "= " + c.target + ": ") + c.meaning; break;
      case A::Translate:
      case A::Accept: right = c.meaning; break;
      case A::Refuse: right = "refused: " + c.meaning; break;
    }
    out += fmt::format("  {:<34} [{}] {}\n", left, tools_of(c.tools), right);
  }
  return out;
}

}  // namespace mtrain::config
