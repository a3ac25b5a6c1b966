#pragma once
// CRC-32C (Castagnoli, the iSCSI/ext4 polynomial) of checkpoint files and of TensorBoard's event
// records (lib/tracking; in core so that torch-free module needs no trainer code). No library
// the worker may link provides it (zlib's crc32 is the other polynomial and not a dependency),
// so it is here: the SSE4.2 crc32 instruction where the CPU has it, a slicing-by-8 table otherwise.
#include <cstddef>
#include <cstdint>
#include <string>

namespace mtrain {

// Continues `crc` (0 to start) over n bytes.
uint32_t crc32c_update(uint32_t crc, const void* data, size_t n);
// The table path alone (what CPUs without SSE4.2 use); tests hold the two equal.
uint32_t crc32c_update_portable(uint32_t crc, const void* data, size_t n);
// "crc32c:1a2b3c4d", the form the manifest stores.
std::string crc32c_text(uint32_t crc);

}  // namespace mtrain
