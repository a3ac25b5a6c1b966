// `config init` driven through its input stream: adaptive questions, on-the-spot validation,
// --defaults / --set, and the overwrite guard.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "lib/config/validate.hpp"
#include "lib/config/wizard.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;

namespace {
std::map<std::string, json> drive(const std::string& answers, std::string* transcript = nullptr, WizardOptions opt = {}) {
  std::istringstream in(answers);
  std::ostringstream out;
  auto r = run_wizard(job_registry(), in, out, opt);
  if (transcript) *transcript = out.str();
  return r;
}
std::string temp_path(const std::string& name) {
  return "/tmp/mtrain_wizard_test_" + std::to_string(::getpid()) + "_" + name;
}
}  // namespace

TEST_CASE("all defaults: Enter on every question", "[config][wizard]") {
  std::string t;
  auto a = drive(std::string(40, '\n'), &t);
  CHECK(a.at("strategy") == "ddp");
  CHECK(a.at("launch.launcher") == "auto");
  CHECK(a.count("zero.offload_optimizer_device") == 0);  // not asked for ddp
  CHECK(a.count("fsdp.sharding_strategy") == 0);
  CHECK(a.count("slurm.partition") == 0);
  CHECK_THAT(t, Catch::Contains("1) ddp  2) zero1"));
  CHECK_THAT(t, Catch::Contains("strategy [ddp]:"));
}

TEST_CASE("the last question: a TensorBoard folder (issue 42)", "[config][wizard]") {
  std::string t;
  // Enter on every question before it (their number depends on what the host's estimate
  // recommends), then a TensorBoard folder: the first count at which "tb" lands on it.
  std::map<std::string, json> a;
  for (int enters = 0; enters < 40 && !a.count("log.tensorboard"); ++enters) {
    try {
      a = drive(std::string(static_cast<size_t>(enters), '\n') + "tb\n", &t);
    } catch (const mtrain::Error&) {  // "tb" answered an earlier question; the input ended early
    }
  }
  CHECK(a.at("log.tensorboard") == "tb");
  CHECK_THAT(t, Catch::Contains("Watch the run in TensorBoard?"));
  CHECK(validate_text(job_registry(), wizard_yaml(job_registry(), a, "j.yaml"), "j.yaml").ok());
}

TEST_CASE("strategy zero3 asks offload questions, fp16 asks loss scaling, Slurm asks the allocation",
          "[config][wizard]") {
  // launcher: 4 = slurm; nproc: gpu; slurm nodes 2, gpus 4, partition gpu, time 2:00:00, account (Enter)
  // model: Enter (gpt), n_layer 6, n_head 8, n_embd 256; precision 3 = fp16; batch 8 (model, world and
  // precision are known before the strategy: config init shows the estimate there); strategy 4 = zero3;
  // offload opt cpu; param cpu; loss_scale Enter (0 dynamic); power 12; accum 2; steps 100; checkpoint
  // interval Enter; optim Enter; lr 3e-4; work dir; TensorBoard Enter
  std::string t;
  auto a =
      drive("4\ngpu\n2\n4\ngpu\n2:00:00\n\n\n\n6\n8\n256\n3\n8\n4\ncpu\ncpu\n\n12\n2\n100\n\n\n3e-4\nruns/a\n\n", &t);
  CHECK(a.at("launch.launcher") == "slurm");
  CHECK(a.at("slurm.nodes") == 2);
  CHECK(a.at("slurm.gpus_per_node") == 4);
  CHECK(a.at("slurm.partition") == "gpu");
  CHECK(a.at("slurm.time") == "2:00:00");
  CHECK(a.at("strategy") == "zero3");
  CHECK(a.at("zero.offload_optimizer_device") == "cpu");
  CHECK(a.at("zero.offload_param_device") == "cpu");
  CHECK(a.at("train.precision") == "fp16");
  CHECK(a.at("precision.loss_scale") == 0.0);
  CHECK(a.at("precision.initial_scale_power") == 12);
  CHECK(a.at("optim.lr") == Approx(3e-4));
  CHECK(a.at("train.work_dir") == "runs/a");
  CHECK(a.at("log.tensorboard") == "");  // Enter: no TensorBoard
  CHECK(a.count("launch.hostfile") == 0);
  CHECK(a.count("launch.nnodes") == 0);  // Enter: the allocation's 2, fixed: no rendezvous question
  CHECK(a.count("launch.rdzv_backend") == 0);
  CHECK(validate_text(job_registry(), wizard_yaml(job_registry(), a, "j.yaml"), "j.yaml").ok());
}

TEST_CASE("an elastic Slurm job is offered the etcd rendezvous, whose members must be given",
          "[config][wizard][etcd]") {
  // launcher 4 = slurm; nproc 1; 4 nodes, no GPUs, partition/time/account Enter; nnodes 2:4;
  // rendezvous 4 = etcd; members Enter (refused: no default), then the list; the rest Enter.
  std::string t;
  auto a = drive("4\n1\n4\n\n\n\n\n2:4\n4\n\ne1:2379,e2:2379,e3:2379\n" + std::string(30, '\n'), &t);
  CHECK(a.at("launch.nnodes") == "2:4");
  CHECK(a.at("launch.rdzv_backend") == "etcd");
  CHECK(a.at("launch.rdzv_endpoint") == "e1:2379,e2:2379,e3:2379");
  CHECK_THAT(t, Catch::Contains("etcd: an etcd cluster you run (any node may be lost)"));
  CHECK_THAT(t, Catch::Contains("not accepted: the etcd backend needs its members"));
  CHECK(validate_text(job_registry(), wizard_yaml(job_registry(), a, "j.yaml"), "j.yaml").ok());
  // An elastic range that does not hold the allocation is refused on the spot.
  std::string t2;
  drive("4\n1\n4\n\n\n\n\n5:8\n2:4\n2\n" + std::string(30, '\n'), &t2);
  CHECK_THAT(t2, Catch::Contains("launch.nnodes 5:8 and slurm.nodes 4 disagree"));
  CHECK_THAT(t2, Catch::Contains("launch.nnodes [4]:"));  // the allocation's count is the default
}

TEST_CASE("fsdp asks sharding, ssh asks hostfile, invalid answers are re-asked with the reason", "[config][wizard]") {
  std::string t;
  // launcher ssh; nproc 'lots' (bad) then 2; hostfile Enter (refused: ssh needs one) then hosts.txt;
  // nnodes 0 (bad) then 2; model Enter; n_layer; n_head 6; n_embd 128 (not divisible) then 96;
  // precision, batch Enter; strategy 'fsdpp' (bad) then fsdp; sharding 9 (bad number) then HYBRID_SHARD;
  // cpu_offload y; rest Enter.
  auto a = drive("ssh\nlots\n2\n\nhosts.txt\n0\n2\n\n\n6\n128\n96\n\n\nfsdpp\nfsdp\n9\nHYBRID_SHARD\ny\n" + std::string(10, '\n'), &t);
  CHECK(a.at("launch.launcher") == "ssh");
  CHECK(a.at("launch.nproc_per_node") == "2");
  CHECK(a.at("launch.hostfile") == "hosts.txt");
  CHECK(a.at("launch.nnodes") == "2");  // N or MIN:MAX, text
  CHECK(a.at("model.n_embd") == 96);
  CHECK(a.at("strategy") == "fsdp");
  CHECK(a.at("fsdp.sharding_strategy") == "HYBRID_SHARD");
  CHECK(a.at("fsdp.cpu_offload") == true);
  CHECK(a.count("zero.offload_optimizer_device") == 0);
  CHECK_THAT(t, Catch::Contains("not accepted: setting 'launch.nproc_per_node' got 'lots'"));
  CHECK_THAT(t, Catch::Contains("not accepted: launch.launcher is 'ssh' but no launch.hostfile"));
  CHECK_THAT(t, Catch::Contains("setting 'launch.nnodes' got '0' ('0' is not a node count (1 to 100000)"));
  CHECK_THAT(t, Catch::Contains("model.n_embd 128 is not divisible by model.n_head 6"));
  CHECK_THAT(t, Catch::Contains("did you mean 'fsdp'"));
  CHECK_THAT(t, Catch::Contains("9 is not one of the numbers 1-4"));
}

TEST_CASE("torchscript asks for the model file and the data files, and checks they exist", "[config][wizard]") {
  const std::string net = temp_path("net.pt"), data = temp_path("data.pt"), odd = temp_path("odd.bin"),
                    tokens = temp_path("train.bin");
  std::ofstream(net) << "zip";
  std::ofstream(data) << "zip";
  std::ofstream(odd) << "abc";      // a raw token file of an odd number of bytes
  std::ofstream(tokens) << "abcd";  // two uint16 tokens
  std::string t;
  // launcher, nproc: Enter; model torchscript; a missing file, then net; loss cross_entropy;
  // data tensors; data.path Enter (refused: empty), then data; val_path missing, then Enter; rest Enter.
  // data.name: Enter (auto, which has no task for a TorchScript model: refused), then tensors.
  auto a = drive("\n\ntorchscript\n/nonexistent/net.pt\n" + net + "\ncross_entropy\n\ntensors\n\n" + data +
                     "\n/nonexistent/val.pt\n\n" + std::string(12, '\n'),
                 &t);
  CHECK(a.at("model.name") == "torchscript");
  CHECK(a.at("model.path") == net);
  CHECK(a.at("model.loss") == "cross_entropy");
  CHECK(a.at("data.name") == "tensors");
  CHECK(a.at("data.path") == data);
  CHECK(a.at("data.val_path") == "");
  CHECK(a.count("model.n_layer") == 0);
  CHECK_THAT(t, Catch::Contains("not accepted: model.path '/nonexistent/net.pt' does not exist"));
  CHECK_THAT(t, Catch::Contains("not accepted: data.name is auto, which for model 'torchscript' is synthetic data"));
  CHECK_THAT(t, Catch::Contains("not accepted: data.path is empty but data.name is tensors"));
  CHECK_THAT(t, Catch::Contains("not accepted: data.val_path '/nonexistent/val.pt' does not exist"));
  // Tokens: the file is checked as the launcher checks it (a raw file of an odd size is refused).
  auto b = drive("\n\ntorchscript\n" + net + "\nlm_cross_entropy\ntokens\n" + odd + "\n" + tokens + "\n" +
                     std::string(12, '\n'),
                 &t);
  CHECK(b.at("data.name") == "tokens");
  CHECK(b.at("data.path") == tokens);
  CHECK_THAT(t, Catch::Contains("has 3 bytes, an odd number"));
  // Other models are not asked about files.
  auto c = drive(std::string(40, '\n'), &t);
  CHECK(c.count("model.path") == 0);
  CHECK(c.count("data.path") == 0);
  for (const auto& f : {net, data, odd, tokens}) std::remove(f.c_str());
}

TEST_CASE("input ending early writes nothing", "[config][wizard]") {
  CHECK_THROWS_WITH(drive("\n\n"), Catch::Contains("input ended"));
}

TEST_CASE("wizard with --defaults and --set answers without reading", "[config][wizard]") {
  WizardOptions opt;
  opt.use_defaults = true;
  opt.sets = {"strategy=zero2", "optim.lr=0.01", "checkpoint.keep=5"};
  std::string t;
  auto a = drive("", &t, opt);
  CHECK(a.at("strategy") == "zero2");
  CHECK(a.at("zero.offload_optimizer_device") == "none");  // asked because of zero2, took its default
  CHECK(a.at("optim.lr") == Approx(0.01));
  CHECK(a.at("checkpoint.keep") == 5);  // not a question, still written
  CHECK_THAT(t, Catch::Contains("strategy: zero2 (from --set)"));
  opt.sets = {"strategy=zero9"};
  CHECK_THROWS_WITH(drive("", nullptr, opt), Catch::Contains("--set strategy=zero9"));
}

TEST_CASE("init refuses to overwrite without --force and writes a valid file", "[config][wizard]") {
  InitOptions opt;
  opt.output = temp_path("job.yaml");
  opt.wizard.use_defaults = true;
  std::remove(opt.output.c_str());
  std::istringstream in;
  std::ostringstream out;
  init_job_file(job_registry(), opt, in, out);
  CHECK(validate_file(job_registry(), opt.output).ok());
  CHECK_THROWS_WITH(init_job_file(job_registry(), opt, in, out), Catch::Contains("already exists") && Catch::Contains("--force"));
  opt.force = true;
  opt.wizard.sets = {"train.max_steps=7"};
  init_job_file(job_registry(), opt, in, out);
  std::ifstream f(opt.output);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK_THAT(ss.str(), Catch::Contains("max_steps: 7"));
  std::remove(opt.output.c_str());
}

TEST_CASE("the strategy question shows the estimate and offers its recommendation", "[config][wizard]") {
  WizardOptions opt;
  json seen;
  opt.advise = [&seen](const Resolved& job) {
    seen = job.job;
    return WizardOptions::Advice{"strategy (GiB per rank) ... TABLE\n", "zero2"};
  };
  std::string t;
  // launcher, nproc 4; model gpt, n_layer/n_head/n_embd Enter; precision 2 = bf16; batch Enter; strategy Enter.
  auto a = drive("\n4\n\n\n\n\n2\n" + std::string(30, '\n'), &t, opt);
  CHECK(a.at("strategy") == "zero2");
  CHECK_THAT(t, Catch::Contains("TABLE"));
  CHECK_THAT(t, Catch::Contains("strategy [zero2]:"));
  // Model, world and precision were known when it was asked.
  CHECK(get(seen, "train.precision") == "bf16");
  CHECK(get(seen, "launch.nproc_per_node") == "4");
  CHECK(get(seen, "model.name") == "gpt");
  // A failing estimate leaves the question as it was.
  opt.advise = [](const Resolved&) -> WizardOptions::Advice { throw mtrain::Error("no worker"); };
  a = drive(std::string(40, '\n'), &t, opt);
  CHECK(a.at("strategy") == "ddp");
  CHECK_THAT(t, Catch::Contains("(no memory estimate: no worker)"));
}

TEST_CASE(
    "fsdp over your own model asks for its units, offering the classes found, a checkpoint interval is asked (issue "
    "45)",
    "[config][wizard]") {
  const std::string net = temp_path("units_net.pt"), data = temp_path("units_data.pt");
  std::ofstream(net) << "zip";
  std::ofstream(data) << "zip";
  WizardOptions opt;
  std::string asked_for;
  opt.module_classes = [&asked_for](const std::string& path) {
    asked_for = path;
    return std::vector<std::string>{"Linear (x2)", "MultiheadAttention (x2)", "NonDynamicallyQuantizableLinear (x2)"};
  };
  std::string t;
  // launcher, nproc: Enter; torchscript, net, loss Enter, tensors, data, val Enter; precision, batch
  // Enter; fsdp; sharding, cpu_offload Enter; units: a class not in the model (re-asked), then one;
  // grad_accum, max_steps Enter; checkpoint interval 25; rest Enter.
  auto a = drive("\n\ntorchscript\n" + net + "\n\ntensors\n" + data +
                     "\n\n\n\nfsdp\n\n\nBlock\nMultiheadAttention\n\n\n25\n" + std::string(10, '\n'),
                 &t, opt);
  CHECK(asked_for == net);
  CHECK(a.at("fsdp.wrap_module_types") == json::array({"MultiheadAttention"}));
  CHECK(a.at("checkpoint.interval") == 25);
  CHECK_THAT(t, Catch::Contains("module classes in " + net + ": Linear (x2), MultiheadAttention (x2)"));
  CHECK_THAT(t, Catch::Contains("not accepted: 'Block' is not a module class of " + net));
  CHECK_THAT(t, Catch::Contains("Ctrl-C saves one too"));
  // The file written says the units and the interval, and validates.
  const std::string yaml = wizard_yaml(job_registry(), a, "j.yaml");
  CHECK_THAT(yaml, Catch::Contains("MultiheadAttention"));
  CHECK_THAT(yaml, Catch::Contains("interval: 25"));
  CHECK(validate_text(job_registry(), yaml, "j.yaml").ok());
  // A list that cannot be had (the worker refuses the file) is said; any answer is taken.
  opt.module_classes = [](const std::string&) -> std::vector<std::string> { throw mtrain::Error("not a zip"); };
  a = drive("\n\ntorchscript\n" + net + "\n\ntensors\n" + data + "\n\n\n\nfsdp\n\n\nBlock\n" + std::string(12, '\n'),
            &t, opt);
  CHECK(a.at("fsdp.wrap_module_types") == json::array({"Block"}));
  CHECK_THAT(t, Catch::Contains("(no list of its module classes: not a zip)"));
  // ddp is not asked about units.
  a = drive("\n\ntorchscript\n" + net + "\n\ntensors\n" + data + "\n" + std::string(14, '\n'), &t, opt);
  CHECK(a.count("fsdp.wrap_module_types") == 0);
  for (const auto& f : {net, data}) std::remove(f.c_str());
}

TEST_CASE("init writes the files' paths from the job file's folder, and says so (issue 45)", "[config][wizard]") {
  namespace fs = std::filesystem;
  const fs::path root = temp_path("paths");
  fs::create_directories(root / "exp");
  std::ofstream((root / "net.pt").string()) << "zip";
  std::ofstream((root / "train.pt").string()) << "zip";
  InitOptions opt;
  opt.output = (root / "exp" / "job.yaml").string();
  opt.wizard.use_defaults = true;
  // Answered from the current folder, as a user types them.
  const std::string net = fs::relative(root / "net.pt").string(), data = fs::relative(root / "train.pt").string();
  opt.wizard.sets = {"model.name=torchscript", "model.path=" + net, "data.name=tensors", "data.path=" + data};
  std::istringstream in;
  std::ostringstream out;
  const std::string text = init_job_file(job_registry(), opt, in, out);
  CHECK_THAT(text, Catch::Contains("path: ../net.pt"));
  CHECK_THAT(text, Catch::Contains("path: ../train.pt"));
  CHECK_THAT(text, Catch::Contains("from this file's folder"));
  // It reads back valid from anywhere: validate finds the files beside it.
  CHECK(validate_file(job_registry(), opt.output).ok());
  fs::remove_all(root);
}

TEST_CASE("the model.path answer and the job written get the launch's model check, as validate does (issue 45)",
          "[config][wizard]") {
  const std::string good = temp_path("checked_net.pt"), dict = temp_path("checked_dict.pt"),
                    data = temp_path("checked_data.pt");
  for (const auto& f : {good, dict, data}) std::ofstream(f) << "zip";
  WizardOptions opt;
  opt.check_model = [&dict](const json& job) {
    if (get(job, "model.path") == dict) throw mtrain::Error("'" + dict + "' is not a TorchScript archive", "script it");
  };
  std::string t;
  // launcher, nproc Enter; torchscript; the state dict (refused), then the model; the rest as before.
  auto a =
      drive("\n\ntorchscript\n" + dict + "\n" + good + "\n\ntensors\n" + data + "\n" + std::string(14, '\n'), &t, opt);
  CHECK(a.at("model.path") == good);
  CHECK_THAT(t, Catch::Contains("not accepted: '" + dict + "' is not a TorchScript archive. script it"));
  // Given with --set, it is not asked, and the file is not written.
  InitOptions init;
  init.output = temp_path("checked_job.yaml");
  std::remove(init.output.c_str());
  init.wizard = opt;
  init.wizard.use_defaults = true;
  init.wizard.sets = {"model.name=torchscript", "model.path=" + dict, "data.name=tensors", "data.path=" + data};
  std::istringstream in;
  std::ostringstream out;
  CHECK_THROWS_WITH(init_job_file(job_registry(), init, in, out), Catch::Contains("not a TorchScript archive"));
  CHECK_FALSE(std::filesystem::exists(init.output));
  for (const auto& f : {good, dict, data}) std::remove(f.c_str());
}
