// `mtrain --version` (lib/envreport/version_text.cpp): version, git revision, the worker's LibTorch.
#include <catch2/catch.hpp>

#include "machine.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;
using json = nlohmann::json;

TEST_CASE("version: version, git revision and the worker's LibTorch", "[envreport]") {
  auto p = healthy();
  const auto w = probe_worker(p, "/opt/mtrain/bin/mtrain-worker", 1000);
  CHECK(version_text("0.1.0", "abc123", w) ==
        "mtrain 0.1.0 (git abc123)\nLibTorch 1.13.0 (CPU only: no CUDA, no NCCL; mtrain-worker /opt/mtrain/bin/mtrain-worker)");
  CHECK_THAT(version_text("0.1.0", "", probe_worker(p, "", 1000)),
             Catch::Contains("(git unknown)") && Catch::Contains("LibTorch unknown: mtrain-worker is not installed"));
}

TEST_CASE("version: from the worker's build facts, CUDA and NCCL named", "[envreport]") {
  mtrain::WorkerFacts f;
  f.file = "/opt/mtrain/bin/mtrain-worker.facts.json";
  f.libtorch = "2.15.0";
  f.cuda = true;
  f.cuda_version = "13.0";
  f.nccl = true;
  f.nccl_version = "2.30.7";
  CHECK(version_text("0.2.0", "abc", worker_from_facts("/opt/mtrain/bin/mtrain-worker", f)) ==
        "mtrain 0.2.0 (git abc)\nLibTorch 2.15.0 (CUDA 13.0 and NCCL 2.30.7 compiled in; mtrain-worker "
        "/opt/mtrain/bin/mtrain-worker)");
}
