// `mtrain env` from an in-memory machine: the JSON schema, a no-GPU report, a GPU report parsed
// from nvidia-smi output, and each warning with its trigger and its absence.
#include <catch2/catch.hpp>

#include "mtrain/envreport/report.hpp"

using namespace mtrain::envreport;
using json = nlohmann::json;

namespace {

// A healthy CPU machine: 4 cores, 16 GiB, 8 GiB /dev/shm, eth0 up, a worker that answers.
MemoryProbe healthy() {
  MemoryProbe p;
  p.files["/etc/os-release"] = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
  p.files["/proc/cpuinfo"] = "processor\t: 0\nmodel name\t: Test CPU 9000\n";
  p.files["/proc/meminfo"] = "MemTotal:       16777216 kB\nMemAvailable:    8388608 kB\n";
  p.nics = {{"lo", true, true, {"127.0.0.1"}}, {"eth0", true, false, {"10.0.0.5"}}};
  p.spaces["/dev/shm"] = {true, 8ull << 30, 8ull << 30};
  p.lim = {65536, 65536};
  p.cpus = 4;
  p.env = {{"HOME", "/nonexistent-home"}};
  CommandResult w;
  w.started = true;
  w.rc = 0;
  w.out = R"({"libtorch":"1.13.0","cuda":{"compiled":false,"version":null},"nccl":{"compiled":false,"version":null},"gloo":true,"threads":4})";
  p.commands["/opt/mtrain/bin/mtrain-worker build-info"] = w;
  p.programs["/opt/mtrain/bin/mtrain-worker"] = "/opt/mtrain/bin/mtrain-worker";
  return p;
}

ReportOptions opts() {
  ReportOptions o;
  o.version = "0.1.0";
  o.executable = "/opt/mtrain/bin/mtrain";
  o.worker_path = "/opt/mtrain/bin/mtrain-worker";
  return o;
}

bool has_warning(const json& r, const std::string& needle) {
  for (const auto& w : r.at("warnings"))
    if (w.at("what").get<std::string>().find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("env --format json follows the mtrain.env/1 schema", "[envreport]") {
  auto r = collect_report(healthy(), opts());
  REQUIRE(r.at("schema") == "mtrain.env/1");
  for (const char* k : {"mtrain", "os", "cpu", "memory", "gpus", "network", "slurm", "environment", "user_config", "shm",
                        "limits", "warnings"})
    REQUIRE(r.contains(k));
  CHECK(r.at("mtrain").at("version") == "0.1.0");
  CHECK(r.at("mtrain").at("worker").at("build").at("libtorch") == "1.13.0");
  CHECK(r.at("mtrain").at("worker").at("build").at("cuda").at("compiled") == false);
  CHECK(r.at("os").at("name") == "Debian GNU/Linux 12 (bookworm)");
  CHECK(r.at("os").at("kernel") == "6.1.0-test");
  CHECK(r.at("cpu").at("model") == "Test CPU 9000");
  CHECK(r.at("cpu").at("cores") == 4);
  CHECK(r.at("memory").at("total_bytes") == 16ull << 30);
  CHECK(r.at("memory").at("available_bytes") == 8ull << 30);
  REQUIRE(r.at("network").is_array());
  CHECK(r.at("network").at(1).at("name") == "eth0");
  CHECK(r.at("network").at(1).at("addresses").at(0) == "10.0.0.5");
  CHECK(r.at("shm").at("total_bytes") == 8ull << 30);
  CHECK(r.at("limits").at("open_files_soft") == 65536);
  CHECK(r.at("slurm").at("installed") == false);
  CHECK(r.at("slurm").at("in_allocation") == false);
  REQUIRE(r.at("environment").is_array());
  for (const auto& e : r.at("environment")) {
    REQUIRE(e.contains("name"));
    REQUIRE(e.contains("value"));
    REQUIRE(e.contains("source"));
  }
  CHECK(r.at("warnings").is_array());
  INFO(r.at("warnings").dump(2));
  CHECK(r.at("warnings").empty());
}

TEST_CASE("a machine without GPUs says so in one plain line", "[envreport]") {
  auto r = collect_report(healthy(), opts());
  CHECK(r.at("gpus").at("source") == "none");
  CHECK(r.at("gpus").at("devices").empty());
  CHECK(r.at("gpus").at("note").get<std::string>().find("no GPU") == 0);
  const std::string text = render_text(r);
  CHECK(text.find("no GPU: nvidia-smi is not installed") != std::string::npos);
  CHECK(text.find("LibTorch:       1.13.0") != std::string::npos);
  CHECK(text.find("CUDA:           not compiled in") != std::string::npos);
  CHECK(text.find("warnings (0)") != std::string::npos);
}

TEST_CASE("GPUs are read from nvidia-smi: devices, MIG mode, driver CUDA, topology", "[envreport]") {
  auto p = healthy();
  p.programs["nvidia-smi"] = "/usr/bin/nvidia-smi";
  CommandResult q{true, 0,
                  "0, NVIDIA H100 80GB HBM3, GPU-aaaa, 535.104.05, 81559, Disabled, 00000000:18:00.0\n"
                  "1, NVIDIA H100 80GB HBM3, GPU-bbbb, 535.104.05, 81559, [N/A], 00000000:2A:00.0\n",
                  ""};
  p.commands["nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,mig.mode.current,pci.bus_id "
             "--format=csv,noheader,nounits"] = q;
  p.commands["nvidia-smi"] = {true, 0, "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |\n", ""};
  p.commands["nvidia-smi topo -m"] = {true, 0, "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n", ""};
  auto r = collect_report(p, opts());
  const auto& g = r.at("gpus");
  CHECK(g.at("source") == "nvidia-smi");
  REQUIRE(g.at("devices").size() == 2);
  CHECK(g.at("devices").at(0).at("uuid") == "GPU-aaaa");
  CHECK(g.at("devices").at(0).at("memory_total_bytes") == 81559ull << 20);
  CHECK(g.at("devices").at(0).at("mig_mode") == "Disabled");
  CHECK(g.at("devices").at(1).at("mig_mode").is_null());
  CHECK(g.at("cuda_driver_version") == "12.2");
  CHECK(g.at("topology").get<std::string>().find("NV18") != std::string::npos);
  const std::string text = render_text(r);
  CHECK(text.find("NVIDIA H100 80GB HBM3") != std::string::npos);
  CHECK(text.find("NV18") != std::string::npos);
}

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

TEST_CASE("a Slurm allocation is read from SLURM_* and sinfo", "[envreport]") {
  auto p = healthy();
  p.programs["sinfo"] = "/usr/bin/sinfo";
  p.commands["sinfo --version"] = {true, 0, "slurm 22.05.8\n", ""};
  p.env["SLURM_JOB_ID"] = "4242";
  p.env["SLURM_JOB_NODELIST"] = "node[01-02]";
  p.env["SLURM_NODEID"] = "1";
  p.env["SLURM_JOB_PARTITION"] = "gpu";
  auto r = collect_report(p, opts());
  const auto& s = r.at("slurm");
  CHECK(s.at("installed") == true);
  CHECK(s.at("version") == "slurm 22.05.8");
  REQUIRE(s.at("in_allocation") == true);
  CHECK(s.at("allocation").at("job_id") == "4242");
  CHECK(s.at("allocation").at("nodes") == json({"node01", "node02"}));
  CHECK(s.at("allocation").at("partition") == "gpu");
  CHECK(render_text(r).find("job 4242 on node01,node02") != std::string::npos);
}

TEST_CASE("env names the python3 and PyTorch that `launch -- python3` ranks use", "[envreport]") {
  auto p = healthy();
  auto none = collect_report(p, opts());
  CHECK(none.at("python").at("found") == false);
  CHECK_THAT(render_text(none), Catch::Contains("python3 is not on PATH"));

  p.programs["python3"] = "/usr/bin/python3";
  CommandResult py;
  py.started = true;
  py.rc = 0;
  py.out = R"({"executable":"/usr/bin/python3","version":"3.11.2","torch":"1.13.1","torch_cuda":null,"cuda_available":false,"distributed":true})";
  p.commands[std::string("/usr/bin/python3 -c ") + kPythonProbe] = py;
  auto r = collect_report(p, opts());
  CHECK(r.at("python").at("path") == "/usr/bin/python3");
  CHECK(r.at("python").at("torch") == "1.13.1");
  const std::string text = render_text(r);
  CHECK_THAT(text, Catch::Contains("/usr/bin/python3 (/usr/bin/python3, 3.11.2)"));
  CHECK_THAT(text, Catch::Contains("1.13.1, CPU build, no GPU usable"));

  py.out = R"({"executable":"/usr/bin/python3","version":"3.11.2","torch":null,"torch_error":"ModuleNotFoundError: No module named 'torch'"})";
  p.commands[std::string("/usr/bin/python3 -c ") + kPythonProbe] = py;
  CHECK_THAT(render_text(collect_report(p, opts())), Catch::Contains("not importable: ModuleNotFoundError"));
}

TEST_CASE("version: version, git revision and the worker's LibTorch", "[envreport]") {
  auto p = healthy();
  const auto w = probe_worker(p, "/opt/mtrain/bin/mtrain-worker", 1000);
  CHECK(version_text("0.1.0", "abc123", w) == "mtrain 0.1.0 (git abc123)\nLibTorch 1.13.0 (mtrain-worker /opt/mtrain/bin/mtrain-worker)");
  CHECK_THAT(version_text("0.1.0", "", probe_worker(p, "", 1000)),
             Catch::Contains("(git unknown)") && Catch::Contains("LibTorch unknown: mtrain-worker is not installed"));
}
