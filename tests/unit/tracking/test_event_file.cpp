// The event file: TensorBoard's file name, the file_version record first, one record per call,
// each a readable record holding what was logged (the e2e test reads it with TensorBoard itself).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "lib/core/error.hpp"
#include "lib/tracking/event_file.hpp"
#include "lib/tracking/record_framing.hpp"
#include "temp_dir.hpp"

using namespace mtrain::tracking;
namespace fs = std::filesystem;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("an event file holds the version record, then one record per call", "[tracking][event_file]") {
  mtrain::testing::TempDir tmp;
  const std::string dir = tmp.str() + "/tb/20261128_031500";
  std::string path;
  {
    EventFileWriter w(dir, 1764300000.5);
    path = w.path();
    w.text("job", 0, 1764300001, "```\n{}\n```");
    w.scalars(10, 1764300002, {{"train/loss", 2.5}, {"train/lr", 1e-3}});
    w.session_start(21, 1764300003);
    CHECK(w.good());
  }
  CHECK(fs::path(path).parent_path() == fs::path(dir));
  CHECK(fs::path(path).filename().string().rfind("events.out.tfevents.1764300000.", 0) == 0);
  const auto records = read_records(slurp(path));
  REQUIRE(records);
  REQUIRE(records->size() == 4);
  CHECK((*records)[0].find("brain.Event:2") != std::string::npos);
  CHECK((*records)[1].find("text") != std::string::npos);
  CHECK((*records)[2].find("train/loss") != std::string::npos);
  CHECK((*records)[2].find("train/lr") != std::string::npos);
  // A second writer in the same second gets its own file.
  EventFileWriter again(dir, 1764300000.9);
  CHECK(again.path() != path);
}

TEST_CASE("an event folder that cannot be made is an error naming log.tensorboard", "[tracking][event_file]") {
  mtrain::testing::TempDir tmp;
  std::ofstream(tmp.str() + "/file") << "x";
  try {
    EventFileWriter w(tmp.str() + "/file/run", 0);
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("cannot create the TensorBoard event file") && Catch::Contains("log.tensorboard"));
  }
}
