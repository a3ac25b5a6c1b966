#include <catch2/catch.hpp>

#include <new>
#include <stdexcept>

#include "lib/core/error.hpp"

TEST_CASE("Error paragraph carries where, what and the hint", "[core]") {
  mtrain::Error e("GPU 7 is not available", "Pick from 0,1.");
  e.at("--gpus");
  CHECK(e.paragraph() == "error: --gpus: GPU 7 is not available. Pick from 0,1.");
  CHECK(std::string(e.what()) == e.paragraph());
  CHECK(e.exit_code() == 2);
}

TEST_CASE("parse_error points at the column", "[core]") {
  auto e = mtrain::parse_error("include filter", "localhost:0,x", 13, "'x' is not a GPU index");
  CHECK(e.message().find("column 13") != std::string::npos);
  CHECK(e.message().find("            ^") != std::string::npos);
}

TEST_CASE("the two kinds: bad input exits 2, an invariant or a runtime failure 1", "[core]") {
  const mtrain::UsageError usage("--nproc-per-node 'x' is not a count", "Give a number.");
  CHECK(usage.exit_code() == mtrain::kExitUsage);
  CHECK(usage.exit_code() == 2);
  const mtrain::RuntimeFailure failure("reduce_scatter: input has 7 elements, expected world 2 x 4");
  CHECK(failure.exit_code() == mtrain::kExitFailure);
  CHECK(failure.exit_code() == 1);
  // Context added on the way up keeps the kind's code.
  mtrain::RuntimeFailure moved("cannot write");
  CHECK(moved.at("step_10/shard_rank0.pt").exit_code() == 1);
  CHECK(moved.paragraph() == "error: step_10/shard_rank0.pt: cannot write");
}

TEST_CASE("exit_code_of: what a command's exception makes its exit code", "[core]") {
  CHECK(mtrain::exit_code_of(mtrain::UsageError("bad")) == 2);
  CHECK(mtrain::exit_code_of(mtrain::RuntimeFailure("broken")) == 1);
  CHECK(mtrain::exit_code_of(mtrain::Error("passed on", "", 7)) == 7);
  // Anything else says nothing about the input: a failure.
  CHECK(mtrain::exit_code_of(std::runtime_error("a library's error")) == 1);
  CHECK(mtrain::exit_code_of(std::bad_alloc()) == 1);
  // Caught as the base, the kind's code survives.
  try {
    throw mtrain::RuntimeFailure("invariant");
  } catch (const std::exception& e) {
    CHECK(mtrain::exit_code_of(e) == 1);
  }
}
