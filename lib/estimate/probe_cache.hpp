#pragma once
// The probe's answers kept on disk, so that asking the same question again (`mtrain estimate` for
// another world size or device memory, the launch's fit check after an estimate) does not measure
// again: a 7B-wide slice costs minutes of CPU per pass. The key is everything the answer depends
// on: the probe's arguments, the job it was given, and the worker binary (size and modification
// time: a rebuilt worker measures again). Files live in $MTRAIN_CACHE_DIR, else
// $XDG_CACHE_HOME/mtrain/estimate-probe, else ~/.cache/mtrain/estimate-probe; a cache that cannot be
// read or written is no cache (the probe runs).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace mtrain::estimate {

// The cache key of one probe run (hex digest).
std::string probe_cache_key(const std::string& worker, const std::string& args, const std::string& job_text);

std::optional<nlohmann::json> probe_cache_get(const std::string& key);
void probe_cache_put(const std::string& key, const nlohmann::json& answer);

}  // namespace mtrain::estimate
