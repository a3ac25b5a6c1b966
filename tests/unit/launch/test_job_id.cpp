// Job ids (lib/launch/job_id.cpp): names that are safe as folder names and in messages.
#include <catch2/catch.hpp>

#include <string>

#include "lib/core/error.hpp"
#include "lib/launch/job_id.hpp"

using namespace mtrain::launch;

TEST_CASE("job ids are names", "[launch][job_id]") {
  for (const std::string& good : std::vector<std::string>{"J", "mtrain-1a2b3c4d", "slurm-123.0", "run_2026.11-a", std::string(128, 'x')})
    CHECK(job_id_problem(good).empty());
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "../../x", "a/b", "/abs", "-rf", ".hidden", "a b", "tab\there", "x;rm",
                          std::string(129, 'x'), std::string("nul\0x", 5), "é"})
    CHECK_FALSE(job_id_problem(bad).empty());
  CHECK(job_id_problem("a/b").find("'/'") != std::string::npos);
  try {
    check_job_id("../../../x", "--job-id");
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    std::string m = e.paragraph();
    CHECK(m.find("../../../x") != std::string::npos);
    CHECK(m.find("--job-id") != std::string::npos);
  }
}
