// The warnings of `mtrain env` (lib/envreport/warnings.cpp): each with its trigger and its absence.
#include <catch2/catch.hpp>

#include "machine.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;
using json = nlohmann::json;

TEST_CASE("warnings name the problem and the advice", "[envreport]") {
  auto p = healthy();
  SECTION("small /dev/shm") {
    p.spaces["/dev/shm"] = {true, 64ull << 20, 64ull << 20};
    auto r = collect_report(p, opts());
    REQUIRE(has_warning(r, "/dev/shm is only 64.0 MiB"));
    CHECK(r.at("warnings").at(0).at("advice").get<std::string>().find("--shm-size") != std::string::npos);
  }
  SECTION("OMP_NUM_THREADS oversubscribing the cores") {
    p.env["OMP_NUM_THREADS"] = "4";
    p.env["MTRAIN_NPROC_PER_NODE"] = "2";
    auto r = collect_report(p, opts());
    CHECK(has_warning(r, "OMP_NUM_THREADS=4 with 2 rank(s) on this node asks for 8 threads on 4 core(s)"));
    p.env["OMP_NUM_THREADS"] = "2";
    CHECK_FALSE(has_warning(collect_report(p, opts()), "OMP_NUM_THREADS"));
  }
  SECTION("NCCL_SOCKET_IFNAME pointing nowhere; prefixes and exclusions are fine") {
    p.env["NCCL_SOCKET_IFNAME"] = "ib0";
    CHECK(has_warning(collect_report(p, opts()), "NCCL_SOCKET_IFNAME=ib0 names no interface"));
    p.env["NCCL_SOCKET_IFNAME"] = "eth";
    CHECK_FALSE(has_warning(collect_report(p, opts()), "NCCL_SOCKET_IFNAME"));
    p.env["NCCL_SOCKET_IFNAME"] = "=eth";
    CHECK(has_warning(collect_report(p, opts()), "NCCL_SOCKET_IFNAME"));
    p.env["NCCL_SOCKET_IFNAME"] = "^docker,lo";
    CHECK_FALSE(has_warning(collect_report(p, opts()), "NCCL_SOCKET_IFNAME"));
  }
  SECTION("GLOO_SOCKET_IFNAME must name an interface exactly") {
    p.env["GLOO_SOCKET_IFNAME"] = "eth1";
    CHECK(has_warning(collect_report(p, opts()), "GLOO_SOCKET_IFNAME=eth1"));
    p.env["GLOO_SOCKET_IFNAME"] = "eth0";
    CHECK_FALSE(has_warning(collect_report(p, opts()), "GLOO_SOCKET_IFNAME"));
  }
  SECTION("a low open-file limit") {
    p.lim = {1024, 4096};
    CHECK(has_warning(collect_report(p, opts()), "ulimit -n) is 1024"));
  }
  SECTION("bad and unknown MTRAIN_* variables, checked by the registry") {
    p.env["MTRAIN_STRATEGY"] = "zero9";
    p.env["MTRAIN_STRATEGYY"] = "ddp";
    auto r = collect_report(p, opts());
    CHECK(has_warning(r, "MTRAIN_STRATEGY=zero9"));
    CHECK(has_warning(r, "MTRAIN_STRATEGYY=ddp: unknown variable; did you mean MTRAIN_STRATEGY?"));
    bool found = false;
    for (const auto& e : r.at("environment"))
      if (e.at("name") == "MTRAIN_STRATEGY") {
        found = true;
        CHECK(e.at("setting") == "strategy");
        CHECK(e.at("source") == "environment");
      }
    CHECK(found);
  }
  SECTION("the trainer on the reference BLAS, not on OpenBLAS") {
    CommandResult w = p.commands["/opt/mtrain/bin/mtrain-worker build-info"];
    w.out = R"({"libtorch":"1.13.0","gloo":true,"threads":4,"blas":"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"})";
    p.commands["/opt/mtrain/bin/mtrain-worker build-info"] = w;
    auto r = collect_report(p, opts());
    CHECK(has_warning(r, "run on the reference BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3)"));
    CHECK(render_text(r).find("reference BLAS (netlib) (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3)") !=
          std::string::npos);
    w.out = R"({"libtorch":"1.13.0","gloo":true,"threads":4,"blas":"/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"})";
    p.commands["/opt/mtrain/bin/mtrain-worker build-info"] = w;
    r = collect_report(p, opts());
    CHECK_FALSE(has_warning(r, "BLAS"));
    CHECK(render_text(r).find("OpenBLAS (/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3)") != std::string::npos);
  }
  SECTION("no worker installed") {
    auto o = opts();
    o.worker_path = "";
    CHECK(has_warning(collect_report(p, o), "mtrain-worker is not installed"));
  }
  SECTION("CUDA_VISIBLE_DEVICES without a GPU; only loopback up") {
    p.env["CUDA_VISIBLE_DEVICES"] = "0,1";
    p.nics = {{"lo", true, true, {"127.0.0.1"}}};
    auto r = collect_report(p, opts());
    CHECK(has_warning(r, "CUDA_VISIBLE_DEVICES=0,1 is set but no GPU was found"));
    CHECK(has_warning(r, "no network interface other than loopback"));
  }
}
