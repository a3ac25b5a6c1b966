#include "lib/trainer/loop/failure_record.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "lib/core/error.hpp"
#include "lib/core/error_file.hpp"
#include "lib/trainer/comm/exception_text.hpp"

namespace mtrain::trainer {

std::string failure_paragraph(const std::exception& e) {
  if (const auto* me = dynamic_cast<const Error*>(&e)) return me->paragraph();
  return "error: " + exception_text(e);
}

void record_failure(const std::map<std::string, std::string>& env, const std::exception& e) {
  static std::atomic<bool> recorded{false};
  const auto path = env.find("TORCHELASTIC_ERROR_FILE");
  if (path == env.end() || path->second.empty() || recorded.exchange(true)) return;
  ErrorRecord r;
  r.message = failure_paragraph(e);
  const auto rank = env.find("RANK");
  r.rank = rank == env.end() ? -1 : std::atoi(rank->second.c_str());
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  r.host = host;
  r.pid = static_cast<long>(::getpid());
  r.when = own_failure_time().value_or(std::chrono::system_clock::now());
  write_error_file(path->second, r);  // best effort: the failure itself is on stderr anyway
}

}  // namespace mtrain::trainer
