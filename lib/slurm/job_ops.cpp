#include "lib/slurm/job_ops.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/atomic_file.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::slurm {

namespace fs = std::filesystem;

namespace {

void make_dirs(const fs::path& dir, const std::string& what) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(fmt::format("cannot create the {} folder {}: {}", what, dir.string(), ec.message()),
                "Choose a writable place (--output / --script-file).");
}

std::string user_name() {
  const char* u = std::getenv("USER");
  return u ? u : "";
}

}  // namespace

void make_output_folders(const JobOptions& job, const std::string& cwd) {
  const fs::path base = job.chdir.empty() ? fs::path(cwd) : fs::path(cwd) / job.chdir;
  for (const auto& f : {job.output, job.error}) {
    if (f.empty()) continue;
    const fs::path dir = fs::path(f).parent_path();
    if (dir.string().find('%') == std::string::npos) make_dirs(dir.is_absolute() ? dir : base / dir, "output");
  }
}

std::string default_state_dir() {
  if (const char* s = std::getenv("MTRAIN_SLURM_STATE"); s && *s) return s;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/mtrain/slurm";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/mtrain/slurm";
  return "/tmp/mtrain-slurm-" + user_name();
}

Submitted submit_job(const JobOptions& job, const ScriptContext& ctx, const std::string& script_path,
                     SlurmClient& client, const std::string& state_dir) {
  std::string text = render_script(job, ctx);
  fs::path script = fs::absolute(script_path);
  make_dirs(script.parent_path(), "script");
  std::error_code ec;
  make_output_folders(job, fs::current_path(ec).string());
  AtomicWrite executable;
  executable.mode = 0754;  // sbatch reads it; a user may run it by hand
  if (const int err = replace_file_atomically(script.string(), text, executable); err != 0)
    throw Error(fmt::format("cannot write the script {}: {}", script.string(), std::strerror(err)),
                "Choose another --script-file.");
  SubmitResult r = client.submit(script.string());
  Submitted s{r.job_id, r.cluster, script.string(), job.output};
  // Best effort: a record lets `logs` find the output after the controller forgot the job.
  fs::create_directories(state_dir, ec);
  if (!ec) {
    nlohmann::json rec{{"job_id", s.job_id}, {"job_name", job.job_name}, {"script", s.script_path},
                       {"output", expand_file_pattern(job.output, s.job_id, job.job_name, user_name())},
                       {"error", job.error.empty() ? "" : expand_file_pattern(job.error, s.job_id, job.job_name, user_name())}};
    (void)replace_file_atomically((fs::path(state_dir) / (s.job_id + ".json")).string(), rec.dump(2) + "\n");
  }
  return s;
}

bool line_is_rank(const std::string& line, int rank) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  size_t j = i;
  while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
  if (j == i || j >= line.size() || line[j] != ':') return false;
  return line.substr(i, j - i) == std::to_string(rank);
}

JobStatus show_logs(SlurmClient& client, const std::string& job_id, const LogOptions& opt,
                    const std::string& state_dir, const std::function<void(const std::string&)>& emit) {
  JobStatus st = client.status(job_id);
  std::string path = opt.errors ? st.stderr_path : st.stdout_path;
  if (path.empty()) {
    std::ifstream in(fs::path(state_dir) / (job_id + ".json"));
    if (in) {
      auto rec = nlohmann::json::parse(in, nullptr, false);
      if (rec.is_object()) {
        path = rec.value(opt.errors ? "error" : "output", "");
        if (opt.errors && path.empty()) path = rec.value("output", "");
      }
    }
  }
  if (path.empty() && !opt.errors) path = fmt::format("slurm-{}.out", job_id);
  path = expand_file_pattern(path, job_id, st.name, user_name());
  auto start = std::chrono::steady_clock::now();
  std::ifstream in;
  std::string pending;
  bool announced = false;
  while (true) {
    if (!in.is_open()) {
      in.open(path, std::ios::binary);
      if (!in.is_open() && !opt.follow)
        throw Error(fmt::format("the output of job {} is not at {}", job_id, path),
                    st.state == "PENDING" ? "The job has not started yet; try `mtrain slurm logs -f`."
                                          : "It may be on a node-local disk, or was moved; see `scontrol show job`.",
                    kExitFailure);
      if (!in.is_open() && !announced) {
        emit(fmt::format("mtrain: waiting for {} (job {} is {})", path, job_id, st.readable()));
        announced = true;
      }
    }
    if (in.is_open()) {
      in.clear();
      std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      pending += chunk;
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        if (opt.rank < 0 || line_is_rank(line, opt.rank)) emit(line);
      }
    }
    if (!opt.follow) break;
    if (st.terminal()) {
      if (!in.is_open()) in.open(path, std::ios::binary);
      if (in.is_open()) {  // the last bytes written before the job ended
        in.clear();
        pending += std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      }
      break;
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (opt.timeout_s > 0 && elapsed > opt.timeout_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(opt.poll_s * 1000)));
    st = client.status(job_id);
  }
  if (!pending.empty()) {
    for (const auto& line : str::split(pending, '\n'))
      if (!line.empty() && (opt.rank < 0 || line_is_rank(line, opt.rank))) emit(line);
  }
  return st;
}

}  // namespace mtrain::slurm
