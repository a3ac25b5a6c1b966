#pragma once
// Slurm's compressed host and count lists, expanded natively so that nothing inside an allocation
// needs `scontrol show hostnames`.
#include <string>
#include <vector>

namespace mtrain::slurm {

// Expand a Slurm hostlist: "node[01-04,07]", "a[1-2]-ib,b3", "rack[0-1]-n[1-2]" (several bracket
// groups multiply, leftmost varying slowest), zero padding kept from the lower bound. Order and
// duplicates are kept as written. Throws mtrain::Error naming the column of a malformed list.
std::vector<std::string> expand_hostlist(const std::string& list);

// Expand a task/CPU count list as in SLURM_TASKS_PER_NODE / SLURM_JOB_CPUS_PER_NODE:
// "2(x3),1" → {2, 2, 2, 1}. Throws mtrain::Error naming the column.
std::vector<int> expand_counts(const std::string& list, const std::string& what = "count list");

}  // namespace mtrain::slurm
