#include "mtrain/config/data_files.hpp"

#include "mtrain/core/token_file.hpp"

namespace mtrain::config {

void check_data_files(const json& job) {
  if (get(job, "data.name").get<std::string>() != "tokens") return;
  read_token_file_layout(get(job, "data.path").get<std::string>(), "data.path");
  const std::string val = get(job, "data.val_path").get<std::string>();
  if (!val.empty()) read_token_file_layout(val, "data.val_path");
}

}  // namespace mtrain::config
