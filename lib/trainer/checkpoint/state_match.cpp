#include "lib/trainer/checkpoint/state_match.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

namespace {

constexpr size_t kMaxRows = 20;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// "optim/<state>/<param>" → "<state>"; "" for anything else (optim/step, precision/…).
std::string optim_state_of(const std::string& name) {
  if (!starts_with(name, "optim/")) return "";
  const auto slash = name.find('/', 6);
  return slash == std::string::npos ? "" : name.substr(6, slash - 6);
}

bool compared(const std::string& name) { return starts_with(name, "model/") || !optim_state_of(name).empty(); }

std::string shape_text(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::string list_or_none(const std::set<std::string>& s) {
  return s.empty() ? "none" : fmt::format("{}", fmt::join(s, ", "));
}

struct Row {
  std::string name, in_checkpoint, in_job;
};

}  // namespace

std::vector<ExpectedTensor> expected_state(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& params,
    const std::vector<std::string>& optimizer_states) {
  std::vector<ExpectedTensor> out;
  for (const auto& [name, shape] : params) out.push_back({"model/" + name, shape});
  for (const auto& st : optimizer_states)
    for (const auto& [name, shape] : params) out.push_back({"optim/" + st + "/" + name, shape});
  return out;
}

std::vector<ExpectedTensor> expected_state(const torch::nn::Module& model,
                                           const std::vector<std::string>& optimizer_states) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  std::set<const void*> seen;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const auto& p = item.value();
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    params.emplace_back(item.key(), p.sizes().vec());
  }
  return expected_state(params, optimizer_states);
}

void require_matching_state(const Manifest& m, const std::string& dir,
                            const std::vector<ExpectedTensor>& expected, const std::string& optimizer,
                            const std::vector<std::string>& optimizer_states) {
  // The optimiser: its recorded name (checkpoints since issue 17), else its state tensors.
  std::set<std::string> ckpt_states, job_states(optimizer_states.begin(), optimizer_states.end());
  for (const auto& [name, meta] : m.tensors)
    if (auto s = optim_state_of(name); !s.empty()) ckpt_states.insert(s);
  std::string recorded;
  if (m.state.is_object() && m.state.contains("optimizer") && m.state["optimizer"].is_string())
    recorded = m.state["optimizer"].get<std::string>();
  std::string optim_note;
  if (!recorded.empty() && recorded != optimizer) {
    optim_note = fmt::format("the checkpoint was trained with optimizer '{}' (state: {}), this job "
                             "uses '{}' (state: {})",
                             recorded, list_or_none(ckpt_states), optimizer, list_or_none(job_states));
  } else if (ckpt_states != job_states) {
    optim_note = fmt::format("the checkpoint holds optimizer state {}, this job's optimizer '{}' "
                             "keeps {}",
                             list_or_none(ckpt_states), optimizer, list_or_none(job_states));
  }
  // The tensors (only the model's when the optimiser differs: that line says it all).
  auto listed = [&](const std::string& name) { return compared(name) && (optim_note.empty() || starts_with(name, "model/")); };
  std::map<std::string, const std::vector<int64_t>*> want;
  for (const auto& e : expected) want[e.name] = &e.shape;
  std::vector<Row> rows;
  size_t only_ckpt = 0, only_job = 0, reshaped = 0;
  for (const auto& name : m.order) {
    if (!listed(name)) continue;
    const auto& shape = m.tensors.at(name).shape;
    auto it = want.find(name);
    if (it == want.end()) {
      rows.push_back({name, shape_text(shape), "absent"});
      ++only_ckpt;
    } else if (*it->second != shape) {
      rows.push_back({name, shape_text(shape), shape_text(*it->second)});
      ++reshaped;
    }
  }
  for (const auto& e : expected) {
    if (listed(e.name) && !m.tensors.count(e.name)) {
      rows.push_back({e.name, "absent", shape_text(e.shape)});
      ++only_job;
    }
  }
  if (rows.empty() && optim_note.empty()) return;

  std::vector<std::string> parts;
  if (!optim_note.empty()) parts.push_back(optim_note);
  if (!rows.empty()) {
    parts.push_back(fmt::format("the model differs: {} tensor(s) only in the checkpoint, {} only in "
                                "this job, {} of another shape",
                                only_ckpt, only_job, reshaped));
  }
  std::string msg = fmt::format("{}: the checkpoint does not match this job: {}", dir, fmt::join(parts, "; "));
  if (!rows.empty()) {
    size_t w = 6;
    for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i) w = std::max(w, rows[i].name.size());
    msg += fmt::format("\n  {:<{}}  {:<20}  {}", "tensor", w, "checkpoint", "this job");
    for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i)
      msg += fmt::format("\n  {:<{}}  {:<20}  {}", rows[i].name, w, rows[i].in_checkpoint, rows[i].in_job);
    if (rows.size() > kMaxRows) msg += fmt::format("\n  … and {} more", rows.size() - kMaxRows);
    msg += "\n";
  }
  throw UsageError(msg,
                   "Resume with the model.* and optim.* settings the checkpoint was written with "
                   "(`mtrain checkpoint inspect DIR` lists its tensors), or start afresh in another "
                   "train.work_dir.");
}

}  // namespace mtrain::trainer
