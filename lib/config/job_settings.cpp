// Every job setting the bundled trainer understands. The worker's TrainJob struct mirrors this
// table (tests/unit/trainer/loop/test_train_job.cpp checks that every key reaches it and that the
// defaults agree).
#include "lib/config/names.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/setting_builders.hpp"
#include "lib/config/train_choices.hpp"

namespace mtrain::config {

namespace {

using namespace detail;

void add_model_settings(Registry& r) {
  r.add(choice("model.name", to_string(ModelName::Gpt), choice_names<ModelName>(),
               "Model architecture; torchscript trains your own module from model.path, compiled your "
               "own module exported and compiled ahead of time (mtrain export) from the "
               "package folder model.path.",
               "model"));
  r.add(text("model.path", "",
             "torchscript: the file written by torch.jit.save(torch.jit.script(module), PATH); "
             "its weights are the initial weights. compiled: the package folder mtrain export "
             "wrote (manifest.json, model.safetensors, programs/).",
             "model-path"));
  r.add(text("model.eval_path", "",
             "torchscript: the eval-mode trace of the module in model.path, for a model traced with "
             "dropout (p > 0) or BatchNorm: model.path is torch.jit.trace(model.train(), example), this "
             "torch.jit.trace(model.eval(), example) of the same model object. Training runs model.path, "
             "validation this file, on the same weights (one set in checkpoints)."));
  r.add(boolean("model.trust_code", false,
                "torchscript: run a model whose code reaches outside the model (file operators, "
                "custom operator libraries, a __setstate__ that does more than restore tensors); "
                "such files are refused unless you trust their author. compiled: required, since "
                "a package's programs are native code that runs when loaded."));
  r.add(choice("model.loss", to_string(LossName::Auto), choice_names<LossName>(),
               "torchscript: the loss. auto: the module's own exported loss(input, target) "
               "method; cross_entropy: logits [B, C] vs classes [B]; lm_cross_entropy: logits "
               "[B, T, V] vs tokens [B, T]; mse: output vs target.",
               "model-loss"));
  r.add(integer("model.n_layer", 4, 1, 1024, "gpt: transformer blocks."));
  r.add(integer("model.n_head", 4, 1, 1024, "gpt: attention heads per block."));
  r.add(integer("model.n_embd", 128, 1, 65536, "gpt: model width (divisible by n_head)."));
  r.add(integer("model.block_size", 64, 1, 1 << 20,
                "gpt (and torchscript language models): context length in tokens."));
  r.add(integer("model.vocab_size", 256, 2, 1 << 22, "gpt: vocabulary (256 for byte-level text)."));
  r.add(number("model.dropout", 0.0, 0, 1, "gpt: dropout probability."));
  r.add(integer("model.hidden", 256, 1, 1 << 20, "mlp: hidden width."));
  r.add(integer("model.depth", 3, 1, 1024, "mlp: number of linear layers."));
  r.add(integer("model.input_dim", 32, 1, 1 << 20, "mlp: input features."));
  r.add(integer("model.num_classes", 10, 2, 1 << 20, "mlp and resnet: output classes."));
  r.add(text("model.init", "",
             "Pretrained weights to start from: a .safetensors file, a state dict written by "
             "torch.save(model.state_dict(), path), mtrain's model.pt or a checkpoint folder. "
             "Loaded after setup under every strategy; a resumed checkpoint takes precedence.",
             "init"));
  r.add(boolean("model.init_strict", true,
                "model.init must name exactly the model's tensors with their shapes; false loads "
                "the ones that match and keeps the initial values of the rest (a new head)."));
  r.add(text("model.hf_config", "",
             "A Hugging Face model's config.json: at the end of training <work_dir>/hf/ gets "
             "model.safetensors under the model's own names (the wrapper's prefix stripped, a tied "
             "duplicate left out) and this config.json, the folder from_pretrained reads."));
  r.add(text("model.hf_prefix", "auto",
             "With model.hf_config: the wrapper's prefix to strip from every tensor name (e.g. "
             "model); auto: the first name component when every name has the same one; empty: none."));
}

void add_data_settings(Registry& r) {
  r.add(choice("data.name", to_string(DataName::Auto), choice_names<DataName>(),
               "Dataset: auto picks text for gpt (the embedded corpus unless data.path is set) "
               "and synthetic otherwise; tokens reads a pre-tokenized file (data.path); tensors "
               "reads torch.save({'input': X, 'target': Y}) from data.path (sample i = row i).",
               "data"));
  r.add(text("data.path", "", "text: any file (byte-level tokens); cifar10: the folder of "
                              "data_batch_*.bin / test_batch.bin; tokens: a nanoGPT .bin (raw "
                              "uint16) or llm.c .bin (1024-byte header, uint16/uint32), "
                              "memory-mapped; tensors: the torch.save file.",
             "data-path"));
  r.add(text("data.val_path", "",
             "tokens/tensors: a separate validation file in data.path's format; empty: the tail "
             "data.val_fraction of data.path.",
             "data-val-path"));
  r.add(integer("data.num_samples", 4096, 1, 1LL << 40, "synthetic: samples per epoch."));
  r.add(number("data.val_fraction", 0.1, 0, 0.9,
               "text/synthetic/tokens/tensors: share held out for validation (without data.val_path)."));
  r.add(boolean("data.shuffle", true, "Shuffle by seed and epoch."));
  r.add(boolean("data.drop_last", true,
                "Drop the tail that does not divide evenly over ranks (else pad by repeating)."));
}

void add_loop_settings(Registry& r) {
  r.add(integer("train.max_steps", 200, 0, 1LL << 40,
                "Optimiser steps to train (used when train.max_epochs is 0).", "max-steps"));
  r.add(integer("train.max_epochs", 0, 0, 1 << 20, "Epochs to train; 0 trains by steps.",
                "max-epochs"));
  r.add(integer("train.batch_size", 16, 1, 1 << 20, "Micro-batch size per rank.", "batch-size"));
  r.add(integer("train.grad_accum", 1, 1, 1 << 16,
                "Micro-batches accumulated per optimiser step (no communication until the last).",
                "grad-accum"));
  r.add(integer("train.global_batch_size", 0, 0, 1LL << 40,
                "Samples per optimiser step over all ranks; 0: batch_size x grad_accum x world "
                "size. When set, it must equal that product (checked before launch); a job that "
                "re-forms at another world size keeps it by recomputing grad_accum.",
                "global-batch-size"));
  r.add(boolean("train.average_tokens_across_ranks", false,
                "The loss of a step with targets of -100 (ignored: a masked LM's unmasked tokens, "
                "padding): false averages each rank's mean over its counted targets, as DDP does; "
                "true takes the mean over every counted target of the step's global batch (all ranks "
                "and micro-batches), as Hugging Face's Trainer does by default. cross_entropy and "
                "lm_cross_entropy losses only."));
  r.add(choice("train.precision", to_string(Precision::Fp32), choice_names<Precision>(),
               "Compute precision: fp32, or mixed precision with fp32 master weights (bf16; fp16 "
               "with loss scaling, see precision.*).",
               "precision"));
  r.add(integer("train.seed", 0, 0, 1LL << 40, "Seed for weights, data order and dropout.", "seed"));
  r.add(text("train.work_dir", "work_dirs/default",
             "Folder for metrics.jsonl, summary.json, checkpoints and model.pt.", "work-dir"));
  r.add(integer("train.log_interval", 10, 1, 1 << 30, "Steps between console/metrics lines."));
  r.add(integer("train.timing_warmup_steps", 1, 0, 1 << 30,
                "First steps left out of summary.json's step-time figures (allocator and cache "
                "warm-up); all steps count when the run has no more than this."));
  r.add(integer("train.val_interval", 0, 0, 1 << 30,
                "Steps (or epochs when training by epochs) between validations; 0: at the end only."));
  r.add(integer("train.val_steps", 10, 0, 1 << 30, "Batches per validation (0: the whole split)."));
  r.add(integer("train.threads", 0, 0, 4096,
                "Intra-op threads per rank; 0 follows OMP_NUM_THREADS."));
  r.add(boolean("train.cpu_memory_pool", true,
                "Reuse freed CPU memory for tensors of 1 MiB and more (blocks split and merged to fit any "
                "size), holding no more than the most memory in use at once where free segments can be "
                "given back; false: every such tensor is mapped, faulted in and zeroed afresh by the "
                "system allocator, every step."));
}

void add_optimiser_settings(Registry& r) {
  r.add(choice("optim.name", to_string(OptimizerName::Adamw), choice_names<OptimizerName>(), "Optimiser.", "optim"));
  r.add(number("optim.lr", 1e-3, 0, 1e3, "Peak learning rate.", "lr"));
  r.add(number("optim.weight_decay", 0.0, 0, 1e3, "Decoupled (AdamW) or L2 (SGD) weight decay."));
  r.add(number("optim.beta1", 0.9, 0, 1, "AdamW beta1."));
  r.add(number("optim.beta2", 0.999, 0, 1, "AdamW beta2."));
  r.add(number("optim.eps", 1e-8, 0, 1, "AdamW epsilon."));
  r.add(number("optim.momentum", 0.0, 0, 1, "SGD momentum."));
  r.add(boolean("optim.nesterov", false, "SGD Nesterov momentum."));
  r.add(number("optim.grad_clip", 0.0, 0, 1e9, "Clip gradients to this global norm; 0: off.",
               "grad-clip"));

  // Learning-rate schedule.
  r.add(choice("sched.name", to_string(ScheduleName::Cosine), choice_names<ScheduleName>(),
               "Schedule after warmup: constant, cosine to sched.min_lr, step (x gamma every "
               "step_size), or LinearLR (start_factor → end_factor over total_iters).",
               "sched"));
  r.add(integer("sched.warmup_steps", 0, 0, 1LL << 40, "Linear warmup steps from 0 to optim.lr."));
  r.add(number("sched.min_lr", 0.0, 0, 1e3, "cosine: final learning rate."));
  r.add(integer("sched.step_size", 100, 1, 1LL << 40, "step: steps between decays."));
  r.add(number("sched.gamma", 0.1, 0, 1, "step: decay factor."));
  r.add(number("sched.start_factor", 1.0 / 3, 0, 1, "linear: first factor of optim.lr."));
  r.add(number("sched.end_factor", 1.0, 0, 1, "linear: last factor of optim.lr."));
  r.add(integer("sched.total_iters", 0, 0, 1LL << 40,
                "linear: steps over which the factor moves; 0: the whole run."));
}

void add_checkpoint_and_comm_settings(Registry& r) {
  r.add(integer("checkpoint.interval", 0, 0, 1LL << 40, "Steps between checkpoints; 0: only at the end.",
                "checkpoint-interval"));
  r.add(integer("checkpoint.keep", 2, 1, 1 << 20, "Checkpoints kept: the newest that verify (older ones are removed; a damaged one is never counted)."));
  r.add(text("checkpoint.resume", "", "Resume from 'auto' (the newest complete checkpoint in "
                                      "work_dir) or a checkpoint folder.",
             "resume"));
  r.add(boolean("checkpoint.overwrite", false,
                "Start afresh in a work_dir that holds another run's checkpoints: this run removes them when it "
                "starts. Without it such a launch is refused unless it resumes (checkpoint.resume), so two runs' "
                "checkpoints never mix.",
                "overwrite"));

  // Communication.
  r.add(number("comm.timeout_s", 300, 1, 86400, "Timeout of every collective, in seconds."));
  r.add(boolean("comm.shared_memory", true,
                "When every rank is on one host and trains on the CPU, fp32 all-reduce, reduce-scatter and "
                "all-gather go through shared memory instead of Gloo over the loopback (falls back to Gloo "
                "if /dev/shm cannot hold the segment)."));
}

// Trackers beside metrics.jsonl (docs/tracking.md), written by rank 0 of the bundled trainer.
std::string check_mlflow_uri(const std::string& t) {
  if (t.empty() || t.rfind("http://", 0) == 0) return "";
  if (t.rfind("https://", 0) == 0) return "https is not supported (no TLS library is linked); use http://";
  return "not an http:// URI";
}

std::string check_tag(const std::string& t) {
  const size_t eq = t.find('=');
  if (eq == std::string::npos || eq == 0) return "a tag is KEY=VALUE";
  return "";
}

void add_log_settings(Registry& r) {
  r.add(text("log.tensorboard", "",
             "TensorBoard event files under this folder, one subfolder per run named like its run folder "
             "(a resumed run continues its run's): the train and validation metrics at train.log_interval "
             "and the resolved job as text. Empty: none.",
             "tensorboard"));
  Setting uri = text("log.mlflow.uri", "",
                     "An MLflow tracking server (http://HOST:PORT): the job's settings as parameters, the "
                     "metrics per logging step, model.safetensors and summary.json as artifacts, and the run's "
                     "status. A server that is down or slow never holds training up. Empty: none.",
                     "mlflow-uri");
  uri.format = "an http:// URI";
  uri.check_text = check_mlflow_uri;
  r.add(std::move(uri));
  r.add(text("log.mlflow.experiment", "", "The MLflow experiment (created if missing); empty: Default."));
  r.add(text("log.mlflow.run_name", "", "The MLflow run's name; empty: the run folder's name."));
  Setting tags = text("log.mlflow.tags", "", "Tags set on the MLflow run, KEY=VALUE each.");
  tags.list = true;
  tags.list_separator = ',';
  tags.format = "a list of KEY=VALUE ([team=nlp, stage=dev] or team=nlp,stage=dev)";
  tags.check_text = check_tag;
  r.add(std::move(tags));
}

Registry build() {
  Registry r;
  // Strategy.
  r.add(choice("strategy", to_string(StrategyName::Ddp), strategy_choices(),
               "How model state is spread over ranks: replicated (ddp), optimiser state sharded "
               "(zero1), + gradients (zero2), + parameters (zero3, fsdp); auto: `mtrain launch` "
               "picks the fastest that fits (`mtrain estimate`).",
               "strategy"));
  r.add(number("ddp.bucket_cap_mb", 25, 0.001, 4096,
               "Gradient bucket size in MiB; buckets are all-reduced while backward still runs."));
  r.add(number("ddp.first_bucket_mb", 1, 0.001, 4096,
               "Size of the first (last-layer) bucket, small so communication starts early."));
  r.add(boolean("ddp.find_unused_parameters", false,
                "Allow parameters that get no gradient in a step (their buckets are still reduced)."));
  add_strategy_settings(r);
  add_model_settings(r);
  add_data_settings(r);
  add_loop_settings(r);
  add_optimiser_settings(r);
  add_checkpoint_and_comm_settings(r);
  add_log_settings(r);
  add_precision_settings(r);
  add_launch_settings(r);
  add_slurm_settings(r);
  return r;
}

}  // namespace

const Registry& job_registry() {
  static const Registry reg = build();
  return reg;
}

}  // namespace mtrain::config
