#include <catch2/catch.hpp>

#include "mtrain/core/error.hpp"

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
