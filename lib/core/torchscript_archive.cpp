#include "lib/core/torchscript_archive.hpp"

#include <unordered_map>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/core/zip_reader.hpp"

namespace mtrain {

namespace {

// miniz's MZ_TOLOWER: ASCII only, as LibTorch's record lookup compares names.
std::string ascii_folded(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace

std::string TorchScriptArchive::saved_by() const {
  std::string v = format_version >= 0 ? fmt::format("file format {}", format_version) : "no version record";
  return has_byteorder ? fmt::format("PyTorch 2.x ({}, with the byteorder record 2.x writes)", v)
                       : fmt::format("PyTorch 1.x ({}, no byteorder record)", v);
}

bool is_code_record(std::string_view name) {
  const std::string f = ascii_folded(name);
  return str::starts_with(f, "code/") && str::ends_with(f, ".py");
}

TorchScriptArchive read_torchscript_archive(const std::string& path) {
  ZipReader zip(path, kTorchScriptZip);
  return scan_torchscript_archive(zip);
}

TorchScriptArchive scan_torchscript_archive(ZipReader& zip) {
  TorchScriptArchive a;
  a.prefix = zip.prefix().empty() ? "" : zip.prefix().substr(0, zip.prefix().size() - 1);
  std::unordered_map<std::string, std::string_view> folded;
  bool has_code = false;
  for (const auto& r : zip.records()) {
    const std::string_view name = zip.name(r);
    if (auto [at, fresh] = folded.emplace(ascii_folded(name), name); !fresh)
      throw Error(fmt::format("'{}' has two records whose names differ only in case ({} and {}): LibTorch finds "
                              "records case-insensitively, so which one it would load cannot be known",
                              zip.path(), visible_text(at->second), visible_text(name)),
                  "a file written by torch.jit.save never has such names; use a model file from a source you trust");
    has_code = has_code || is_code_record(name);
  }
  const bool no_pickle = a.prefix.empty() || zip.find("data.pkl") == nullptr;
  if (no_pickle || !has_code)
    throw Error(fmt::format("'{}' is not a TorchScript archive: the zip has no {}", zip.path(),
                            no_pickle ? "<folder>/data.pkl record" : "code/ records (a torch.save file, e.g. a state dict)"),
                "a TorchScript model is written by torch.jit.save(torch.jit.script(module), PATH); weights saved "
                "with torch.save or safetensors go to --init");
  for (const char* name : {"version", ".data/version"}) {
    if (zip.find(name) == nullptr) continue;
    if (auto n = str::parse_uint(str::trim(zip.read_all(name, kMaxTorchScriptRecord)))) a.format_version = static_cast<int64_t>(*n);
    break;
  }
  a.has_byteorder = zip.find("byteorder") != nullptr;
  for (const auto& r : zip.records()) {
    std::string name(zip.name(r));
    if (!is_code_record(name)) continue;
    std::string text = zip.read_all(name, kMaxTorchScriptRecord);
    a.code.push_back({std::move(name), std::move(text)});
  }
  return a;
}

}  // namespace mtrain
