#pragma once
// The side of `mtrain estimate` that is not pure: a resolved job → the worker's measurements
// (`mtrain-worker estimate-probe`, run as a child on this CPU), the target's memory (the
// driver's view of each GPU through nvidia-smi, else this host's RAM shared by its ranks, or
// --device-memory), and then estimate() (estimate.hpp).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/config/launch_choices.hpp"
#include "lib/estimate/estimate.hpp"
#include "lib/config/job_view.hpp"

namespace mtrain::estimate {

struct JobEstimateOptions {
  std::string worker_path;             // mtrain-worker; "" = activations and runtime not measured
  int world = 1;
  int ranks_per_node = 1;
  std::optional<double> device_memory;  // --device-memory, per rank
  config::DeviceKind device = config::DeviceKind::Auto;  // launch.device
  int gpus = 0;  // GPUs the ranks would use here, counted by the launcher (lib/launch/estimate_world.hpp)
  std::string weights;                  // a safetensors file: shapes from it, activations not measured
};

// The parameter shapes of a built-in model from its settings (gpt and mlp exactly, as the
// trainer builds them); nullopt for a model whose shapes only the worker knows.
std::optional<ModelShape> builtin_shape(const config::ModelView& model);

// The parameters of a safetensors file, read from its header alone (no tensor data): name and
// element count; the unit of a parameter is its name up to the first all-digit component
// ("model.layers.3.mlp.up_proj.weight" → "model.layers.3"), as repeated blocks are named.
// Throws mtrain::Error for a file that is not safetensors.
ModelShape safetensors_shape(const std::string& path);

// The memory each rank may use on this machine.
Target detect_target(const JobEstimateOptions& o);

// Probe jobs and the scaling of their points (docs/estimate.md, "Activations"). `job` is what the
// probe is given; `model` its view.
Measured measure(const nlohmann::json& job, const config::ModelView& model, const Settings& s,
                 const std::string& worker_path);

Estimate estimate_job(const nlohmann::json& job, const JobEstimateOptions& o);

}  // namespace mtrain::estimate
