#pragma once
// Naming the file when a memory-mapped input faults. A token file truncated (or whose disk
// fails) while a rank maps it raises SIGBUS at the next read of a lost page; the rank died with
// "signal SIGBUS" and no word of which file. Each mapping is registered here with its address
// range and path; a SIGBUS handler (installed with the first registration) finds the range the
// faulting address lies in, writes one paragraph naming the file and the byte to stderr and to
// the rank's TORCHELASTIC_ERROR_FILE (so `mtrain launch` reports it), and then lets the signal
// kill the process as before (exit by SIGBUS, core dump rules unchanged). A fault outside every
// registered range is left to the previous disposition untouched.
//
// Everything the handler needs is formatted at registration: it only compares addresses and
// calls write/open/rename, which are async-signal-safe.
#include <cstdint>
#include <string>

namespace mtrain::trainer {

// Registers [base, base+len) as a mapping of `path` (named by `setting`, e.g. data.path).
// Returns a slot to pass to forget_mapped_file when the mapping is removed; -1 when the fixed
// table is full (the fault is then reported as before, without the file).
int register_mapped_file(const void* base, uint64_t len, const std::string& path,
                         const std::string& setting);
void forget_mapped_file(int slot);

}  // namespace mtrain::trainer
