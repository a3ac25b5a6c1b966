#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/core/error_file.hpp"

namespace fs = std::filesystem;

TEST_CASE("error file: torchrun's format, read back by the launcher's reader", "[core][error_file]") {
  mtrain::ErrorRecord r;
  r.message = "error: shard_rank1.pt.part: write failed: No space left on device";
  r.rank = 1;
  r.host = "node-a";
  r.pid = 4321;
  r.when = std::chrono::system_clock::time_point(std::chrono::seconds(1790000000));
  const auto j = nlohmann::json::parse(mtrain::error_file_text(r));
  CHECK(j["message"]["message"] == r.message);
  CHECK(j["message"]["extraInfo"]["timestamp"] == "1790000000");  // a string, as torchrun writes it
  CHECK(j["message"]["extraInfo"]["rank"] == 1);
  CHECK(j["message"]["extraInfo"]["host"] == "node-a");
  CHECK(j["message"]["extraInfo"]["pid"] == 4321);
  CHECK(mtrain::error_file_message(mtrain::error_file_text(r)) == r.message);
  // torchrun's older flat form, and what is not a record.
  CHECK(mtrain::error_file_message(R"({"message": "RuntimeError: boom", "timestamp": 1})") == "RuntimeError: boom");
  CHECK_FALSE(mtrain::error_file_message("not json"));
  CHECK_FALSE(mtrain::error_file_message("[1, 2]"));
  // Bytes that are not UTF-8 (a file name) do not make writing the record fail.
  r.message = "bad \xff name";
  CHECK(mtrain::error_file_message(mtrain::error_file_text(r)).has_value());
}

TEST_CASE("error file: written whole by rename, with the moment of the fault as its mtime", "[core][error_file]") {
  std::string templ = (fs::temp_directory_path() / "mtrain-errfile-XXXXXX").string();
  const fs::path dir = ::mkdtemp(templ.data());
  const std::string path = (dir / "error.json").string();
  mtrain::ErrorRecord r;
  r.message = "first";
  r.rank = 0;
  r.when = std::chrono::system_clock::now() - std::chrono::seconds(3);
  REQUIRE(mtrain::write_error_file(path, r));
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  const auto mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  CHECK(mtime_ns == std::chrono::duration_cast<std::chrono::nanoseconds>(r.when.time_since_epoch()).count());
  CHECK((st.st_mode & 0137) == 0);  // at most 0640
  // A symlink at a predictable temporary name (the old writer's "<path>.<pid>.part") is never followed.
  const fs::path victim = dir / "victim";
  std::ofstream(victim) << "keep";
  fs::create_symlink(victim, path + "." + std::to_string(::getpid()) + ".part");
  r.message = "second";
  CHECK(mtrain::write_error_file(path, r));
  std::ifstream v(victim);
  std::stringstream ss;
  ss << v.rdbuf();
  CHECK(ss.str() == "keep");
  std::ifstream in(path);
  std::stringstream got;
  got << in.rdbuf();
  CHECK(mtrain::error_file_message(got.str()) == "second");
  int others = 0;  // no temporary left: the record, the victim and the planted link only
  for (const auto& e : fs::directory_iterator(dir))
    others += e.path() != path && e.path() != victim && !fs::is_symlink(e.symlink_status());
  CHECK(others == 0);
  // own_failure_time: the first mark wins.
  mtrain::note_own_failure();
  const auto first = mtrain::own_failure_time();
  REQUIRE(first);
  mtrain::note_own_failure();
  CHECK(mtrain::own_failure_time() == first);
  std::error_code ec;
  fs::remove_all(dir, ec);
}
