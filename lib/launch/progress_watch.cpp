#include "lib/launch/progress_watch.hpp"

#include <sys/stat.h>

#include <algorithm>

#include <fmt/format.h>

namespace mtrain::launch {

std::string Stall::describe() const {
  return fmt::format("rank {} (pid {}) on {} made no progress for {} (no output and its heartbeat file "
                     "MTRAIN_HEARTBEAT_FILE was not touched)",
                     rank, pid, host, rendezvous::format_duration(silent));
}

ProgressWatch::ProgressWatch(rendezvous::Duration timeout, const rendezvous::Clock& clock, AdaptiveWatch adaptive)
    : timeout_(timeout), clock_(clock), adaptive_(adaptive) {}

ProgressWatch::Entry* ProgressWatch::find(int rank) {
  for (auto& e : ranks_)
    if (e.rank == rank) return &e;
  return nullptr;
}

void ProgressWatch::add(int rank, pid_t pid, std::string host) {
  Entry e;
  e.rank = rank;
  e.pid = pid;
  e.host = std::move(host);
  e.last = clock_.now();
  if (Entry* old = find(rank)) *old = std::move(e);
  else ranks_.push_back(std::move(e));
}

void ProgressWatch::output(int rank) {
  if (Entry* e = find(rank)) e->last = clock_.now();
}

void ProgressWatch::heartbeat(int rank, int64_t stamp) {
  Entry* e = find(rank);
  if (!e || stamp < 0 || stamp == e->stamp) return;
  // The first stamp seen is the file the launcher created at spawn; only later changes count,
  // and each change counts once, when it is first observed.
  bool first = e->stamp < 0;
  e->stamp = stamp;
  if (first) return;
  auto now = clock_.now();
  e->last = now;
  if (++e->beats >= 3) e->longest_gap = std::max(e->longest_gap, std::chrono::duration_cast<rendezvous::Duration>(now - e->last_beat));
  e->last_beat = now;
}

rendezvous::Duration ProgressWatch::limit(const Entry& e) const {
  if (!adaptive_.on) return timeout_;
  return std::max(timeout_, e.longest_gap * adaptive_.factor);
}

void ProgressWatch::finished(int rank) {
  if (Entry* e = find(rank)) e->done = true;
}

std::optional<Stall> ProgressWatch::check() const {
  auto now = clock_.now();
  const Entry* worst = nullptr;
  for (const auto& e : ranks_) {
    if (e.done || (adaptive_.on && e.beats < 3) || now - e.last < limit(e)) continue;
    if (!worst || e.last < worst->last) worst = &e;
  }
  if (!worst) return std::nullopt;
  Stall s;
  s.rank = worst->rank;
  s.pid = worst->pid;
  s.host = worst->host;
  s.silent = std::chrono::duration_cast<rendezvous::Duration>(now - worst->last);
  return s;
}

int64_t file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

}  // namespace mtrain::launch
