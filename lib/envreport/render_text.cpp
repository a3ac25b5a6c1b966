// The text form of `mtrain env`: sections of "key: value" lines, rendered from the JSON report.
#include <algorithm>

#include <fmt/format.h>

#include "lib/core/strings.hpp"
#include "lib/envreport/report.hpp"

namespace mtrain::envreport {

namespace {

std::string s(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string bytes(const json& v) { return v.is_null() ? "-" : human_bytes(v.get<double>(), 1); }

// One section's "key: value" rows. The values line up one space past the section's longest key,
// and no nearer than the 16 characters every section once shared: short sections keep their
// layout, and a long name (CUDA_VISIBLE_DEVICES, a user file's train.batch_size, a veth
// interface) is never glued to its value.
class Section {
 public:
  void line(const std::string& k, const std::string& v) { rows_.push_back({k + ":", v, false}); }
  void verbatim(const std::string& text) { rows_.push_back({text, "", true}); }  // not aligned, e.g. a table

  std::string str(const std::string& title) const {
    size_t width = kMinKeyWidth;
    for (const auto& r : rows_)
      if (!r.verbatim) width = std::max(width, r.key.size() + 1);
    std::string out = title + "\n";
    for (const auto& r : rows_) out += r.verbatim ? r.key + "\n" : fmt::format("  {:<{}}{}\n", r.key, width, r.value);
    return out;
  }

 private:
  static constexpr size_t kMinKeyWidth = 16;
  struct Row {
    std::string key, value;
    bool verbatim;
  };
  std::vector<Row> rows_;
};

// The launcher, and the worker's LibTorch build as `mtrain-worker build-info` reported it.
void render_mtrain(Section& sec, const json& m) {
  sec.line("version", s(m.at("version")));
  sec.line("executable", s(m.at("executable")));
  const auto& w = m.at("worker");
  sec.line("mtrain-worker", s(w.at("path")));
  if (w.contains("build")) {
    const auto& b = w.at("build");
    sec.line("LibTorch", s(b.value("libtorch", json())));
    auto flag = [&](const char* k) {
      const json& x = b.value(k, json::object());
      if (!x.value("compiled", false)) return std::string("not compiled in");
      return "compiled in" + (x.value("version", json()).is_null() ? std::string() : ", " + s(x.at("version")));
    };
    sec.line("CUDA", flag("cuda"));
    sec.line("NCCL", flag("nccl"));
    sec.line("Gloo", b.value("gloo", false) ? "compiled in" : "not compiled in");
    if (b.contains("blas")) {
      const std::string path = s(b.at("blas"));
      sec.line("BLAS", path.empty() || path == "-" ? "-" : blas_kind(path) + " (" + path + ")");
    }
  } else if (w.contains("error")) {
    sec.line("build", s(w.at("error")));
  }
}

// The interpreter `launch -- python3 …` ranks run, and its PyTorch.
void render_python(Section& sec, const json& py) {
  if (!py.value("found", false)) {
    sec.line("python3", s(py.value("error", json())));
    return;
  }
  sec.line("python3", s(py.at("path")) + " (" + s(py.value("executable", json())) + ", " + s(py.value("version", json())) + ")");
  if (py.value("torch", json()).is_null()) {
    sec.line("PyTorch", "not importable: " + s(py.value("torch_error", json())));
  } else {
    sec.line("PyTorch", s(py.at("torch")) + (py.value("torch_cuda", json()).is_null() ? ", CPU build"
                                                                                      : ", CUDA " + s(py.at("torch_cuda"))) +
                             (py.value("cuda_available", false) ? ", GPU usable" : ", no GPU usable"));
  }
}

void render_system(Section& sec, const json& r) {
  sec.line("os", s(r.at("os").at("name")) + " (" + s(r.at("os").at("machine")) + ")");
  sec.line("kernel", s(r.at("os").at("kernel")));
  sec.line("hostname", s(r.at("os").at("hostname")));
  sec.line("cpu", fmt::format("{} core(s), {}", s(r.at("cpu").at("cores")), s(r.at("cpu").at("model"))));
  sec.line("memory", bytes(r.at("memory").at("total_bytes")) + " total, " + bytes(r.at("memory").at("available_bytes")) +
                          " available");
  const auto& shm = r.at("shm");
  sec.line("/dev/shm", shm.at("mounted").get<bool>()
                            ? bytes(shm.at("total_bytes")) + " (" + bytes(shm.at("free_bytes")) + " free)"
                            : "not mounted");
  const auto& lim = r.at("limits");
  sec.line("open files", (lim.at("open_files_soft").is_null() ? "unlimited" : s(lim.at("open_files_soft"))) + " (hard " +
                              (lim.at("open_files_hard").is_null() ? "unlimited" : s(lim.at("open_files_hard"))) + ")");
}

void render_gpus(Section& sec, const json& g) {
  if (g.at("devices").empty()) {
    sec.line("gpu", s(g.at("note")));
    return;
  }
  sec.line("source", s(g.at("source")) + (g.at("cuda_driver_version").is_null()
                                               ? std::string()
                                               : " (driver supports CUDA " + s(g.at("cuda_driver_version")) + ")"));
  for (const auto& d : g.at("devices")) {
    sec.line("gpu " + s(d.at("index")),
         fmt::format("{}, {}, driver {}, MIG {}, {}, {}", s(d.at("name")), bytes(d.at("memory_total_bytes")),
                     s(d.at("driver")), d.at("mig_mode").is_null() ? "n/a" : s(d.at("mig_mode")), s(d.at("pci_bus_id")),
                     s(d.at("uuid"))));
  }
  if (!g.at("topology").is_null()) {
    sec.verbatim("  topology:");
    for (const auto& l : str::split(g.at("topology").get<std::string>(), '\n'))
      if (!str::trim(l).empty()) sec.verbatim("    " + l);
  }
}

void render_network(Section& sec, const json& network) {
  for (const auto& n : network)
    sec.line(s(n.at("name")), std::string(n.at("up").get<bool>() ? "up" : "down") +
                                   (n.at("addresses").empty() ? "" : "  " + str::join(n.at("addresses").get<std::vector<std::string>>(), " ")));
}

void render_slurm(Section& sec, const json& sl) {
  sec.line("installed", !sl.at("installed").get<bool>() ? "no (sinfo not on PATH)"
                         : sl.contains("problem")  ? "yes, but " + s(sl.at("problem"))
                                                   : "yes (" + s(sl.at("version")) + ")");
  if (sl.contains("allocation")) {
    const auto& a = sl.at("allocation");
    sec.line("allocation", fmt::format("job {} on {} (node {}, partition {}){}", s(a.at("job_id")),
                                        str::join(a.at("nodes").get<std::vector<std::string>>(), ","), s(a.at("node_id")),
                                        s(a.at("partition")), a.at("in_step").get<bool>() ? ", inside a step" : ""));
  } else {
    sec.line("allocation", sl.contains("error") ? "invalid: " + s(sl.at("error")) : "none");
  }
}

void render_rendezvous(Section& sec, const json& r) {
  sec.line("backend", s(r.at("backend")) + (r.at("endpoint").is_null() ? "" : " at " + s(r.at("endpoint"))) +
                          (r.contains("api") ? " (" + s(r.at("api")) + " API)" : ""));
  if (r.contains("error")) sec.line("problem", s(r.at("error")));
  if (!r.contains("members")) return;
  for (const auto& m : r.at("members"))
    sec.line(s(m.at("endpoint")),
             m.at("answered").get<bool>()
                 ? fmt::format("answers: etcd {}{}", s(m.at("etcdserver")),
                               m.contains("etcdcluster") ? " (cluster " + s(m.at("etcdcluster")) + ")" : "")
                 : "no answer: " + s(m.at("error")));
}

// The variables that are set (with where they came from and who reads them), the unset ones
// by name, and the user file's settings.
void render_environment(Section& sec, const json& r) {
  for (const auto& e : r.at("environment")) {
    if (e.at("value").is_null()) continue;
    std::string src = s(e.at("source"));
    if (e.contains("setting") && !e.at("setting").is_null()) src += ", setting " + s(e.at("setting"));
    sec.line(s(e.at("name")), s(e.at("value")) + "   (" + src + "; " + s(e.at("used_by")) + ")");
  }
  std::vector<std::string> unset;
  for (const auto& e : r.at("environment"))
    if (e.at("value").is_null()) unset.push_back(s(e.at("name")));
  // Wrapped at ~100 columns: the list is long and people paste this into issues.
  std::string row;
  for (const auto& n : unset) {
    if (!row.empty() && row.size() + n.size() > 80) {
      sec.line("unset", row);
      row.clear();
    }
    row += (row.empty() ? "" : " ") + n;
  }
  if (!row.empty()) sec.line("unset", row);
  const auto& uc = r.at("user_config");
  if (uc.at("exists").get<bool>()) {
    sec.line("user config", s(uc.at("path")));
    for (const auto& [k, v] : uc.at("settings").items()) sec.line("  " + k, s(v) + "   (user file)");
  }
}

std::string render_warnings(const json& warns) {
  std::string out = fmt::format("warnings ({})\n", warns.size());
  for (const auto& x : warns) out += "  ! " + s(x.at("what")) + "\n    " + s(x.at("advice")) + "\n";
  return out;
}

}  // namespace

std::string render_text(const json& r) {
  auto section = [](const std::string& title, const json& part, void (*render)(Section&, const json&)) {
    Section sec;
    render(sec, part);
    return sec.str(title);
  };
  std::string out = section("mtrain", r.at("mtrain"), render_mtrain);
  if (r.contains("python")) out += section("python (ranks of `mtrain launch -- python3 ...`)", r.at("python"), render_python);
  out += section("system", r, render_system);
  out += section("gpus", r.at("gpus"), render_gpus);
  out += section("network", r.at("network"), render_network);
  out += section("slurm", r.at("slurm"), render_slurm);
  if (r.contains("rendezvous")) out += section("rendezvous", r.at("rendezvous"), render_rendezvous);
  out += section("environment", r, render_environment);
  return out + render_warnings(r.at("warnings"));
}

}  // namespace mtrain::envreport
