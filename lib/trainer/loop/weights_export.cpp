#include "lib/trainer/loop/weights_export.hpp"

#include <ATen/core/grad_mode.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <thread>

#include <fmt/format.h>

#include "lib/core/error.hpp"

#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/init_weights.hpp"
#include "lib/trainer/checkpoint/safetensors.hpp"
#include "lib/trainer/model/torchscript.hpp"

namespace mtrain::trainer {

namespace {

// torch.jit.save's zip writer as a stream straight into the file: serialising into a string first
// held the whole file once more, twice while the string grew and while it was copied out
// (measured on a 21M-parameter TorchScript model: rank 0's peak rose 238 MiB above training's).
class DurableStreambuf : public std::streambuf {
 public:
  explicit DurableStreambuf(DurableWriter& w) : w_(w) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    w_.write(s, static_cast<size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    w_.write(&ch, 1);
    return c;
  }

 private:
  DurableWriter& w_;
};

// Hands the tensors the first file's writer produces, one at a time and in order, to the writer of
// another file on its own thread. close(): the side that calls it stops; the other is not left
// waiting (a put after the follower stopped is dropped, a take after the leader stopped throws).
class Relay {
 public:
  void put(size_t index, const at::Tensor& t) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !full_ || closed_; });
    if (closed_) return;
    index_ = index;
    tensor_ = t;
    full_ = true;
    cv_.notify_all();
  }
  at::Tensor take(size_t index, const std::string& name) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return full_ || closed_; });
    if (!full_) throw RuntimeFailure(fmt::format("export: the weights stopped before '{}'", name), "");
    if (index_ != index) {
      throw RuntimeFailure(fmt::format("internal: export wrote '{}' out of order", name), "");
    }
    full_ = false;
    at::Tensor t = std::move(tensor_);
    tensor_ = at::Tensor();
    cv_.notify_all();
    return t;
  }
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t index_ = 0;
  at::Tensor tensor_;
  bool full_ = false, closed_ = false;
};

std::vector<ArchiveEntry> entries_of(const std::vector<ParameterExport>& params,
                                     const std::function<at::Tensor(size_t)>& produce) {
  std::vector<ArchiveEntry> entries;
  for (size_t i = 0; i < params.size(); ++i) {
    entries.push_back({params[i].name, params[i].dtype, params[i].shape, [i, &produce] { return produce(i); }});
  }
  return entries;
}

void write_one(const WeightsFile& f, const std::vector<ArchiveEntry>& entries) {
  DurableWriter out(f.path);
  f.write(out, entries);
  out.commit();
}

}  // namespace

void write_streamed_weights(Strategy& strategy, Communicator& comm, const std::vector<WeightsFile>& files,
                            std::vector<std::pair<std::string, at::Tensor>>* keep) {
  const auto params = strategy.export_parameters();
  size_t produced = 0;
  auto drain = [&] {
    for (; produced < params.size(); ++produced) params[produced].data();
  };
  if (comm.rank() != 0 || files.empty()) return drain();
  std::vector<std::unique_ptr<Relay>> relays;
  for (size_t f = 1; f < files.size(); ++f) relays.push_back(std::make_unique<Relay>());
  std::vector<std::exception_ptr> errors(files.size());
  std::vector<std::thread> followers;
  for (size_t f = 1; f < files.size(); ++f) {
    followers.emplace_back([&, f] {
      Relay& r = *relays[f - 1];
      const std::function<at::Tensor(size_t)> take = [&](size_t i) { return r.take(i, params[i].name); };
      try {
        write_one(files[f], entries_of(params, take));
      } catch (...) {
        errors[f] = std::current_exception();
      }
      r.close();
    });
  }
  const std::function<at::Tensor(size_t)> gather = [&](size_t i) {
    ++produced;
    at::Tensor t = params[i].data();
    // The scripted module gets tensors of their own: a producer's tensor is either its own copy
    // (kept as it is) or a view of the live parameters' flat buffer (copied, or torch.jit.save
    // would write the whole buffer as the storage of every parameter viewing it).
    if (keep) {
      at::Tensor k = t.detach().cpu();
      if (k.storage().nbytes() != k.nbytes()) k = k.clone();
      keep->emplace_back(params[i].name, std::move(k));
    }
    for (auto& r : relays) r->put(i, t);
    return t;
  };
  try {
    write_one(files[0], entries_of(params, gather));
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& r : relays) r->close();
  for (auto& t : followers) t.join();
  drain();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void export_model(Strategy& strategy, Communicator& comm, TaskModel& model, const std::string& work_dir,
                  int64_t step, const std::string& job_settings, const HfExport* hf) {
  std::vector<std::pair<std::string, at::Tensor>> kept;
  const bool scripted = is_scripted_model(model);
  const std::map<std::string, std::string> meta = {{"format", "pt"},
                                                   {"producer", "mtrain"},
                                                   {"step", std::to_string(step)},
                                                   {"strategy", strategy.name()},
                                                   {"job", job_settings}};
  std::vector<WeightsFile> files = {
      {work_dir + "/model.pt", [](DurableWriter& out, const std::vector<ArchiveEntry>& e) { write_tensor_archive(out, e); }},
      {work_dir + "/model.safetensors",
       [&meta](DurableWriter& out, const std::vector<ArchiveEntry>& e) { write_safetensors(out, e, meta); }}};
  const std::string hf_dir = work_dir + "/hf";
  if (hf && comm.rank() == 0) {
    // A tied tensor is one TensorImpl under several names (model_layout's tied_to): written once.
    // The prefix was checked against the model's names at set-up (trainer.cpp).
    std::map<std::string, std::string> tied;
    for (const auto& p : model_layout(model)) tied[p.name] = p.tied_to;
    make_hf_folder(hf_dir);
    files.push_back({hf_dir + "/model.safetensors",
                     [&meta, hf, tied](DurableWriter& out, const std::vector<ArchiveEntry>& e) {
                       std::vector<std::string> names, tied_to;
                       for (const auto& x : e) {
                         names.push_back(x.name);
                         tied_to.push_back(tied.count(x.name) ? tied.at(x.name) : std::string());
                       }
                       write_hf_weights(out, e, hf_names(names, tied_to, hf->prefix, hf->config), meta);
                     }});
  }
  write_streamed_weights(strategy, comm, files, scripted ? &kept : nullptr);
  if (hf && comm.rank() == 0) write_hf_config(hf_dir, hf->config);
  if (scripted && comm.rank() == 0) {
    DurableWriter w(work_dir + "/model.scripted.pt");
    DurableStreambuf sb(w);
    std::ostream out(&sb);
    save_scripted_model(model, kept, out);
    kept.clear();
    w.commit();
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
