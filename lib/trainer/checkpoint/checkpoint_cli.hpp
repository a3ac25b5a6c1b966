#pragma once
// `mtrain-worker checkpoint consolidate|inspect|verify …`: the torch side of
// `mtrain checkpoint` (the launcher does not link LibTorch and execs this).
#include <ostream>
#include <string>
#include <vector>

namespace mtrain::trainer {

// args: the words after "checkpoint". Returns the exit code: 0 ok, 1 a damaged checkpoint or a
// failed write, 2 bad usage; mtrain::Error propagates (the caller prints its paragraph).
int run_checkpoint_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mtrain::trainer
