#include "lib/trainer/comm/absent_ranks.hpp"

#include <future>
#include <memory>
#include <thread>

#include <fmt/format.h>

namespace mtrain::trainer {

namespace {

std::string key(uint64_t seq, int rank) { return fmt::format("mtrain/gave_up/{}/{}", seq, rank); }

std::string rank_list(const std::vector<int>& ranks, const std::vector<int>& members) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    const int g = r < static_cast<int>(members.size()) ? members[r] : r;
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(g);
  }
  return out;
}

}  // namespace

AbsentRanks find_absent_ranks(const compat::StorePtr& store, int rank, int world, uint64_t seq,
                              std::chrono::milliseconds grace, std::function<bool()> stopping) {
  auto result = std::make_shared<std::promise<AbsentRanks>>();
  auto answer = result->get_future();
  // The thread owns copies of everything it touches: it may outlive this call.
  std::thread([store, rank, world, seq, grace, result, stopping = std::move(stopping)] {
    try {
      store->set(key(seq, rank), std::vector<uint8_t>{'1'});
      std::vector<bool> seen(static_cast<size_t>(world), false);
      seen[static_cast<size_t>(rank)] = true;
      const auto deadline = std::chrono::steady_clock::now() + grace;
      AbsentRanks a;
      a.store_answered = true;
      for (;;) {
        bool all = true;
        for (int r = 0; r < world; ++r) {
          if (!seen[static_cast<size_t>(r)]) seen[static_cast<size_t>(r)] = store->check({key(seq, r)});
          all = all && seen[static_cast<size_t>(r)];
        }
        if (all || std::chrono::steady_clock::now() >= deadline) break;
        if (stopping && stopping()) {
          a.cut_short = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      for (int r = 0; r < world; ++r)
        if (r != rank) (seen[static_cast<size_t>(r)] ? a.gave_up : a.absent).push_back(r);
      result->set_value(a);
    } catch (...) {
      result->set_value(AbsentRanks{});  // the store failed: nothing known
    }
  }).detach();
  if (answer.wait_for(grace + std::chrono::seconds(1)) != std::future_status::ready) return AbsentRanks{};
  return answer.get();
}

std::string describe_absent_ranks(const AbsentRanks& a, const std::vector<int>& members,
                                  std::chrono::milliseconds grace) {
  const double s = static_cast<double>(grace.count()) / 1000.0;
  if (!a.store_answered) {
    const int host = members.empty() ? 0 : members[0];
    return fmt::format("the store on rank {} did not answer within {:.0f} s, so which ranks never reached it is "
                       "unknown (rank {} may have stopped or exited)", host, s, host);
  }
  if (a.cut_short && !a.absent.empty()) {
    return "which ranks never reached it is unknown: this rank was told to stop (a launcher tears the job down "
           "when a rank fails) before the others could say they had reached it";
  }
  if (a.absent.empty()) {
    return a.gave_up.empty() ? std::string("it was the only rank")
                             : fmt::format("every rank reached it and gave up (ranks {}), so no rank is missing: "
                                           "the ranks may run different collectives (another job's code or "
                                           "settings on one of them)", rank_list(a.gave_up, members));
  }
  std::string out = fmt::format("{} {} never reached it (stopped, hung or busy elsewhere)",
                                a.absent.size() == 1 ? "rank" : "ranks", rank_list(a.absent, members));
  if (!a.gave_up.empty())
    out += fmt::format("; {} {} {} waiting for it too", a.gave_up.size() == 1 ? "rank" : "ranks",
                       rank_list(a.gave_up, members), a.gave_up.size() == 1 ? "was" : "were");
  return out;
}

}  // namespace mtrain::trainer
