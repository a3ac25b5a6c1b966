#pragma once
// The process environment as a map: the one reader every module uses (launch, config, slurm).
#include <map>
#include <string>

namespace mtrain {

std::map<std::string, std::string> process_environment();

}  // namespace mtrain
