#include "lib/trainer/loop/trainer.hpp"

#include <ATen/core/grad_mode.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/run_folder.hpp"
#include "lib/core/strings.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"
#include "lib/trainer/checkpoint/hf_weights.hpp"
#include "lib/trainer/checkpoint/init_weights.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"
#include "lib/trainer/checkpoint/state_match.hpp"
#include "lib/trainer/comm/pooled_cpu.hpp"
#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/data/sampler.hpp"
#include "lib/tracking/tracker.hpp"
#include "lib/trainer/loop/console.hpp"
#include "lib/trainer/loop/failure_record.hpp"
#include "lib/trainer/loop/finished_run.hpp"
#include "lib/trainer/loop/fsdp_unit_note.hpp"
#include "lib/trainer/loop/job_ledger.hpp"
#include "lib/trainer/loop/ledger.hpp"
#include "lib/trainer/loop/log_records.hpp"
#include "lib/trainer/loop/metrics.hpp"
#include "lib/trainer/loop/over_ranks.hpp"
#include "lib/trainer/loop/preemption.hpp"
#include "lib/trainer/loop/run_settings.hpp"
#include "lib/trainer/loop/run_summary.hpp"
#include "lib/trainer/loop/step_count.hpp"
#include "lib/trainer/loop/step_figures.hpp"
#include "lib/trainer/loop/token_mean.hpp"
#include "lib/trainer/loop/weights_export.hpp"

namespace mtrain::trainer {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

Batch to_device(Batch b, const at::Device& d) {
  if (d.is_cpu()) return b;
  return {b.input.to(d, /*non_blocking=*/true), b.target.to(d, true)};
}

class Loop {
 public:
  Loop(const TrainJob& job, Communicator& comm, const TrainerParts& parts, std::ostream& out)
      : job_(job),
        comm_(comm),
        parts_(parts),
        console_(out, comm.rank() == 0, comm.rank() == 0 && isatty(STDOUT_FILENO) == 1),
        heartbeat_(parts.heartbeat_file) {}

  TrainResult run() {
    try {
      return run_loop();
    } catch (const std::exception& e) {
      if (tracker_)
        tracker_->end(tracking::RunEnd::Failed, first_line(failure_paragraph(e)), {}, [this] { heartbeat_.beat(); });
      throw;
    }
  }

 private:
  TrainResult run_loop() {
    const std::optional<InitPlan> init = set_up();
    const int64_t start_step = start(init);
    const auto run_start = Clock::now();
    Window window;
    bool validated_last = false;
    while (step_ < total_) {
      const int64_t epoch = step_ / steps_per_epoch_;
      const StepOutcome o = train_step();
      window.add(o);
      validated_last = false;
      console_.progress(step_ % job_.log_interval == 0 ? job_.log_interval : step_ % job_.log_interval,
                        job_.log_interval);
      if (step_ % job_.log_interval == 0 || step_ == total_) {
        log_window(window, o, epoch, run_start, start_step);
        window = {};
      }
      if (validation_due()) {
        outside_training("validation", [&] { validate(); });
        validated_last = true;
      }
      if (step_ == parts_.interrupt_after) return interrupted();
      if (job_.checkpoint_interval > 0 && step_ % job_.checkpoint_interval == 0 && step_ < total_) {
        outside_training("checkpoint", [&] { save(); });
      }
      if (parts_.on_step) parts_.on_step(step_);
      if (parts_.restart.elastic() && comm_.rank() == 0) record_reached_step(job_.work_dir, step_);
      heartbeat_.beat();
      if (step_ < total_) {
        if (const int sig = agreed_stop_signal()) return preempted(sig, start_step);
      }
    }
    return conclude(start_step, validated_last);
  }

  // What one optimizer step measured.
  struct StepOutcome {
    double loss = 0;       // mean over the step's micro-batches (this rank)
    double time = 0;       // the step's wall time, seconds
    double data_time = 0;  // of which waiting for batches
    double lr = 0;
    StepResult result;
  };
  // The steps since the last train log line, summed.
  struct Window {
    double loss = 0, time = 0, data_time = 0;
    int64_t n = 0;
    void add(const StepOutcome& o) {
      loss += o.loss;
      time += o.time;
      data_time += o.data_time;
      ++n;
    }
  };

  // The strategy around the model, the sampler and the step count (steps_per_epoch_, total_);
  // returns model.init's plan, if any.
  std::optional<InitPlan> set_up() {
    // model.init is opened and checked against the model's own shapes first: a bad file fails
    // before anything is written, and before a sharded strategy replaces the parameters.
    auto init = job_.init.empty() ? std::optional<InitPlan>()
                                  : check_init_weights({job_.init, job_.init_strict}, model_layout(*parts_.model));
    // model.hf_config is read now, not after the training it would fail at the end of.
    if (!job_.hf_config.empty()) {
      hf_ = HfExport{read_hf_config(job_.hf_config), job_.hf_prefix};
      std::vector<std::string> names;
      for (const auto& p : model_layout(*parts_.model))
        if (!p.buffer) names.push_back(p.name);
      hf_names(names, {}, hf_->prefix, hf_->config);  // a prefix the names lack: refused now
    }
    fs::create_directories(job_.work_dir);
    if (auto note = single_fsdp_unit_note(job_, *parts_.model)) console_.line(*note);
    strategy_ = make_strategy(job_.strategy, job_.strat, comm_);
    expected_state_ = expected_state(*parts_.model, optimizer_state_names(job_.strat.optim));
    strategy_->setup(parts_.model);
    // From here on large CPU tensors come from the block pool (train.cpu_memory_pool). Not
    // before: what setup allocated (parameters, shards, optimiser state) lives for the whole
    // run, and placed in the pool's segments among the transient buffers of setup it would pin
    // those segments, whose free rest the pool then could neither give back nor fit a
    // whole unit into (fsdp: 164 MB held above the high-water mark, docs/architecture.md §6).
    if (job_.cpu_memory_pool) install_pooled_cpu_allocator();

    StepCount count = count_steps(job_, parts_.train->size(), comm_.rank(), comm_.world());
    sampler_ = count.sampler;
    steps_per_epoch_ = count.steps_per_epoch;
    total_ = count.total;
    return init;
  }

  // The state training starts from (a checkpoint, model.init or the seed) and rank 0's run
  // folder; returns the first step this run trains.
  int64_t start(const std::optional<InitPlan>& init) {
    print_ledger();
    heartbeat_.beat();
    at::manual_seed(job_.seed * 1000003ULL + static_cast<uint64_t>(comm_.rank()));
    const std::optional<int64_t> reached = parts_.restart.elastic() ? read_reached_step(job_.work_dir) : std::nullopt;
    if (!resume() && init) load_init(*init);
    const int64_t start_step = step_;
    if (parts_.restart.restarted()) console_.line(restart_report(parts_.restart, step_, reached, comm_.world()));
    if (comm_.rank() == 0) {  // this run's own folder: runs into one work dir never overwrite each other
      json info = {{"strategy", strategy_->name()}, {"world_size", comm_.world()},
                   {"model", config::to_string(job_.model.name)}, {"total_steps", total_}, {"start_step", start_step}};
      // A resumed run continues its training's TensorBoard/MLflow run (tracking/tracker.hpp).
      const std::string lineage = start_step > 0 ? tracking::lineage_run_name(job_.work_dir) : "";
      if (!lineage.empty()) info["tracking_run"] = lineage;
      run_dir_ = runs::start_run_folder(job_.work_dir, info, std::time(nullptr));
      metrics_ = std::make_unique<MetricsLog>(run_dir_ + "/metrics.jsonl", false);
      start_tracking(lineage.empty() ? fs::path(run_dir_).filename().string() : lineage, start_step);
    }
    comm_.reset_counters();
    return start_step;
  }

  // One optimizer step over grad_accum micro-batches; step_ advances.
  StepOutcome train_step() {
    StepOutcome o;
    const auto t0 = Clock::now();
    double loss_sum = 0;
    // Each micro-batch's mean loss is weighed: 1/grad_accum (DDP's mean of means), or by its
    // counted targets over the step's global count (token_mean.hpp), which needs every
    // micro-batch of the step read, and one sum over ranks, before the first backward.
    std::vector<Batch> held;
    std::vector<double> scales(static_cast<size_t>(job_.grad_accum), 1.0 / static_cast<double>(job_.grad_accum));
    if (job_.average_tokens_across_ranks) {
      const auto td = Clock::now();
      std::vector<int64_t> counts;
      for (int64_t a = 0; a < job_.grad_accum; ++a) {
        held.push_back(to_device(next_batch(step_, a), parts_.device));
        counts.push_back(held.back().target.ne(-100).sum().item<int64_t>());
      }
      double mine = 0;
      for (int64_t c : counts) mine += static_cast<double>(c);
      const auto global = static_cast<int64_t>(sum_over_ranks({mine}, "all_reduce(token count)")[0]);
      scales = token_mean_scales(counts, global, comm_.world());
      o.data_time += seconds_since(td);
    }
    for (int64_t a = 0; a < job_.grad_accum; ++a) {
      const auto td = Clock::now();
      Batch b = held.empty() ? to_device(next_batch(step_, a), parts_.device) : std::move(held[static_cast<size_t>(a)]);
      o.data_time += seconds_since(td);
      const double scale = scales[static_cast<size_t>(a)];
      at::Tensor loss =
          strategy_->forward_backward([&] { return parts_.model->loss(b); }, a == job_.grad_accum - 1, scale);
      // A micro-batch with no counted target has a mean of 0/0 and weight 0: it adds nothing.
      if (scale != 0.0) loss_sum += loss.item<double>() * scale;
    }
    o.lr = learning_rate(job_.sched, step_, total_);
    o.result = strategy_->step(o.lr);
    if (o.result.skipped) ++skipped_steps_;
    ++step_;
    o.time = seconds_since(t0);
    step_times_.push_back(o.time);
    o.loss = loss_sum;
    return o;
  }

  // The train line of a log interval: the loss averaged over ranks, times over the window, the
  // time left at the pace of this run's steps so far.
  void log_window(const Window& window, const StepOutcome& last, int64_t epoch, Clock::time_point run_start,
                  int64_t start_step) {
    const auto t = sum_over_ranks({window.loss, static_cast<double>(window.n)}, "all_reduce(metrics)");
    last_loss_ = t[0] / t[1];
    TrainWindow w;
    w.step = step_;
    w.epoch = epoch + 1;
    w.iter = position().iter;
    w.lr = last.lr;
    w.eta_s = seconds_since(run_start) / static_cast<double>(step_ - start_step) * static_cast<double>(total_ - step_);
    w.time = window.time / window.n;
    w.data_time = window.data_time / window.n;
    w.memory_mb = peak_memory() / (1024 * 1024);
    w.loss = last_loss_;
    w.grad_norm = last.result.grad_norm;
    w.fp16 = job_.precision() == config::Precision::Fp16;
    w.loss_scale = last.result.loss_scale;
    w.skipped_steps = skipped_steps_;
    const LogRecord rec = train_log(w);
    console_.line(format_line(position_prefix("train", position()), rec.fields));
    if (metrics_) metrics_->write(rec.record);
    if (tracker_) tracker_->log(rec.record, throughput(w.time));
  }

  // TensorBoard and MLflow beside metrics.jsonl (log.*), on rank 0.
  void start_tracking(const std::string& name, int64_t start_step) {
    if (!job_.tracking.any()) return;
    tracker_ = std::make_unique<tracking::Tracker>(
        job_.tracking, tracking::TrackedRun{name, start_step, job_.settings, parts_.error_file},
        [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
  }

  // Samples (and tokens, for a language model) per second over all ranks, at a mean step time.
  std::vector<tracking::Scalar> throughput(double step_time) const {
    if (step_time <= 0) return {};
    const double samples = static_cast<double>(job_.batch_size * job_.grad_accum * comm_.world()) / step_time;
    std::vector<tracking::Scalar> out = {{"train/samples_per_s", samples}};
    if (parts_.model->is_language_model()) {
      out.push_back({"train/tokens_per_s", samples * static_cast<double>(parts_.model->tokens_per_sample())});
    }
    return out;
  }

  // val_interval counts epochs when training by epochs (at an epoch's end), else steps.
  bool validation_due() const {
    if (!parts_.val || job_.val_interval <= 0) return false;
    if (job_.max_epochs > 0)
      return step_ % steps_per_epoch_ == 0 && (step_ / steps_per_epoch_) % job_.val_interval == 0;
    return step_ % job_.val_interval == 0;
  }

  // Testing (TrainerParts::interrupt_after): stop as a killed process would, leaving nothing.
  TrainResult interrupted() const {
    TrainResult r;
    r.steps = step_;
    r.final_loss = last_loss_;
    return r;
  }

  // The end of a full run: a last validation (unless the last step had one), a checkpoint of
  // what this run trained, the exported model and summary.json.
  TrainResult conclude(int64_t start_step, bool validated_last) {
    if (parts_.val && !validated_last) outside_training("validation", [&] { validate(); });
    if (step_ > start_step) outside_training("checkpoint", [&] { save(); });
    outside_training("export", [&] {
      average_buffers();
      // model.pt, model.safetensors (and model.scripted.pt): streamed, no rank holds the model.
      export_model(*strategy_, comm_, *parts_.model, job_.work_dir, step_, job_.settings.dump(),
                   hf_ ? &*hf_ : nullptr);
    });
    return finish(comm_.counters(), start_step, 0);
  }

  Position position() const {
    Position p;
    p.by_epochs = job_.max_epochs > 0;
    if (p.by_epochs) {
      p.epoch = (step_ - 1) / steps_per_epoch_ + 1;
      p.iter = (step_ - 1) % steps_per_epoch_ + 1;
      p.total = steps_per_epoch_;
    } else {
      p.iter = step_;
      p.total = total_;
    }
    return p;
  }

  // Dataset indices of micro-batch a of step s (a pure function of the step; see trainer.hpp).
  std::vector<int64_t> micro_indices(int64_t s, int64_t a) {
    const int64_t epoch = s / steps_per_epoch_, in_epoch = s % steps_per_epoch_;
    auto it = epochs_.find(epoch);
    if (it == epochs_.end()) {
      if (epochs_.size() > 1) epochs_.erase(epochs_.begin());  // keep this and the next epoch
      it = epochs_.emplace(epoch, rank_indices(sampler_, epoch)).first;
    }
    const int64_t first = (in_epoch * job_.grad_accum + a) * job_.batch_size;
    return {it->second.begin() + first, it->second.begin() + first + job_.batch_size};
  }

  // The batch of (s, a), read ahead on a helper thread while the current micro-batch trains
  // (datasets are immutable, so reading concurrently is safe); data_time is what is left to wait.
  Batch next_batch(int64_t s, int64_t a) {
    const int64_t key = s * job_.grad_accum + a;
    Batch b;
    if (prefetch_.valid() && prefetch_key_ == key) {
      b = prefetch_.get();
    } else {
      if (prefetch_.valid()) prefetch_.wait();
      b = parts_.train->batch(micro_indices(s, a));
    }
    const int64_t next = key + 1;
    if (next < total_ * job_.grad_accum && next != parts_.interrupt_after * job_.grad_accum) {
      prefetch_key_ = next;
      auto idx = micro_indices(next / job_.grad_accum, next % job_.grad_accum);
      const Dataset* ds = parts_.train.get();
      prefetch_ = std::async(std::launch::async, [ds, idx = std::move(idx)] { return ds->batch(idx); });
    }
    return b;
  }

  // Figures summed over ranks (over_ranks.hpp), on the communicator's device.
  std::vector<double> sum_over_ranks(const std::vector<double>& v, const std::string& counter) {
    return trainer::sum_over_ranks(comm_, parts_.device, v, counter);
  }

  // Every rank's pending stop signal, agreed: all ranks return the same (0 = keep training).
  int agreed_stop_signal() {
    const int mine = pending_stop_signal();
    const int order[] = {SIGUSR1, SIGTERM, SIGINT};
    const auto n = sum_over_ranks({mine == SIGUSR1 ? 1.0 : 0.0, mine == SIGTERM ? 1.0 : 0.0,
                                   mine == SIGINT ? 1.0 : 0.0},
                                  "all_reduce(control)");
    for (int i = 0; i < 3; ++i) {
      if (n[static_cast<size_t>(i)] > 0) return order[i];
    }
    return 0;
  }

  TrainResult preempted(int sig, int64_t start_step) {
    if (last_saved_ != step_) outside_training("checkpoint", [&] { save(); });
    TrainResult r = finish(comm_.counters(), start_step, sig);
    console_.line(fmt::format("preempted by {} at step {}: checkpoint saved to {}; rerun with "
                              "--resume auto",
                              signal_name(sig), step_, last_checkpoint_));
    return r;
  }

  // The model's buffers on this rank (replicated by every strategy; not model state in section 6).
  int64_t buffer_bytes() const {
    int64_t n = 0;
    for (const auto& b : parts_.model->buffers()) n += b.numel() * static_cast<int64_t>(b.element_size());
    return n;
  }

  // Rank 0 prints measured model-state bytes (fullest rank) beside docs/architecture.md §6.
  void print_ledger() {
    // Only the resident figures: the peaks are the run's, reported at its end.
    const MemoryLedger all = fullest_over_ranks(comm_, parts_.device, strategy_->memory(), 0).first;
    const MemoryLedger fullest{all.params, all.grads, all.optimizer, all.gathered};
    ledger_expected_ = job_ledger_formula(job_, strategy_->name(), strategy_->num_parameters(), comm_.world());
    std::string table = format_ledger_table(
        job_ledger_report(job_, strategy_->num_parameters(), comm_.world(), fullest, buffer_bytes(),
                          parts_.device.is_cpu()),
        ledger_expected_);
    if (!table.empty() && table.back() == '\n') table.pop_back();
    console_.line(table);
  }

  // MMEngine's "memory": the CUDA allocator's peak on GPU, the process's peak RSS on CPU.
  int64_t peak_memory() const {
    return parts_.device.is_cpu() ? peak_rss_bytes() : compat::device_peak_bytes(parts_.device);
  }

  // Runs a phase that is not a training step (validation, checkpoint, model export) and books
  // its collectives apart, so that comm_per_step means per training step: a validation pass
  // of ZeRO-3/FSDP gathers every unit, and would otherwise be averaged into the steps.
  template <class F>
  void outside_training(const std::string& phase, F&& f) {
    const CommCounters before = comm_.counters();
    f();
    counters_add(phase_comm_[phase], counters_minus(comm_.counters(), before));
  }

  // Buffers (BatchNorm running statistics) are broadcast from rank 0 at setup, then each rank
  // updates them from its own batches, as torch DDP with broadcast_buffers=False does. Before
  // validation and before the final outputs every rank's floating-point buffers are replaced by
  // their average over ranks (for running means/variances: the statistics of all ranks'
  // batches), so evaluation and model.pt / model.scripted.pt see the same buffers on every rank.
  void average_buffers() { trainer::average_buffers(*parts_.model, comm_); }

  void validate() {
    average_buffers();
    const auto t0 = Clock::now();
    SamplerOptions vo = sampler_;
    vo.dataset_size = parts_.val->size();
    vo.shuffle = false;
    vo.drop_last = samples_per_rank(vo) > 0;
    const auto idx = rank_indices(vo, 0);
    int64_t batches = (static_cast<int64_t>(idx.size()) + job_.batch_size - 1) / job_.batch_size;
    if (job_.val_steps > 0) batches = std::min(batches, job_.val_steps);
    EvalStats s;
    for (int64_t i = 0; i < batches; ++i) {
      const int64_t b = i * job_.batch_size;
      const int64_t e = std::min<int64_t>(b + job_.batch_size, idx.size());
      std::vector<int64_t> part(idx.begin() + b, idx.begin() + e);
      const EvalStats one = parts_.model->evaluate(to_device(parts_.val->batch(part), parts_.device));
      s.loss_sum += one.loss_sum;
      s.count += one.count;
      s.correct += one.correct;
      heartbeat_.beat();  // a long validation is progress too (the launcher's default watch)
    }
    const auto t = sum_over_ranks({s.loss_sum, static_cast<double>(s.count),
                                   static_cast<double>(s.correct)}, "all_reduce(metrics)");
    const LogRecord rec = val_log(step_, t[0], t[1], t[2], parts_.model->is_language_model(), seconds_since(t0));
    last_val_ = rec.record;
    console_.line(format_line(position_prefix("val", position()), rec.fields));
    if (metrics_) metrics_->write(rec.record);
    if (tracker_) tracker_->log(rec.record);
  }

  void save() {
    SaveRequest r;
    r.root = job_.work_dir + "/checkpoints";
    r.step = step_;
    r.strategy = strategy_->name();
    r.state = trainer_state(job_, {step_, total_, steps_per_epoch_, last_loss_});
    r.pieces = strategy_->state_pieces();
    r.extra = {{"rng/cpu", at::detail::getDefaultCPUGenerator().get_state()}};
    r.keep = static_cast<int>(job_.checkpoint_keep);
    r.run_token = parts_.run_token;
    r.progress = [this] { heartbeat_.beat(); };
    const std::string dir = save_checkpoint(comm_, r);
    last_saved_ = step_;
    last_checkpoint_ = dir;
    console_.line(fmt::format("Saving checkpoint at {} iterations: {}", step_, dir));
  }

  // True when a checkpoint was loaded.
  bool resume() {
    const auto choice = choose_resume(comm_, job_.resume, job_.work_dir + "/checkpoints",
                                      [this] { heartbeat_.beat(); });
    for (const auto& w : choice.warnings) console_.line(w);
    if (!choice.dir) {
      if (job_.resume.kind == config::Resume::Kind::Auto) {
        console_.line(job_.init.empty() ? "No checkpoint to resume from; training from scratch"
                                        : "No checkpoint to resume from; starting from model.init");
      }
      return false;
    }
    const std::string& dir = *choice.dir;
    CheckpointReader reader(dir);
    require_matching_state(reader.manifest(), dir, expected_state_, config::to_string(job_.strat.optim.name),
                           optimizer_state_names(job_.strat.optim));
    strategy_->load_state(reader);
    step_ = reader.manifest().step;
    last_saved_ = step_;
    last_loss_ = reader.manifest().state.value("last_loss", 0.0);
    if (auto rng = reader.extra(comm_.rank(), "rng/cpu")) {
      at::Generator gen = at::detail::getDefaultCPUGenerator();  // a handle to the global one
      gen.set_state(*rng);
    }
    console_.line(fmt::format("Resumed from {} at step {} (written by world size {})", dir, step_,
                              reader.manifest().world_size));
    if (const auto changed = changed_settings(reader.manifest().state, job_.settings); !changed.empty())
      console_.line(fmt::format("note: {} was saved by a run with other settings: {}; training goes on with this "
                                "run's (a fresh run: --overwrite or a new --work-dir)",
                                dir, str::join(changed, ", ")));
    if (auto note = finished_run_note(step_, total_, job_.max_epochs, dir, job_.resume)) console_.line(*note);
    if (!job_.init.empty()) {
      console_.line(fmt::format("model.init {} not loaded: the resumed checkpoint takes precedence", job_.init));
    }
    return true;
  }

  // Pretrained weights before step 0; every rank reads its own part of the file.
  void load_init(const InitPlan& plan) {
    load_init_weights(plan, *strategy_, *parts_.model);
    const InitReport& r = plan.report;
    for (const auto& n : r.notices) console_.line(n);
    console_.line(fmt::format("Initialised {} of {} tensors from {} ({})", r.loaded, r.model_tensors,
                              job_.init, r.format));
  }

  TrainResult finish(const CommCounters& all, int64_t start_step, int stopped_by) {
    RunFigures f;
    f.comm = comm_per_step(all, phase_comm_, static_cast<double>(std::max<int64_t>(1, step_ - start_step)));
    // The fullest rank's ledger and peak memory.
    std::tie(f.fullest, f.peak_memory_bytes) =
        fullest_over_ranks(comm_, parts_.device, strategy_->memory(), peak_memory());
    f.strategy = strategy_->name();
    f.model = config::to_string(job_.model.name);
    f.precision = config::to_string(job_.precision());
    f.world_size = comm_.world();
    f.num_params = strategy_->num_parameters();
    f.steps = step_;
    f.global_batch = static_cast<double>(job_.batch_size * job_.grad_accum * comm_.world());
    f.final_loss = last_loss_;
    f.skipped_steps = skipped_steps_;
    f.buffer_bytes = buffer_bytes();
    f.formula = ledger_expected_;
    f.ledger_world = job_ledger_world(job_, comm_.world());
    f.step_time = step_time_stats(step_times_, job_.timing_warmup_steps);
    f.language_model = parts_.model->is_language_model();
    if (f.language_model) f.tokens_per_sample = parts_.model->tokens_per_sample();
    f.final_val = last_val_;
    if (stopped_by != 0) f.stopped_by = signal_name(stopped_by);
    const json s = run_summary(f);
    if (comm_.rank() == 0) write_file_atomic(run_dir_ + "/summary.json", s.dump(2) + "\n");
    if (tracker_) {
      std::vector<std::pair<std::string, std::string>> files = {{"summary.json", run_dir_ + "/summary.json"}};
      if (stopped_by == 0) files.emplace_back("model.safetensors", job_.work_dir + "/model.safetensors");
      // MLflow's backlog may take its 30 s to drain: a heartbeat keeps the launcher's stall watch off.
      tracker_->end(stopped_by == 0 ? tracking::RunEnd::Finished : tracking::RunEnd::Killed, "", files,
                    [this] { heartbeat_.beat(); });
    }
    TrainResult r;
    r.steps = step_;
    r.final_loss = last_loss_;
    r.stopped_by = stopped_by;
    r.checkpoint = last_checkpoint_;
    r.summary = s;
    return r;
  }

  const TrainJob& job_;
  Communicator& comm_;
  const TrainerParts& parts_;
  Console console_;
  Heartbeat heartbeat_;
  ModelStateBytes ledger_expected_;
  int64_t last_saved_ = -1;
  std::string last_checkpoint_;
  std::unique_ptr<Strategy> strategy_;
  std::vector<ExpectedTensor> expected_state_;  // what resume must find in a checkpoint
  std::optional<HfExport> hf_;  // model.hf_config, read at set-up
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<tracking::Tracker> tracker_;  // rank 0, when log.* asks for TensorBoard or MLflow
  std::string run_dir_;  // rank 0: work_dir/<YYYYmmdd_HHMMSS>/ (lib/core/run_folder.hpp)
  SamplerOptions sampler_;
  std::map<int64_t, std::vector<int64_t>> epochs_;
  std::future<Batch> prefetch_;
  int64_t prefetch_key_ = -1;
  int64_t steps_per_epoch_ = 1;
  int64_t total_ = 0;
  int64_t step_ = 0;
  double last_loss_ = 0;
  json last_val_;
  std::vector<double> step_times_;
  int64_t skipped_steps_ = 0;
  std::map<std::string, CommCounters> phase_comm_;  // validation | checkpoint | export
};

}  // namespace

TrainResult train(const TrainJob& job, Communicator& comm, const TrainerParts& parts,
                  std::ostream& console) {
  return Loop(job, comm, parts, console).run();
}

}  // namespace mtrain::trainer
