#pragma once
// `mtrain env`: the report people paste into bug reports. collect_report asks a SystemProbe
// everything and returns one JSON document (schema "mtrain.env/1", checked by a test); the text
// form is rendered from that same document, so both always say the same thing.
//
// Top-level keys: schema, mtrain {version, executable, worker{…}}, python {path, version, torch…}, os, cpu, memory,
// gpus {source, devices[], topology, cuda_driver_version, note}, network[], slurm, environment[], user_config, shm,
// limits, rendezvous (when one is configured), warnings[{what, advice}].
#include <string>

#include <nlohmann/json.hpp>

#include "lib/core/bytes_text.hpp"
#include "lib/core/worker_facts.hpp"
#include "lib/envreport/system_probe.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/rendezvous/etcd_tls.hpp"

namespace mtrain::envreport {

using json = nlohmann::json;

struct ReportOptions {
  std::string version;         // mtrain's version
  std::string executable;      // mtrain's own path
  std::string worker_path;     // mtrain-worker ("" when not installed)
  int command_timeout_ms = 20000;  // each probe command (nvidia-smi, sinfo, the worker)
  // The rendezvous the job is set for (flags, else MTRAIN_* and the user file); empty: not asked.
  std::string rdzv_backend, rdzv_endpoint;
  std::string rdzv_etcd_cacert, rdzv_etcd_cert, rdzv_etcd_key;  // TLS to etcd, as the launch would
  config::EtcdApi rdzv_etcd_api = config::EtcdApi::Grpc;  // and the API it would speak
};

json collect_report(const SystemProbe& probe, const ReportOptions& opt);

// Sections, each from the probe alone (also used by the tests one by one).
json probe_gpus(const SystemProbe& probe, int timeout_ms);
json probe_worker(const SystemProbe& probe, const std::string& worker_path, int timeout_ms);
// python3 on PATH (what `launch -- python3 …` ranks run): path, version, torch, CUDA (python.cpp).
extern const char* const kPythonProbe;
json probe_python(const SystemProbe& probe, int timeout_ms);

// The `mtrain --version` text: "mtrain VERSION (git REV)" and the worker's LibTorch version from
// probe_worker's answer (or why it is not known). `revision` "" reads "unknown".
std::string version_text(const std::string& version, const std::string& revision, const json& worker);
// The worker as probe_worker describes it, from its build facts file instead of starting it.
json worker_from_facts(const std::string& worker_path, const WorkerFacts& facts);
json probe_slurm(const SystemProbe& probe, int timeout_ms);
// {backend, endpoint, api, members[{endpoint, answered, etcdserver, etcdcluster | error}], answered}:
// each member's version in the API the launch speaks (rendezvous.cpp: gRPC's Status has no cluster
// version, the gateway's /version has); other backends: backend and endpoint only.
// https members or certificate files: TLS, as `mtrain launch` speaks it (etcd_tls.hpp).
json probe_rendezvous(const std::string& backend, const std::string& endpoint, int timeout_ms,
                      const rendezvous::EtcdTlsFiles& tls = {}, config::EtcdApi api = config::EtcdApi::Grpc);
json probe_environment(const std::map<std::string, std::string>& env);
json probe_user_config(const SystemProbe& probe, const std::map<std::string, std::string>& env);

// Warnings with advice from a collected report (without its "warnings" key) and the environment.
json compute_warnings(const json& report, const std::map<std::string, std::string>& env);

std::string render_text(const json& report);

// What a loaded BLAS library file is: "OpenBLAS", "BLIS", "MKL", "reference BLAS (netlib)",
// or "unknown BLAS". Debian installs netlib's reference BLAS as /usr/lib/<triplet>/blas/.
std::string blas_kind(const std::string& path);

// "64.0 MiB", "15.6 GiB".

}  // namespace mtrain::envreport
