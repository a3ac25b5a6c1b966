#include "mtrain/trainer/loop/weights_export.hpp"

#include <ATen/core/grad_mode.h>

#include <map>
#include <sstream>

#include "mtrain/trainer/checkpoint/safetensors.hpp"
#include "mtrain/trainer/model/torchscript.hpp"

namespace mtrain::trainer {

void write_streamed_weights(Strategy& strategy, Communicator& comm, const std::string& path,
                            const WeightsWriter& write,
                            std::vector<std::pair<std::string, at::Tensor>>* keep) {
  const auto params = strategy.export_parameters();
  size_t produced = 0;
  auto drain = [&] {
    for (; produced < params.size(); ++produced) params[produced].data();
  };
  if (comm.rank() != 0) return drain();
  std::vector<ArchiveEntry> entries;
  for (const auto& p : params) {
    entries.push_back({p.name, p.dtype, p.shape, [&produced, &p, keep] {
                         ++produced;
                         at::Tensor t = p.data();
                         if (keep) keep->emplace_back(p.name, t.detach().cpu().clone());
                         return t;
                       }});
  }
  try {
    DurableWriter out(path);
    write(out, entries);
    out.commit();
  } catch (...) {
    drain();
    throw;
  }
  drain();
}

void export_model(Strategy& strategy, Communicator& comm, TaskModel& model, const std::string& work_dir,
                  int64_t step, const std::string& job_settings) {
  std::vector<std::pair<std::string, at::Tensor>> kept;
  const bool scripted = is_scripted_model(model);
  write_streamed_weights(
      strategy, comm, work_dir + "/model.pt",
      [](DurableWriter& out, const std::vector<ArchiveEntry>& e) { write_tensor_archive(out, e); },
      scripted ? &kept : nullptr);
  const std::map<std::string, std::string> meta = {{"format", "pt"},
                                                   {"producer", "mtrain"},
                                                   {"step", std::to_string(step)},
                                                   {"strategy", strategy.name()},
                                                   {"job", job_settings}};
  write_streamed_weights(strategy, comm, work_dir + "/model.safetensors",
                         [&meta](DurableWriter& out, const std::vector<ArchiveEntry>& e) {
                           write_safetensors(out, e, meta);
                         });
  if (scripted && comm.rank() == 0) {
    std::ostringstream buf;
    save_scripted_model(model, kept, buf);
    kept.clear();
    write_file_durably(work_dir + "/model.scripted.pt", buf.str());
  }
}

void average_buffers(torch::nn::Module& model, Communicator& comm) {
  if (comm.world() < 2) return;
  at::NoGradGuard no_grad;
  for (auto& b : model.buffers()) {
    if (!at::isFloatingType(b.scalar_type()) || b.numel() == 0) continue;
    at::Tensor t = b.detach().to(at::kFloat).flatten().clone();
    comm.all_reduce(t, "all_reduce(control)").wait();
    b.copy_(t.div_(static_cast<double>(comm.world())).view_as(b));
  }
}

}  // namespace mtrain::trainer
