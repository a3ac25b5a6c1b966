#include "lib/tracking/scalars.hpp"

namespace mtrain::tracking {

using nlohmann::json;

std::vector<Scalar> scalars_of_record(const json& record) {
  std::vector<Scalar> out;
  const std::string mode = record.value("mode", "train");
  for (const auto& [key, value] : record.items()) {
    if (key == "mode" || key == "step" || key == "epoch" || key == "iter" || !value.is_number()) continue;
    out.push_back({mode + "/" + key, value.get<double>()});
  }
  return out;
}

namespace {

void flatten(const json& j, const std::string& prefix, mlflow::KeyValues& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  std::string text = j.is_string() ? j.get<std::string>() : j.dump();
  constexpr size_t kMaxParamValue = 6000;
  if (text.size() > kMaxParamValue) text.resize(kMaxParamValue);
  out.emplace_back(prefix, std::move(text));
}

}  // namespace

mlflow::KeyValues params_of_job(const json& job) {
  mlflow::KeyValues out;
  flatten(job, "", out);
  return out;
}

std::string job_markdown(const json& job) { return "```\n" + job.dump(2) + "\n```"; }

}  // namespace mtrain::tracking
