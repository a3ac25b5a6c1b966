#include "lib/runs/catalog.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/run_folder.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/runs/segments.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace mtrain::runs {

namespace {

const char* kFileHint = "A run folder holds the regular files the trainer writes (run.json, metrics.jsonl, summary.json); "
                        "move the odd file away, or list the other runs.";

Error unreadable(const fs::path& p, const std::string& why) {
  return Error(visible_text(fmt::format("{} {}", p.string(), why)), kFileHint);
}

bool absent(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) != 0 && errno == ENOENT;
}

// The file, open, when it is a regular file (opened O_NONBLOCK, so a FIFO cannot block: see
// untrusted_file.hpp); nullopt when there is none; mtrain::Error when it is something else.
std::optional<UntrustedFile> open_run_file(const fs::path& p) {
  if (absent(p)) return std::nullopt;
  std::string why;
  UntrustedFile f = open_untrusted(p.string(), &why);
  if (f.fd() < 0) throw unreadable(p, why);
  return f;
}

// read(2) that retries EINTR and turns an error into the run's refusal.
size_t read_some(const UntrustedFile& f, char* buf, size_t n) {
  for (;;) {
    const ssize_t r = ::read(f.fd(), buf, n);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno != EINTR) throw unreadable(f.path(), fmt::format("cannot be read ({})", std::strerror(errno)));
  }
}

std::string mib(size_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

// "not JSON (syntax error at byte 12)" or the input limit's own words.
std::string why_not_json(const std::exception& e) {
  if (const auto* pe = dynamic_cast<const json::parse_error*>(&e)) return fmt::format("not JSON (syntax error at byte {})", pe->byte);
  if (const auto* me = dynamic_cast<const Error*>(&e)) return me->message();
  return "not JSON";
}

// run.json or summary.json: null when absent or not JSON (with a warning); the run's refusal
// when it is not a regular file or larger than the limit.
json read_json(const fs::path& p, const RunFileLimits& lim, std::vector<std::string>& warnings) {
  auto f = open_run_file(p);
  if (!f) return json();
  if (f->size() > lim.max_json_bytes)
    throw unreadable(p, fmt::format("is {} bytes, more than a run's JSON file may be ({})", f->size(), mib(lim.max_json_bytes)));
  std::string text;
  char buf[1 << 16];
  // Bounded by the limit, not by st_size: the file may grow while it is read.
  while (text.size() <= lim.max_json_bytes) {
    const size_t n = read_some(*f, buf, sizeof buf);
    if (n == 0) break;
    text.append(buf, n);
  }
  if (text.size() > lim.max_json_bytes) throw unreadable(p, fmt::format("grew past {} while it was read", mib(lim.max_json_bytes)));
  InputLimits il;
  il.max_bytes = lim.max_json_bytes;
  try {
    return parse_json_limited(text, p.string(), false, il);
  } catch (const std::exception& e) {
    warnings.push_back(visible_text(fmt::format("{}: {}; read as absent", p.string(), why_not_json(e))));
    return json();
  }
}

constexpr long long kMaxWhole = 1LL << 53;  // every whole number a double holds exactly

// `v` as a whole number in [lo, hi]; nullopt for anything else (a string, 2.5, 1e300, -1).
std::optional<long long> whole(const json& v, long long lo, long long hi) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<unsigned long long>();
    if (u > static_cast<unsigned long long>(hi)) return std::nullopt;
    const auto s = static_cast<long long>(u);
    return s >= lo ? std::optional<long long>(s) : std::nullopt;
  }
  if (v.is_number_integer()) {
    const auto s = v.get<long long>();
    return s >= lo && s <= hi ? std::optional<long long>(s) : std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi)) return std::nullopt;
    return static_cast<long long>(d);
  }
  return std::nullopt;
}

// A value as it reads in a warning: its JSON, cut short.
std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 40) + "…" : s;
}

// The fields of run.json or summary.json: absent ones are absent; present ones of the wrong type
// or range are absent too, with a warning naming the file, the key and the value.
class Fields {
 public:
  Fields(const json& j, const fs::path& file, std::vector<std::string>& warnings) : j_(j), file_(file.string()), warnings_(warnings) {}
  bool exists() const { return j_.is_object(); }
  bool has(const char* k) const { return j_.is_object() && j_.contains(k); }
  std::string text(const char* k) const {
    if (!has(k) || j_[k].is_null()) return "";
    if (j_[k].is_string()) return j_[k].get<std::string>();
    wrong(k, "not text");
    return "";
  }
  std::optional<long long> integer(const char* k, long long lo, long long hi, const char* what) const {
    if (!has(k) || j_[k].is_null()) return std::nullopt;
    auto v = whole(j_[k], lo, hi);
    if (!v) wrong(k, what);
    return v;
  }
  std::optional<double> number(const json& v, const std::string& k) const {
    if (v.is_null()) return std::nullopt;
    if (v.is_number() && std::isfinite(v.get<double>())) return v.get<double>();
    wrong_value(k, v, "not a finite number");
    return std::nullopt;
  }
  const json& at(const char* k) const { return j_[k]; }
  void wrong_value(const std::string& k, const json& v, const char* what) const {
    warnings_.push_back(visible_text(fmt::format("{}: \"{}\" is {}, {}; ignored", file_, k, shown(v), what)));
  }

 private:
  void wrong(const char* k, const char* what) const { wrong_value(k, j_[k], what); }
  const json& j_;
  std::string file_;
  std::vector<std::string>& warnings_;
};

// One line of metrics.jsonl into the curves; a reason when it is skipped ("" when it is skipped
// without a word: see catalog.hpp).
std::optional<std::string> take_metrics_line(const std::string& line, bool terminated, Run& r) {
  json rec;
  try {
    rec = parse_json_limited(line, "the line");
  } catch (const std::exception& e) {
    if (!terminated) return std::string();
    return why_not_json(e);
  }
  if (!rec.is_object()) return std::string("not a JSON object");
  if (rec.contains("mode") && !rec["mode"].is_string()) return fmt::format("\"mode\" is {}, not text", shown(rec["mode"]));
  if (!rec.contains("step")) return std::string("no \"step\"");
  const auto step = whole(rec["step"], 0, kMaxWhole);
  if (!step) return fmt::format("\"step\" is {}, not a step count (a whole number from 0 to 2^53)", shown(rec["step"]));
  if (!rec.contains("loss")) return std::string("no \"loss\"");
  if (rec["loss"].is_null()) return std::string();  // a NaN loss, as nlohmann writes it
  if (!rec["loss"].is_number() || !std::isfinite(rec["loss"].get<double>()))
    return fmt::format("\"loss\" is {}, not a finite number", shown(rec["loss"]));
  const double loss = rec["loss"].get<double>();
  if (rec.value("mode", "train") == "val") {
    r.val.emplace_back(static_cast<double>(*step), loss);
  } else {
    r.loss.emplace_back(static_cast<double>(*step), loss);
    r.steps = std::max(r.steps, *step);
  }
  return std::nullopt;
}

// metrics.jsonl, streamed: at most max_metrics_bytes read, at most max_line_bytes held.
void read_metrics(const fs::path& p, Run& r, const RunFileLimits& lim) {
  auto f = open_run_file(p);
  if (!f) return;
  size_t lineno = 0, bad = 0, total = 0;
  auto skipped = [&](const std::string& why) {
    if (++bad <= lim.max_named_lines) r.warnings.push_back(visible_text(fmt::format("{}:{}: {}; line skipped", p.string(), lineno, why)));
  };
  std::string line;
  bool overlong = false;
  auto end_line = [&](bool terminated) {
    ++lineno;
    if (overlong) {
      skipped(fmt::format("longer than {} KiB", lim.max_line_bytes >> 10));
    } else if (auto why = take_metrics_line(line, terminated, r); why && !why->empty()) {
      skipped(*why);
    }
    line.clear();
    overlong = false;
  };
  std::vector<char> buf(1 << 16);
  bool more = false;
  for (;;) {
    const size_t want = std::min(buf.size(), lim.max_metrics_bytes - total);
    if (want == 0) {
      char probe;
      more = read_some(*f, &probe, 1) > 0;
      break;
    }
    const size_t n = read_some(*f, buf.data(), want);
    if (n == 0) break;
    total += n;
    const char* s = buf.data();
    const char* const e = s + n;
    while (s < e) {
      const char* nl = static_cast<const char*>(std::memchr(s, '\n', static_cast<size_t>(e - s)));
      const char* stop = nl ? nl : e;
      const size_t seg = static_cast<size_t>(stop - s);
      if (!overlong && line.size() + seg > lim.max_line_bytes) {
        overlong = true;
        line.clear();
        line.shrink_to_fit();
      }
      if (!overlong) line.append(s, seg);
      if (!nl) break;
      end_line(true);
      s = nl + 1;
    }
  }
  if (!line.empty() || overlong) end_line(false);
  if (bad > lim.max_named_lines)
    r.warnings.push_back(visible_text(fmt::format("{}: {} more bad lines skipped", p.string(), bad - lim.max_named_lines)));
  if (more)
    r.warnings.push_back(visible_text(fmt::format("{}: larger than {}; only its first {} read", p.string(), mib(lim.max_metrics_bytes),
                                                  mib(lim.max_metrics_bytes))));
}

double seconds_of(fs::file_time_type t) {
  // file_time_type's clock is not system_clock in C++17: convert through the present moment.
  const auto now_file = fs::file_time_type::clock::now();
  const auto now_sys = std::chrono::system_clock::now();
  const auto sys = now_sys + std::chrono::duration_cast<std::chrono::system_clock::duration>(t - now_file);
  return std::chrono::duration<double>(sys.time_since_epoch()).count();
}

std::string human_duration(double s) {
  // The span comes from the run's own files, which may hold any times: beyond a million hours it
  // is said as such, since converting a double past long long's range is undefined.
  if (!(s < 3.6e9)) return ">1000000h";
  const long long t = std::llround(s);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, t % 3600 / 60);
}

std::string number(const std::optional<double>& v) { return v ? fmt::format("{:.4f}", *v) : "-"; }

}  // namespace

bool process_alive(long long pid, const std::string& host) {
  char me[256] = {0};
  gethostname(me, sizeof me - 1);
  if (pid <= 0 || host != me) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

Run read_run(const std::string& folder, const std::string& name, bool (*alive)(long long, const std::string&),
             const RunFileLimits& lim) {
  const fs::path dir(folder);
  Run r;
  r.path = folder;
  r.name = name;
  const json info_j = read_json(dir / "run.json", lim, r.warnings);
  const json summary_j = read_json(dir / "summary.json", lim, r.warnings);
  const Fields info(info_j, dir / "run.json", r.warnings), summary(summary_j, dir / "summary.json", r.warnings);
  const char* kSteps = "not a step count (a whole number from 0 to 2^53)";
  const char* kWorld = "not a world size (a whole number from 1 to 2^31-1)";
  r.strategy = summary.text("strategy");
  if (r.strategy.empty()) r.strategy = info.text("strategy");
  r.model = summary.text("model");
  if (r.model.empty()) r.model = info.text("model");
  const auto world = summary.integer("world_size", 1, INT_MAX, kWorld);
  r.world = static_cast<int>(world ? *world : info.integer("world_size", 1, INT_MAX, kWorld).value_or(0));
  r.total_steps = info.integer("total_steps", 0, kMaxWhole, kSteps).value_or(0);
  r.start_step = info.integer("start_step", 0, kMaxWhole, kSteps).value_or(0);

  read_metrics(dir / "metrics.jsonl", r, lim);
  if (!r.loss.empty()) r.final_loss = r.loss.back().second;
  if (!r.val.empty()) r.final_val = r.val.back().second;

  std::error_code ec;
  const double started = static_cast<double>(info.integer("started", 0, kMaxWhole, "not a time (seconds since 1970)").value_or(0));
  double last = started;
  for (const char* f : {"run.json", "metrics.jsonl", "summary.json"}) {
    auto t = fs::last_write_time(dir / f, ec);
    if (!ec) last = std::max(last, seconds_of(t));
  }
  if (summary.exists()) {
    r.steps = summary.integer("steps", 0, kMaxWhole, kSteps).value_or(r.steps);
    if (summary.has("final_loss"))
      if (auto v = summary.number(summary.at("final_loss"), "final_loss")) r.final_loss = v;
    if (summary.has("final_val") && !summary.at("final_val").is_null()) {
      const json& fv = summary.at("final_val");
      if (!fv.is_object()) {
        summary.wrong_value("final_val", fv, "not an object");
      } else if (fv.contains("loss")) {
        if (auto v = summary.number(fv["loss"], "final_val.loss")) r.final_val = v;
      }
    }
    r.state = summary.has("stopped_by") ? "stopped (" + summary.text("stopped_by") + ")" : "finished";
  } else if (alive && alive(info.integer("pid", 1, INT_MAX, "not a process id").value_or(0), info.text("host"))) {
    r.state = "running";
    last = static_cast<double>(std::time(nullptr));
  } else {
    r.state = "failed";
  }
  r.duration_s = started > 0 ? std::max(0.0, last - started) : 0;
  return r;
}

std::vector<Run> list_runs(const std::string& dir, std::vector<std::string>* skipped) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(fmt::format("'{}' is not a folder", visible_text(dir)), "Give a work dir (train.work_dir) or a folder of them.");
  std::vector<std::pair<std::string, std::string>> found;  // (folder, shown name)
  auto scan = [&](const fs::path& wd, const std::string& prefix) {
    std::error_code e2;
    for (const auto& e : fs::directory_iterator(wd, e2)) {
      const std::string n = e.path().filename().string();
      if (!e.is_symlink(e2) && e.is_directory(e2) && is_run_folder_name(n)) found.emplace_back(e.path().string(), prefix + n);
    }
  };
  const fs::path d(dir);
  if (is_run_folder_name(d.filename().string())) {
    found.emplace_back(d.string(), d.filename().string());
  } else {
    scan(d, "");
    for (const auto& e : fs::directory_iterator(d, ec)) {
      std::error_code e2;
      if (!e.is_symlink(e2) && e.is_directory(e2) && !is_run_folder_name(e.path().filename().string()))
        scan(e.path(), e.path().filename().string() + "/");
    }
  }
  std::vector<Run> out;
  for (const auto& [folder, name] : found) {
    try {
      out.push_back(read_run(folder, name, process_alive));
    } catch (const Error& e) {  // this run only: the others are still listed
      if (skipped) skipped->push_back(fmt::format("run {} skipped: {}", visible_text(name), e.message()));
    }
  }
  std::sort(out.begin(), out.end(), [](const Run& a, const Run& b) {
    const std::string ta = fs::path(a.path).filename().string(), tb = fs::path(b.path).filename().string();
    return ta != tb ? ta < tb : a.name < b.name;
  });
  return join_segments(std::move(out));
}

std::vector<Run> resolve_runs(const std::string& arg, std::vector<std::string>* skipped) {
  std::error_code ec;
  const fs::path p(arg);
  if (!fs::is_directory(p, ec))
    throw Error(fmt::format("run '{}' is not a folder", visible_text(arg)), "Give a run folder or a work dir; `mtrain runs DIR` lists them.");
  // exists() follows links: a run.json that is a FIFO or a dangling link still makes this a run
  // folder, which read_run then refuses by name.
  if (fs::symlink_status(p / "run.json", ec).type() != fs::file_type::not_found || is_run_folder_name(p.filename().string()))
    return {read_run(arg, arg, process_alive)};
  auto runs = list_runs(arg, skipped);
  if (runs.empty())
    throw Error(fmt::format("'{}' holds no runs{}", visible_text(arg), skipped && !skipped->empty() ? " that can be read" : ""),
                "Give a run folder, e.g. work_dirs/default/20261123_150401.");
  if (runs.size() == 1) {
    runs[0].name = arg;
  } else {
    for (auto& r : runs) r.name = (fs::path(arg) / r.name).string();
  }
  return runs;
}

std::string runs_table(const std::vector<Run>& runs) {
  if (runs.empty()) return "no runs\n";
  std::vector<std::vector<std::string>> rows{{"RUN", "STRATEGY", "WORLD", "STEPS", "LOSS", "VAL", "DURATION", "STATE"}};
  for (const auto& r : runs)
    rows.push_back({visible_text(r.name), r.strategy.empty() ? "-" : visible_text(r.strategy), r.world ? std::to_string(r.world) : "-",
                    (r.total_steps ? fmt::format("{}/{}", r.steps, r.total_steps) : std::to_string(r.steps)) + segments_note(r),
                    number(r.final_loss), number(r.final_val), human_duration(r.duration_s), visible_text(r.state)});
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += fmt::format("{:<{}}", row[i], i + 1 < row.size() ? width[i] + 2 : 0);
    out += line + "\n";
  }
  return out;
}

json runs_json(const std::vector<Run>& runs, bool with_curves) {
  json out = json::array();
  for (const auto& r : runs) {
    json j{{"run", r.name},   {"path", r.path},   {"strategy", r.strategy}, {"model", r.model},
           {"world_size", r.world}, {"steps", r.steps}, {"total_steps", r.total_steps},
           {"final_loss", r.final_loss ? json(*r.final_loss) : json()},
           {"final_val_loss", r.final_val ? json(*r.final_val) : json()},
           {"duration_s", r.duration_s}, {"state", r.state}};
    if (!r.segments.empty()) {
      j["steps_run"] = steps_run(r);
      j["segments"] = json::array();
      for (const auto& s : r.segments)
        j["segments"].push_back({{"run", s.name}, {"path", s.path}, {"start_step", s.start_step}, {"steps", s.steps}});
    }
    if (with_curves) {
      j["loss"] = r.loss;
      j["val"] = r.val;
    }
    out.push_back(j);
  }
  return {{"runs", out}};
}

std::string runs_json_text(const json& j, int indent) {
  const std::string dumped = j.dump(indent, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  for (size_t i = 0; i < dumped.size(); ++i) {
    const auto c = static_cast<unsigned char>(dumped[i]);
    const auto next = i + 1 < dumped.size() ? static_cast<unsigned char>(dumped[i + 1]) : 0;
    if (c == 0x7f) {
      out += "\\u007f";
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080–U+009F, only ever inside a string
      out += fmt::format("\\u{:04x}", next);
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace mtrain::runs
