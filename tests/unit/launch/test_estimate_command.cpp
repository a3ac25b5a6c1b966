// `mtrain estimate` once its flags are read (issue 41 item 8: this was cmd_estimate.cpp's own
// code, untested below the e2e test): the data a launch would refuse is refused before the probe,
// with the launch's words and exit 2; with --weights nothing is probed, so the data is not judged.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "lib/config/registry.hpp"
#include "resolved_job.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/estimate_command.hpp"
#include "lib/launch/host_probe.hpp"
#include "temp_dir.hpp"

using namespace mtrain;

namespace {

// A safetensors file of one 4 × 4 fp32 tensor: its shape is all --weights gives the estimate.
std::string weights_file(const testing::TempDir& dir) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}})";
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((static_cast<std::uint64_t>(header.size()) >> (8 * i)) & 0xff);
  return dir.write("w.safetensors", bytes + header + std::string(64, '\0'));
}

}  // namespace

TEST_CASE("estimate refuses the data a launch would refuse, before the probe, exit 2", "[launch][estimate_command]") {
  testing::TempDir dir;
  const auto job = testing::resolved_job({{"model.name", "gpt"},
                                          {"data.name", "tokens"},
                                          {"data.path", dir.str() + "/missing.bin"},
                                          {"launch.nproc_per_node", "1"},
                                          {"launch.device_memory", "1GiB"}});
  // A worker that is not there: reaching the probe would fail otherwise, with other words.
  const launch::EstimateRequest r{job, launch::probe_host({}), "", dir.str() + "/no-worker"};
  try {
    (void)launch::estimate_for_launch(r);
    FAIL("a missing data file was not refused");
  } catch (const Error& e) {
    INFO(e.paragraph());
    CHECK(e.exit_code() == kExitUsage);
    CHECK_THAT(e.message(), Catch::Contains("estimate measures the model with one forward/backward on its data, and"));
    CHECK_THAT(e.message(), Catch::Contains("missing.bin"));
  }
}

TEST_CASE("with --weights estimate measures nothing, so the data is not judged", "[launch][estimate_command]") {
  testing::TempDir dir;
  const auto job = testing::resolved_job({{"model.name", "gpt"},
                                          {"data.name", "tokens"},
                                          {"data.path", dir.str() + "/missing.bin"},
                                          {"launch.nproc_per_node", "2"},
                                          {"launch.device", "cpu"},
                                          {"launch.device_memory", "1GiB"}});
  const auto e = launch::estimate_for_launch({job, launch::probe_host({}), weights_file(dir), ""});
  CHECK(e.measured.model.num_params() == 16);
  CHECK(e.settings.world == 2);
}
