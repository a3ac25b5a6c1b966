// GPUs in `mtrain env` (lib/envreport/gpus.cpp): none said in one plain line, or read from
// nvidia-smi (devices, MIG mode, driver CUDA, topology).
#include <catch2/catch.hpp>

#include "machine.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;
using json = nlohmann::json;

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
