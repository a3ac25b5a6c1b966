// `mtrain config` commands' edges (lib/config/config_commands.cpp): every write checked, and what
// came from the imported file shown made visible.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/config/config_commands.hpp"
#include "lib/config/import.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "temp_dir.hpp"

using namespace mtrain::config;
namespace fs = std::filesystem;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

// Issue 40 item 5: `config import -o /dev/full` said "Wrote …" and exited 0.
TEST_CASE("write_file: a failed write is an error naming the path, and a device is not replaced", "[config]") {
  try {
    write_file("/dev/full", "strategy: ddp\n", true);
    FAIL("a write to /dev/full succeeded");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("cannot write /dev/full") && Catch::Contains("No space left on device"));
    CHECK(e.exit_code() == mtrain::kExitFailure);
  }
  struct stat st {};
  REQUIRE(::stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  // A regular file is replaced whole, through a temporary name nobody can plant a link at.
  mtrain::testing::TempDir d("write_file");
  const std::string victim = d.write("victim", "precious\n");
  const std::string job = d.str() + "/job.yaml";
  fs::create_symlink(victim, job + ".tmp");
  write_file(job, "strategy: ddp\n", false);
  CHECK(slurp(job) == "strategy: ddp\n");
  CHECK(slurp(victim) == "precious\n");
  CHECK_THROWS_WITH(write_file(job, "x\n", false), Catch::Contains("already exists"));
  write_file(job, "strategy: zero2\n", true);
  CHECK(slurp(job) == "strategy: zero2\n");
  std::size_t left = 0;
  for (const auto& e : fs::directory_iterator(d.path)) left += e.path().filename().string().rfind("job.yaml.", 0) == 0;
  CHECK(left == 1);  // job.yaml.tmp, the planted link; no temporary file of ours
}

TEST_CASE("write_stdout: standard output that fails is an error saying so", "[config]") {
  std::ofstream full("/dev/full");
  REQUIRE(full);
  try {
    write_stdout(full, std::string(100000, 'x'));
    FAIL("a write to /dev/full succeeded");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("cannot write to standard output"));
    CHECK(e.exit_code() == mtrain::kExitFailure);
  }
  std::ostringstream ok;
  write_stdout(ok, "fine\n");
  CHECK(ok.str() == "fine\n");
}

// Issue 40 item 10: a key of the imported file reached the terminal raw in a warning.
TEST_CASE("config import: the source's keys are shown made visible in warnings", "[config]") {
  mtrain::testing::TempDir d("import_esc");
  const std::string ds = d.write("ds.json", "{\"train_micro_batch_size_per_gpu\": 4, \"\\u001b]0;owned\\u0007\": 1}\n");
  ImportOptions o;
  o.file = ds;
  std::ostringstream out, err;
  CHECK(config_import(job_registry(), o, out, err) == 0);
  CHECK_THAT(err.str(), Catch::Contains("^[]0;owned^G"));
  CHECK(err.str().find('\x1b') == std::string::npos);
}

// Issue 40 item 12: a step count of 1e300 was cast to long long (-9223372036854775808).
TEST_CASE("config import: a step count that is no whole number in range is refused", "[config]") {
  const std::string ds =
      "{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_num_steps\": 10, \"total_num_steps\": 1e300}}}";
  try {
    import_text(job_registry(), ds, "ds.json");
    FAIL("1e300 steps imported");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("total_num_steps") && Catch::Contains("above the maximum"));
    CHECK_THAT(e.message(), !Catch::Contains("-9223372036854775808"));
  }
  const auto r = import_text(
      job_registry(),
      "{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_num_steps\": 10, \"total_num_steps\": 110.0}}}",
      "ds.json");
  CHECK(r.values.at("sched.total_iters") == 100);
}

TEST_CASE("config validate checks the files as the launch does: data on disk, then the model check (issue 45)",
          "[config]") {
  mtrain::testing::TempDir d("validate_files");
  d.write("net.pt", "zip");
  d.write("odd.bin", "abc");  // a raw token file of an odd number of bytes: the launch refuses it
  const std::string job = d.write("job.yaml",
                                  "launch:\n  launcher: local\nmodel:\n  name: torchscript\n  path: net.pt\n"
                                  "  loss: lm_cross_entropy\ndata:\n  name: tokens\n  path: odd.bin\n");
  ValidateOptions opt;
  opt.file = job;
  bool model_checked = false;
  opt.check_model = [&model_checked](const json&) { model_checked = true; };
  std::ostringstream out, err;
  CHECK(config_validate(job_registry(), opt, out, err) == mtrain::kExitUsage);
  CHECK_THAT(err.str(), Catch::Contains("odd number"));
  CHECK_THAT(err.str(), Catch::Contains(job + ":9:"));  // at data.path's line
  CHECK_FALSE(model_checked);  // data first, as the launch reports them
  d.write("odd.bin", "abcd");
  // The model check (the launcher's, wired by `mtrain config validate`) is run on the job the file
  // resolves to, and its refusal is an error at model.path.
  json seen;
  opt.check_model = [&seen](const json& j) {
    seen = j;
    throw mtrain::Error("the TorchScript model is not a zip", "save it with torch.jit.save");
  };
  out.str(""), err.str("");
  CHECK(config_validate(job_registry(), opt, out, err) == mtrain::kExitUsage);
  CHECK(get(seen, "model.path") == d.str() + "/net.pt");  // from the job file's folder
  CHECK_THAT(err.str(), Catch::Contains(job + ":5:") && Catch::Contains("not a zip"));
  opt.check_model = [](const json&) {};
  out.str(""), err.str("");
  CHECK(config_validate(job_registry(), opt, out, err) == mtrain::kExitOk);
}
