// The torchrun / deepspeed / accelerate flag table and the rewrite of `mtrain launch` words.
#include <set>

#include <catch2/catch.hpp>

#include "lib/config/compat_flags.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;
using Words = std::vector<std::string>;

namespace {

// A subset of launch's own flags, with their arity, as cmd_launch.cpp derives them from CLI11.
const KnownFlags& known() {
  static const KnownFlags k = {
      {"--nproc-per-node", true}, {"--nnodes", true}, {"--node-rank", true}, {"--master-addr", true},
      {"--master-port", true}, {"--rdzv-backend", true}, {"--rdzv-endpoint", true}, {"--rdzv-id", true},
      {"--rdzv-timeout", true}, {"--rdzv-last-call", true}, {"--max-restarts", true}, {"--log-dir", true},
      {"--tee", false}, {"--role", true}, {"--launcher", true}, {"--hostfile", true}, {"--include", true},
      {"--exclude", true}, {"--num-gpus", true}, {"--num-nodes", true}, {"--no-local-rank", false},
      {"--no-python", false}, {"-m", false}, {"--module", false}, {"--dry-run", false}, {"--device", true},
      {"--gpus", true}, {"--strategy", true}, {"--precision", true}, {"--grad-accum", true},
      {"--grad-clip", true}, {"--set", true}, {"--config", true}, {"--pass-config", true}, {"-h", false},
      {"--help", false}};
  return k;
}

Words rewrite(const Words& w) { return rewrite_launch_args(w, known()).args; }

std::string error_of(const Words& w) {
  try {
    rewrite(w);
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == mtrain::kExitUsage);
    return e.paragraph();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("torchrun spellings become mtrain's, the program starts at the first non-flag", "[config][compat]") {
  CHECK(rewrite({"--nproc_per_node=2", "--master_port=0", "peer.py", "--lr", "1"}) ==
        Words{"--nproc-per-node=2", "--master-port=0", "peer.py", "--lr", "1"});
  CHECK(rewrite({"--nproc-per-node", "2", "train.py"}) == Words{"--nproc-per-node=2", "train.py"});
  CHECK(rewrite({"--nnodes=1", "--node_rank", "0", "--master_addr", "h0", "--rdzv_id", "r", "--max_restarts", "3",
                 "t.py"}) == Words{"--nnodes=1", "--node-rank=0", "--master-addr=h0", "--rdzv-id=r", "--max-restarts=3", "t.py"});
  // Words after the program are the program's, foreign or not.
  CHECK(rewrite({"-m", "pkg.train", "--nproc_per_node=3", "--bogus"}) == Words{"-m", "pkg.train", "--nproc_per_node=3", "--bogus"});
  CHECK(rewrite({"--no_python", "./run.sh"}) == Words{"--no-python", "./run.sh"});
  CHECK(rewrite({"--module", "pkg.train"}) == Words{"--module", "pkg.train"});
  CHECK(rewrite({"--dry-run"}) == Words{"--dry-run"});  // no program: the bundled trainer
}

TEST_CASE("torchrun's --rdzv_conf, --standalone, --tee/--redirects and --log_dir", "[config][compat]") {
  CHECK(rewrite({"--rdzv_conf", "join_timeout=60,last_call_timeout=5", "t.py"}) ==
        Words{"--rdzv-timeout=60", "--rdzv-last-call=5", "t.py"});
  CHECK(error_of({"--rdzv_conf=read_timeout=5", "t.py"}).find("join_timeout (--rdzv-timeout)") != std::string::npos);

  auto r = rewrite_launch_args({"--standalone", "--rdzv_backend=c10d", "--rdzv_endpoint", "h:1", "--nproc_per_node", "2", "t.py"}, known());
  CHECK(r.args == Words{"--nproc-per-node=2", "t.py"});
  CHECK(r.notes.size() == 2);

  CHECK(rewrite({"--log_dir", "L", "t.py"}) == Words{"--log-dir=L", "--tee", "t.py"});  // console kept
  CHECK(rewrite({"--log_dir", "L", "--redirects", "3", "t.py"}) == Words{"--log-dir=L", "t.py"});
  CHECK(rewrite({"--log_dir", "L", "-r", "3", "--tee=3", "t.py"}) == Words{"--log-dir=L", "--tee", "t.py"});
  CHECK(rewrite({"--log-dir", "L", "--tee", "t.py"}) == Words{"--log-dir=L", "--tee", "t.py"});  // mtrain's own
  CHECK(rewrite({"--log-dir", "L", "--tee", "3", "-r", "3", "t.py"}) == Words{"--log-dir=L", "--tee", "t.py"});
  CHECK(error_of({"--log_dir", "L", "--tee", "1", "t.py"}).find("--ranks-filter") != std::string::npos);
  CHECK(error_of({"--log_dir", "L", "-t", "0:3,1:0", "t.py"}).find("together") != std::string::npos);
  CHECK(error_of({"--redirects", "3", "t.py"}).find("--log_dir") != std::string::npos);
  CHECK(error_of({"--start_method", "fork", "t.py"}).find("fresh process") != std::string::npos);
}

TEST_CASE("deepspeed launcher spellings", "[config][compat]") {
  CHECK(rewrite({"--num_gpus", "2", "--no_local_rank", "t.py"}) == Words{"--no-local-rank", "--nproc-per-node=2", "t.py"});
  CHECK(rewrite({"-H", "hosts", "--num_gpus=2", "--num_nodes", "1", "t.py"}) ==
        Words{"--hostfile=hosts", "--num-gpus=2", "--num-nodes=1", "t.py"});
  CHECK(rewrite({"-i", "localhost:0,1", "t.py"}) == Words{"--include=localhost:0,1", "t.py"});
  CHECK(rewrite({"--launcher", "PDSH", "-H", "h", "t.py"}) == Words{"--launcher=ssh", "--hostfile=h", "t.py"});
  CHECK(rewrite({"--launcher", "local", "t.py"}) == Words{"--launcher=local", "t.py"});
  CHECK(rewrite({"--force_multi", "t.py"}) == Words{"--launcher=ssh", "t.py"});
  CHECK(error_of({"--launcher", "openmpi", "t.py"}).find("--launcher ssh") != std::string::npos);
  CHECK(error_of({"--num_nodes", "2", "t.py"}).find("hostfile") != std::string::npos);
  CHECK(error_of({"--elastic_training", "t.py"}).find("--nnodes MIN:MAX") != std::string::npos);
}

TEST_CASE("accelerate launch spellings", "[config][compat]") {
  CHECK(rewrite({"--num_processes", "2", "--mixed_precision", "bf16", "peer.py"}) ==
        Words{"--precision=bf16", "--nproc-per-node=2", "--pass-config=accelerate", "peer.py"});
  CHECK(rewrite({"--num_machines", "2", "--num_processes=4", "--use_deepspeed", "--zero_stage", "3", "t.py"}) ==
        Words{"--nnodes=2", "--nproc-per-node=2", "--strategy=zero3", "--pass-config=accelerate", "t.py"});
  CHECK(rewrite({"--use_deepspeed", "t.py"}) == Words{"--strategy=zero2", "--pass-config=accelerate", "t.py"});
  CHECK(rewrite({"--use_fsdp", "--pass-config", "none", "--cpu", "t.py"}) ==
        Words{"--pass-config=none", "--device=cpu", "--strategy=fsdp", "t.py"});
  CHECK(rewrite({"--config_file", "a.yaml", "--gradient_accumulation_steps", "4", "t.py"}) ==
        Words{"--config=a.yaml", "--grad-accum=4", "--pass-config=accelerate", "t.py"});
  CHECK(rewrite({"--config_file", "a.yaml", "t.py"}) == Words{"--config=a.yaml", "--pass-config=accelerate", "t.py"});
  CHECK(error_of({"--num_processes", "3", "--num_machines", "2", "t.py"}).find("multiple") != std::string::npos);
  CHECK(error_of({"--mixed_precision", "fp8", "t.py"}).find("fp8") != std::string::npos);
  CHECK(error_of({"--use_fsdp", "--strategy", "ddp", "t.py"}).find("also given") != std::string::npos);
  // Any accelerate-only word means an accelerate program: it gets accelerate's variables.
  CHECK(rewrite({"--num_processes", "2", "t.py"}) == Words{"--nproc-per-node=2", "--pass-config=accelerate", "t.py"});
  CHECK(rewrite({"--multi_gpu", "--main_process_port", "0", "t.py"}) ==
        Words{"--master-port=0", "--pass-config=accelerate", "t.py"});
  CHECK(rewrite({"--nproc_per_node", "2", "--master_port", "0", "t.py"}) == Words{"--nproc-per-node=2", "--master-port=0", "t.py"});
  auto notes = rewrite_launch_args({"--multi_gpu", "t.py"}, known()).notes;
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("--multi_gpu") == 0);
}

TEST_CASE("an unknown flag before the program is an error with did-you-mean", "[config][compat]") {
  const std::string e = error_of({"--stratgy", "zero3", "--", "python3", "t.py"});
  CHECK(e.find("unknown option --stratgy") != std::string::npos);
  CHECK(e.find("Did you mean --strategy?") != std::string::npos);
  CHECK(error_of({"--nproc_per_nod=2", "t.py"}).find("Did you mean --nproc_per_node?") != std::string::npos);
  CHECK(error_of({"--dry-run", "--num_gpu", "2", "t.py"}).find("Did you mean --num_gpus?") != std::string::npos);
  CHECK(error_of({"--master_port"}).find("needs a value") != std::string::npos);
}

TEST_CASE("the table: unique spellings, every refusal names an equivalent, help lists all", "[config][compat]") {
  std::set<std::string> seen;
  const std::string help = compat_help();
  for (const auto& c : compat_flags()) {
    REQUIRE(!c.spellings.empty());
    CHECK(c.tools != 0);
    CHECK(!c.meaning.empty());
    for (const auto& s : c.spellings) {
      INFO(s);
      CHECK(seen.insert(s).second);
      CHECK(find_compat_flag(s) == &c);
      CHECK(help.find(s) != std::string::npos);
    }
    if (c.action == CompatAction::Refuse) {
      INFO(c.spellings[0]);
      CHECK((c.meaning.find("--") != std::string::npos || c.meaning.find("mtrain ") != std::string::npos));
      CHECK(error_of({c.spellings[0], "x", "t.py"}).find(c.meaning.substr(0, 20)) != std::string::npos);
    }
  }
  // Every flag the issue names is in the table (or is mtrain's own spelling).
  for (const char* s : {"--nproc_per_node", "--nnodes", "--node_rank", "--master_addr", "--master_port", "--rdzv_backend",
                        "--rdzv_endpoint", "--rdzv_id", "--rdzv_conf", "--max_restarts", "--monitor_interval",
                        "--standalone", "--no_python", "--module", "--log_dir", "--redirects", "--tee", "--role", "--local_addr",
                        "--num_gpus", "--num_nodes", "--no_local_rank", "--launcher", "--elastic_training",
                        "--min_elastic_nodes", "--max_elastic_nodes", "--force_multi", "--num_processes",
                        "--num_machines", "--machine_rank", "--main_process_ip", "--main_process_port",
                        "--mixed_precision", "--use_deepspeed", "--zero_stage", "--use_fsdp", "--multi_gpu", "--cpu",
                        "--config_file", "--gradient_accumulation_steps"})
    CHECK(find_compat_flag(s) != nullptr);
}

TEST_CASE("flag_spellings: every spelling of a launch flag, from the registry and this table", "[compat]") {
  CHECK(flag_spellings("launch.nproc_per_node") == Words{"--nproc-per-node", "--nproc", "--nproc_per_node"});
  CHECK(flag_spellings("launch.nnodes") == Words{"--nnodes", "--num_machines", "--num-machines"});  // accelerate
  // Each foreign spelling the table renames is one of its target's spellings.
  for (const auto& c : compat_flags())
    if (c.action == CompatAction::Rename && c.target == "--node-rank")
      for (const auto& s : c.spellings) CHECK_THAT(flag_spellings("launch.node_rank"), Catch::VectorContains(s));
}

// Issue 40 item 12: `--set ""` (any value flag given an empty value) came out as "--set=", which
// CLI11 reads as the flag alone, taking the next word as its value.
TEST_CASE("an empty value stays a value of its own, not the next flag's", "[config][compat]") {
  CHECK(rewrite({"--log-dir", "", "--strategy", "ddp", "t.py"}) == Words{"--log-dir", "", "--strategy=ddp", "t.py"});
  CHECK(rewrite({"--log-dir=", "--strategy", "ddp", "t.py"}) == Words{"--log-dir", "", "--strategy=ddp", "t.py"});
}
