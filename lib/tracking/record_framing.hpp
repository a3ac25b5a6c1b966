#pragma once
// The record framing of TensorBoard's event files (TFRecord): per record the data's length as a
// little-endian uint64, the masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the
// data. TensorBoard's reader checks both CRCs and drops a file's records from the first that
// fails, so the mask and the byte order must be exactly its own.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mtrain::tracking {

// TFRecord's mask: the CRC rotated right by 15 bits plus 0xa282ead8 (so a CRC over data that
// itself holds CRCs does not degenerate).
uint32_t masked_crc32c(std::string_view bytes);

// One record: the 16-byte header, the data and the 4-byte footer.
std::string frame_record(std::string_view data);

// The records of a whole file, checked as TensorBoard checks them; nullopt if any length or CRC
// is wrong or the file ends inside a record. Each record is capped at `max_record` bytes.
std::optional<std::vector<std::string>> read_records(std::string_view file, uint64_t max_record = 64u << 20);

}  // namespace mtrain::tracking
