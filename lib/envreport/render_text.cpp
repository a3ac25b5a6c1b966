// The text form of `mtrain env`: sections of "key: value" lines, rendered from the JSON report.
#include <fmt/format.h>

#include "mtrain/core/strings.hpp"
#include "mtrain/envreport/report.hpp"

namespace mtrain::envreport {

namespace {

std::string s(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string bytes(const json& v) { return v.is_null() ? "-" : human_bytes(v.get<double>()); }

void line(std::string& out, const std::string& k, const std::string& v) { out += fmt::format("  {:<16}{}\n", k + ":", v); }

// The launcher, and the worker's LibTorch build as `mtrain-worker build-info` reported it.
void render_mtrain(std::string& out, const json& m) {
  out += "mtrain\n";
  line(out, "version", s(m.at("version")));
  line(out, "executable", s(m.at("executable")));
  const auto& w = m.at("worker");
  line(out, "mtrain-worker", s(w.at("path")));
  if (w.contains("build")) {
    const auto& b = w.at("build");
    line(out, "LibTorch", s(b.value("libtorch", json())));
    auto flag = [&](const char* k) {
      const json& x = b.value(k, json::object());
      if (!x.value("compiled", false)) return std::string("not compiled in");
      return "compiled in" + (x.value("version", json()).is_null() ? std::string() : ", " + s(x.at("version")));
    };
    line(out, "CUDA", flag("cuda"));
    line(out, "NCCL", flag("nccl"));
    line(out, "Gloo", b.value("gloo", false) ? "compiled in" : "not compiled in");
    if (b.contains("blas")) {
      const std::string path = s(b.at("blas"));
      line(out, "BLAS", path.empty() || path == "-" ? "-" : blas_kind(path) + " (" + path + ")");
    }
  } else if (w.contains("error")) {
    line(out, "build", s(w.at("error")));
  }
}

// The interpreter `launch -- python3 …` ranks run, and its PyTorch.
void render_python(std::string& out, const json& py) {
  out += "python (ranks of `mtrain launch -- python3 ...`)\n";
  if (!py.value("found", false)) {
    line(out, "python3", s(py.value("error", json())));
    return;
  }
  line(out, "python3", s(py.at("path")) + " (" + s(py.value("executable", json())) + ", " + s(py.value("version", json())) + ")");
  if (py.value("torch", json()).is_null()) {
    line(out, "PyTorch", "not importable: " + s(py.value("torch_error", json())));
  } else {
    line(out, "PyTorch", s(py.at("torch")) + (py.value("torch_cuda", json()).is_null() ? ", CPU build"
                                                                                      : ", CUDA " + s(py.at("torch_cuda"))) +
                             (py.value("cuda_available", false) ? ", GPU usable" : ", no GPU usable"));
  }
}

void render_system(std::string& out, const json& r) {
  out += "system\n";
  line(out, "os", s(r.at("os").at("name")) + " (" + s(r.at("os").at("machine")) + ")");
  line(out, "kernel", s(r.at("os").at("kernel")));
  line(out, "hostname", s(r.at("os").at("hostname")));
  line(out, "cpu", fmt::format("{} core(s), {}", s(r.at("cpu").at("cores")), s(r.at("cpu").at("model"))));
  line(out, "memory", bytes(r.at("memory").at("total_bytes")) + " total, " + bytes(r.at("memory").at("available_bytes")) +
                          " available");
  const auto& shm = r.at("shm");
  line(out, "/dev/shm", shm.at("mounted").get<bool>()
                            ? bytes(shm.at("total_bytes")) + " (" + bytes(shm.at("free_bytes")) + " free)"
                            : "not mounted");
  const auto& lim = r.at("limits");
  line(out, "open files", (lim.at("open_files_soft").is_null() ? "unlimited" : s(lim.at("open_files_soft"))) + " (hard " +
                              (lim.at("open_files_hard").is_null() ? "unlimited" : s(lim.at("open_files_hard"))) + ")");
}

void render_gpus(std::string& out, const json& g) {
  out += "gpus\n";
  if (g.at("devices").empty()) {
    line(out, "gpu", s(g.at("note")));
    return;
  }
  line(out, "source", s(g.at("source")) + (g.at("cuda_driver_version").is_null()
                                               ? std::string()
                                               : " (driver supports CUDA " + s(g.at("cuda_driver_version")) + ")"));
  for (const auto& d : g.at("devices")) {
    line(out, "gpu " + s(d.at("index")),
         fmt::format("{}, {}, driver {}, MIG {}, {}, {}", s(d.at("name")), bytes(d.at("memory_total_bytes")),
                     s(d.at("driver")), d.at("mig_mode").is_null() ? "n/a" : s(d.at("mig_mode")), s(d.at("pci_bus_id")),
                     s(d.at("uuid"))));
  }
  if (!g.at("topology").is_null()) {
    out += "  topology:\n";
    for (const auto& l : str::split(g.at("topology").get<std::string>(), '\n'))
      if (!str::trim(l).empty()) out += "    " + l + "\n";
  }
}

void render_network(std::string& out, const json& network) {
  out += "network\n";
  for (const auto& n : network)
    line(out, s(n.at("name")), std::string(n.at("up").get<bool>() ? "up" : "down") +
                                   (n.at("addresses").empty() ? "" : "  " + str::join(n.at("addresses").get<std::vector<std::string>>(), " ")));
}

void render_slurm(std::string& out, const json& sl) {
  out += "slurm\n";
  line(out, "installed", !sl.at("installed").get<bool>() ? "no (sinfo not on PATH)"
                         : sl.contains("problem")  ? "yes, but " + s(sl.at("problem"))
                                                   : "yes (" + s(sl.at("version")) + ")");
  if (sl.contains("allocation")) {
    const auto& a = sl.at("allocation");
    line(out, "allocation", fmt::format("job {} on {} (node {}, partition {}){}", s(a.at("job_id")),
                                        str::join(a.at("nodes").get<std::vector<std::string>>(), ","), s(a.at("node_id")),
                                        s(a.at("partition")), a.at("in_step").get<bool>() ? ", inside a step" : ""));
  } else {
    line(out, "allocation", sl.contains("error") ? "invalid: " + s(sl.at("error")) : "none");
  }
}

// The variables that are set (with where they came from and who reads them), the unset ones
// by name, and the user file's settings.
void render_environment(std::string& out, const json& r) {
  out += "environment\n";
  for (const auto& e : r.at("environment")) {
    if (e.at("value").is_null()) continue;
    std::string src = s(e.at("source"));
    if (e.contains("setting") && !e.at("setting").is_null()) src += ", setting " + s(e.at("setting"));
    line(out, s(e.at("name")), s(e.at("value")) + "   (" + src + "; " + s(e.at("used_by")) + ")");
  }
  std::vector<std::string> unset;
  for (const auto& e : r.at("environment"))
    if (e.at("value").is_null()) unset.push_back(s(e.at("name")));
  // Wrapped at ~100 columns: the list is long and people paste this into issues.
  std::string row;
  for (const auto& n : unset) {
    if (!row.empty() && row.size() + n.size() > 80) {
      line(out, "unset", row);
      row.clear();
    }
    row += (row.empty() ? "" : " ") + n;
  }
  if (!row.empty()) line(out, "unset", row);
  const auto& uc = r.at("user_config");
  if (uc.at("exists").get<bool>()) {
    line(out, "user config", s(uc.at("path")));
    for (const auto& [k, v] : uc.at("settings").items()) line(out, "  " + k, s(v) + "   (user file)");
  }
}

void render_warnings(std::string& out, const json& warns) {
  out += fmt::format("warnings ({})\n", warns.size());
  for (const auto& x : warns) out += "  ! " + s(x.at("what")) + "\n    " + s(x.at("advice")) + "\n";
}

}  // namespace

std::string render_text(const json& r) {
  std::string out;
  render_mtrain(out, r.at("mtrain"));
  if (r.contains("python")) render_python(out, r.at("python"));
  render_system(out, r);
  render_gpus(out, r.at("gpus"));
  render_network(out, r.at("network"));
  render_slurm(out, r.at("slurm"));
  render_environment(out, r);
  render_warnings(out, r.at("warnings"));
  return out;
}

}  // namespace mtrain::envreport
