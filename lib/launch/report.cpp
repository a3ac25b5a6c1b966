#include "lib/launch/report.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/error_file.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain::launch {

static std::string error_file_message(const std::string& path) {
  // torch.distributed.elastic's @record and mtrain-worker write {"message": {"message": "...",
  // "extraInfo": {...}}} (lib/core/error_file.hpp).
  try {
    const auto text = read_input_file(path);  // bounded: a rank wrote it
    return text ? mtrain::error_file_message(*text).value_or("") : "";
  } catch (const std::exception&) {
    return "";  // larger than any record: not one
  }
}

std::string format_report(const plan::LaunchPlan& plan, const Failure& f, int attempt, int max_restarts) {
  if (f.external) {
    std::string host = plan.nodes.empty() ? std::string("this node") : plan.nodes.front().host;
    std::string out =
        fmt::format("mtrain: job {} stopped on {} (attempt {}): {}\n", plan.job_id, host, attempt, visible_text(f.cause));
    for (const auto& o : f.others)
      out += fmt::format("  rank {} (local rank {}, pid {}): {}\n", o.rank, o.local_rank, o.pid, o.status.describe());
    return out;
  }
  const auto& r = f.root;
  std::string out = fmt::format(
      "mtrain: job {} failed on attempt {} (max restarts {})\n"
      "root cause (first rank to fail):\n"
      "  host:       {}\n"
      "  rank:       {} (local rank {})\n"
      "  pid:        {}\n"
      "  exit:       {}\n"
      "  elapsed:    {:.2f} s\n",
      plan.job_id, attempt, max_restarts, r.host, r.rank, r.local_rank, r.pid, r.status.describe(), r.elapsed_s);
  // Everything a rank wrote is shown with its control characters visible: a report is read on
  // a terminal, where an escape sequence would act (clear the screen, retitle the window).
  if (!f.cause.empty()) out += fmt::format("  cause:      {}\n", visible_text(f.cause));
  if (!f.first_by_error_file.empty()) out += fmt::format("  first:      {}\n", f.first_by_error_file);
  if (!r.error_file.empty()) {
    std::string msg = error_file_message(r.error_file);
    if (!msg.empty()) {
      out += r.error_file_removed ? std::string("  error file: (in the launcher's temporary folder, removed; --log-dir keeps it)\n")
                                  : fmt::format("  error file: {}\n", r.error_file);
      size_t start = 0;
      for (size_t nl; (nl = msg.find('\n', start)) != std::string::npos; start = nl + 1)
        out += "    " + visible_text(std::string_view(msg).substr(start, nl - start)) + "\n";
      if (start < msg.size()) out += "    " + visible_text(std::string_view(msg).substr(start)) + "\n";
    }
  }
  if (r.stderr_tail.empty()) {
    out += "  stderr:     (empty)\n";
  } else {
    out += fmt::format("  last {} lines of stderr:\n", r.stderr_tail.size());
    for (const auto& line : r.stderr_tail) out += "    " + visible_text(line) + "\n";
  }
  if (!f.others.empty()) {
    out += "other failed ranks:\n";
    for (const auto& o : f.others)
      out += fmt::format("  rank {} (local rank {}, host {}, pid {}): {}{}\n", o.rank, o.local_rank, o.host, o.pid,
                         o.status.describe(), o.stopped_by_launcher ? " (stopped by mtrain during teardown)" : "");
  }
  return out;
}

void print_report(std::FILE* out, const plan::LaunchPlan& plan, const Failure& f, int attempt, int max_restarts) {
  std::string text = format_report(plan, f, attempt, max_restarts);
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

}  // namespace mtrain::launch
