// Issue 29: files from the internet are untrusted input. Every hostile case of the issue, through
// the reader a job uses (model.init's open_weights_file, the tensors dataset, the token-file
// check, checkpoint verify / read / consolidate), with what must happen: a clean refusal (an
// mtrain::Error paragraph naming the file, exit 2 or 1) or a correct load — never a crash, a hang,
// silent wrong weights, or memory/time out of proportion. The last test prints the table (family,
// case, exit, outcome, peak memory above the start of the case, seconds).
#include <catch2/catch.hpp>

#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>

#include <fmt/format.h>

#include "helpers.hpp"
#include "hostile_files.hpp"
#include "lib/core/error.hpp"
#include "lib/core/token_file.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/consolidate.hpp"
#include "lib/core/crc32c.hpp"
#include "lib/trainer/checkpoint/manifest.hpp"
#include "lib/trainer/checkpoint/shard_io.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/verify.hpp"
#include "lib/trainer/checkpoint/weights_file.hpp"
#include "lib/trainer/data/datasets.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;
using mtrain::crc32c_text;
namespace fs = std::filesystem;

namespace {

struct Row {
  std::string family, name;
  int exit = 0;
  std::string outcome;
  double peak_mb = 0, seconds = 0;
};
std::vector<Row>& rows() {
  static std::vector<Row> r;
  return r;
}

// Peak resident memory: return freed heap to the system, reset the high-water mark (clear_refs 5),
// run, read VmHWM.
long vm_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key) + 1));
  return 0;
}

// Runs one case: `f` returns a description of a correct load; an mtrain::Error is a refusal whose
// text must contain `expect` (empty: the case must load). Records the row.
Row run_case(const std::string& family, const std::string& name, const std::string& expect,
             const std::function<std::string()>& f) {
  // Memory freed by earlier cases stays resident in malloc's heap and would be reused without
  // raising RSS: give it back first, or a case's allocations would not show.
  ::malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";
  const long before = vm_kb("VmRSS:");
  const auto t0 = std::chrono::steady_clock::now();
  Row r{family, name, 0, "", 0, 0};
  try {
    r.outcome = "loaded: " + f();
    INFO(family << " / " << name << ": " << r.outcome);
    CHECK(expect.empty());
  } catch (const mtrain::Error& e) {
    r.exit = e.exit_code();
    r.outcome = "refused: " + e.message();
    INFO(family << " / " << name << ": " << e.paragraph());
    CHECK_FALSE(expect.empty());
    CHECK_THAT(e.paragraph(), Catch::Contains(expect));
    CHECK(e.paragraph().find('\n') == std::string::npos);  // one paragraph
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.peak_mb = static_cast<double>(vm_kb("VmHWM:") - before) / 1024.0;
  rows().push_back(r);
  return r;
}

std::string write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string st_bytes(const std::string& header, const std::string& data) {
  std::string s;
  append_le(s, header.size(), 8);
  return s + header + data;
}

std::string floats(std::initializer_list<float> v) { return raw_bytes(std::vector<float>(v)); }

std::string load_all(const std::string& path) {
  auto w = open_weights_file(path);
  double sum = 0;
  for (const auto& e : w->entries()) {
    int64_t n = 1;
    for (auto d : e.shape) n *= d;
    sum += w->read(e.name, 0, n).to(at::kDouble).sum().item<double>();
  }
  return fmt::format("{} tensors, sum {}", w->entries().size(), sum);
}

// A checkpoint folder written directly: one shard holding `tensors` (each one piece, or, for the
// first tensor, `pieces` single-element pieces, each its own record), a checksummed manifest,
// COMPLETE.
fs::path write_checkpoint(const fs::path& dir, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                          int format = kCheckpointFormatVersion, bool checksum = true, int64_t pieces = 0) {
  fs::create_directories(dir);
  std::vector<std::pair<std::string, at::Tensor>> flat;
  std::vector<size_t> first_key;  // per tensor: the index of its first record
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [n, t] = tensors[i];
    first_key.push_back(flat.size());
    if (pieces > 0 && i == 0) {
      for (int64_t p = 0; p < pieces; ++p) flat.emplace_back(fmt::format("{}#{}", n, p), t.reshape({-1}).narrow(0, p, 1));
    } else {
      flat.emplace_back(n, t.reshape({-1}));
    }
  }
  const ArchiveWritten w = write_tensor_file((dir / "shard_rank0.pt").string(), flat);
  Manifest m;
  m.strategy = "ddp";
  m.world_size = 1;
  m.step = 1;
  m.format_version = format;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    TensorMeta meta;
    meta.shape = t.sizes().vec();
    meta.dtype = dtype_name(t.scalar_type());
    if (pieces > 0 && i == 0) {
      for (int64_t p = 0; p < pieces; ++p)
        meta.pieces.push_back({0, "shard_rank0.pt", p, 1, w.keys[first_key[i] + static_cast<size_t>(p)]});
    } else {
      meta.pieces.push_back({0, "shard_rank0.pt", 0, t.numel(), w.keys[first_key[i]]});
    }
    m.tensors[name] = meta;
    m.order.push_back(name);
  }
  m.files["shard_rank0.pt"] = {0, w.bytes, crc32c_text(w.crc32c), {}};
  nlohmann::json j = to_json(m);
  if (!checksum) j.erase("checksum");
  std::ofstream(dir / "manifest.json") << j.dump();
  std::ofstream(dir / "COMPLETE") << "";
  return dir;
}

void edit_manifest(const fs::path& dir, const std::function<void(nlohmann::json&)>& f) {
  std::ifstream in(dir / "manifest.json");
  nlohmann::json j = nlohmann::json::parse(in);
  f(j);
  std::ofstream(dir / "manifest.json") << j.dump();
}

}  // namespace

// Item 2's bound on a real state dict. The load needs about 1.7× the file (46–52 MB for 27 MB).
// It measured 2.1–2.4× after other cases while the reader's arena lived in malloc's heap (glibc's
// raised mmap threshold, a fragmented heap); the arena and the entries are mapped arrays now
// (mapped_array.hpp), unmapped whatever malloc's state, so the issue's 2× is checked.
TEST_CASE("hostile sizes: a torch.save state dict of 10^5 tensors", "[checkpoint][hostile]") {
  const auto d = fresh_dir("hostile_many");
  // 10^5 tensors of 4 floats as torch.save writes them (the same data.pkl, records aligned to 64
  // bytes: a 27 MB file, 8.6 MB of it the pickle). Metadata is nearly all this file holds, so the
  // readers' own costs are the peak: parsing the pickle alone took 286 MB when an object cost ~100
  // bytes.
  const int64_t n = 100'000;
  std::vector<ZipEntry> records{{"data.pkl", torch_save_pickle(n, 4)}};
  for (int64_t i = 0; i < n; ++i) records.push_back({fmt::format("data/{}", i), floats({1, 2, 3, static_cast<float>(i)})});
  records.push_back({"version", "3\n"});
  const std::string many_pt = write(d / "many.pt", zip_of(records, "archive/", 64));
  records.clear();
  records.shrink_to_fit();
  const double many_mb = static_cast<double>(fs::file_size(many_pt)) / (1 << 20);
  const Row many = run_case("torch.save", "10^5 tensors of 4 floats", "", [&] {
    const std::string r = load_all(many_pt);
    CHECK(r == fmt::format("{} tensors, sum {}", n, 6 * n + n * (n - 1) / 2));
    return r;
  });
  std::cout << fmt::format("10^5 tensors: {:.1f} MB file, peak {:.1f} MB, {:.2f} s\n", many_mb, many.peak_mb, many.seconds);
  INFO("peak " << many.peak_mb << " MB for a " << many_mb << " MB file");
  CHECK(many.peak_mb < 2 * many_mb);
  fs::remove(many_pt);
}

TEST_CASE("hostile safetensors files", "[checkpoint][hostile]") {
  const auto d = fresh_dir("hostile_st");
  const std::string good_header = R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  run_case("safetensors", "valid 2x2 F32", "", [&] {
    const std::string r = load_all(write(d / "ok.safetensors", st_bytes(good_header, floats({1, 2, 3, 4}))));
    CHECK(r == "1 tensors, sum 10");
    return r;
  });
  // "legacy torch.save" was said of a bad safetensors length (item 8).
  std::string past;
  append_le(past, 1000, 8);
  run_case("safetensors", "header length past the end", "runs past the end of the file", [&] {
    return load_all(write(d / "len.bin", past + "{\"w\": 1}"));
  });
  std::string huge;
  append_le(huge, 1ull << 40, 8);
  run_case("safetensors", "header length of 1 TiB", "above the 100 MB limit", [&] {
    return load_all(write(d / "huge.safetensors", huge + "{}"));
  });
  run_case("safetensors", "100 MB of '[' as the header", "the header is not a JSON object", [&] {
    return load_all(write(d / "brackets.safetensors", st_bytes(std::string(100'000'000 - 16, '['), "")));
  });
  fs::remove(d / "brackets.safetensors");
  run_case("safetensors", "a tensor named twice", "appears twice", [&] {
    return load_all(write(d / "dup.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   floats({1, 2}))));
  });
  run_case("safetensors", "shape product overflows", "more than 2^64", [&] {
    return load_all(write(d / "ovf.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,16]}})",
                                   floats({1, 2, 3, 4}))));
  });
  const Row big = run_case("safetensors", "200,000 entries", "", [&] {
    std::string h = "{";
    std::string data;
    for (int i = 0; i < 200000; ++i) {
      h += fmt::format("{}\"t{}\":{{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[{},{}]}}", i ? "," : "", i, i, i + 1);
      data.push_back(1);
    }
    h += "}";
    auto w = open_weights_file(write(d / "many.safetensors", st_bytes(h, data)));
    CHECK(w->entries().size() == 200000);
    CHECK(w->entries()[199999].name == "t199999");  // header order kept
    return fmt::format("{} tensors", w->entries().size());
  });
  CHECK(big.seconds < 20);  // 58 s with ordered_json before
  const std::string fifo = (d / "fifo.safetensors").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  run_case("safetensors", "a FIFO as model.init", "is a FIFO (named pipe), not a regular file", [&] { return load_all(fifo); });
  fs::create_symlink("/dev/zero", d / "zero.safetensors");
  run_case("safetensors", "a link to /dev/zero", "symbolic link to /dev/zero (a character device)",
           [&] { return load_all((d / "zero.safetensors").string()); });
}

TEST_CASE("hostile torch.save state dicts", "[checkpoint][hostile]") {
  const auto d = fresh_dir("hostile_zip");
  const std::string w6 = floats({1, 2, 3, 4, 5, 6});
  const std::string sd = pickle_of(pk_dict({{"fc.weight", pk_tensor("0", 6, {2, 3})}}, true));
  run_case("torch.save", "valid OrderedDict", "", [&] {
    const std::string r = load_all(write(d / "ok.pt", zip_of({{"data.pkl", sd}, {"data/0", w6}, {"version", "3\n"}})));
    CHECK(r == "1 tensors, sum 21");
    return r;
  });
  run_case("torch.save", "a strided view (transposed)", "", [&] {
    auto w = open_weights_file(write(d / "t.pt", zip_of({{"data.pkl", pickle_of(pk_dict({{"w", pk_tensor("0", 6, {3, 2}, {1, 3})}}))},
                                                         {"data/0", w6}})));
    const at::Tensor t = w->read("w", 0, 6);
    CHECK(t.equal(at::tensor({1.f, 4.f, 2.f, 5.f, 3.f, 6.f})));
    return std::string("transposed values");
  });
  // Item 2: a deflated record was pread as raw bytes (17 of 17 "initialised" with garbage).
  run_case("torch.save", "a deflated data record", "is compressed (deflate, method 8)", [&] {
    return load_all(write(d / "deflate.pt", zip_of({{"data.pkl", sd}, {"data/0", std::string(20, 'x'), 8, 24}})));
  });
  // Item 7: a zip bomb (1 MB inflating to GBs) peaked at 2.2 GB in LibTorch's reader.
  const Row bomb = run_case("torch.save", "zip bomb: data.pkl deflated, 2 GiB declared", "is compressed", [&] {
    return load_all(write(d / "bomb.pt", zip_of({{"data.pkl", std::string(1 << 20, '\0'), 8, 1ll << 31}, {"data/0", w6}})));
  });
  CHECK(bomb.peak_mb < 64);
  run_case("torch.save", "a record shorter than its storage", "declared as 6 elements of 4 bytes, but the record holds 8 bytes", [&] {
    return load_all(write(d / "short.pt", zip_of({{"data.pkl", sd}, {"data/0", w6.substr(0, 8)}, {"version", "3\n"}})));
  });
  run_case("torch.save", "storage of 10^12 elements declared", "declared as 1000000000000 elements", [&] {
    return load_all(write(d / "huge.pt", zip_of({{"data.pkl", pickle_of(pk_dict({{"w", pk_tensor("0", 1'000'000'000'000, {2})}}))}, {"data/0", w6}})));
  });
  // Adversarial pickles (items 2, 4, 7): each refused at its first excess opcode, holding at most
  // the issue's bound: 2× the file, or the reader's 1 MiB floor plus the file for a small one.
  // Before the structural limits and the budget of max(1 MiB, the pickle) + 408 bytes a tensor
  // (unpickler.hpp), the reader held 16 × the pickle: these peaked at 4.9–39 MB for 1–4 MB files.
  auto hostile_pickle = [&](const std::string& name, const std::string& body, const std::string& expect) {
    const std::string path = write(d / "hostile.pt", zip_of({{"data.pkl", pickle_of(body)}, {"data/0", w6}}));
    const double file_mb = static_cast<double>(fs::file_size(path)) / (1 << 20);
    const Row r = run_case("torch.save", name, expect, [&] { return load_all(path); });
    INFO(name << ": peak " << r.peak_mb << " MB for a " << file_mb << " MB file");
    CHECK(r.peak_mb <= std::max(2 * file_mb, 1 + file_mb) + 0.0625);  // + 64 KiB: the zip index, the message
    CHECK_THAT(r.outcome, Catch::Contains("hostile.pt: cannot read data.pkl: at the opcode"));
  };
  // Item 4: 10^6 nested tuples in a 1 MB state dict: SIGSEGV (recursive destructor); 24.7 MB.
  hostile_pickle("10^6 nested tuples (1 MB)", ")" + std::string(1'000'000, '\x85'), "nests containers more than 256 deep");
  // Item 7: memo references multiplied: each BINGET is 2 bytes of input for a reference; 39 MB.
  std::string memo("]q\x00(", 4);  // with its length: the literal holds a NUL
  for (int i = 0; i < 2'000'000; ++i) memo += std::string("h\x00", 2);
  hostile_pickle("memo: 2·10^6 references to one list", memo + "e", "leaves more than 65536 values on the stack");
  memo = {};
  // 10^6 empty tuples (CPython's shared ()) cost the pickle's byte and a 4-byte stack slot each:
  // 117 MB for this 1 MB file when an object cost ~100 bytes, 4.9 MB with 16-byte objects.
  hostile_pickle("10^6 empty tuples left on the stack (1 MB)", std::string(1'000'000, ')'), "leaves more than 65536 values on the stack");
  // Legal structure, as Python's pickler batches it, and no tensors: 4 bytes of list item for
  // each byte of pickle.
  std::string appends("]");
  for (int i = 0; i < 1000; ++i) appends += "(" + std::string(1000, ')') + "e";
  hostile_pickle("a list of 10^6 empty tuples, APPENDS by 1000 (1 MB)", appends, "needs more than 1.0 MB to hold what it builds");
  // Item 2's memory bound for the index itself: a 26 MB zip that is 400,000 directory entries
  // cost 3-4x its size to index (the whole directory read at once, a std::string and a hash-map
  // node per entry).
  const std::string heavy = mtrain::testing::directory_heavy_zip(
      {{"archive/data.pkl", sd}, {"archive/data/0", w6}}, 400'000, "archive/x/");
  const Row index = run_case("torch.save", "400,000 directory entries (all central directory)", "", [&] {
    const std::string r = load_all(write(d / "heavy.pt", heavy));
    CHECK(r == "1 tensors, sum 21");
    return r;
  });
  const double heavy_mb = static_cast<double>(heavy.size()) / (1 << 20);
  INFO("peak " << index.peak_mb << " MB for a " << heavy_mb << " MB file");
  CHECK(index.peak_mb < 2 * heavy_mb);
  run_case("torch.save", "the legacy (pre-1.6) format", "legacy (pre-1.6, non-zip) format", [&] {
    return load_all(write(d / "legacy.pt", std::string("\x80\x02\x8a\x0al\xfc\x9c" "F\xf9 j\xa8P\x19.", 15)));
  });
  const std::string fifo = (d / "fifo.pt").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  run_case("torch.save", "a FIFO as model.init", "is a FIFO (named pipe), not a regular file", [&] { return load_all(fifo); });
}

TEST_CASE("hostile tensors data files", "[data][hostile]") {
  const auto d = fresh_dir("hostile_tensors");
  const std::string x = floats({1, 2, 3, 4, 5, 6});
  const std::string y = raw_bytes(std::vector<int64_t>{0, 1});
  const std::string pair = pickle_of(pk_dict({{"input", pk_tensor("0", 6, {2, 3})}, {"target", pk_tensor("1", 2, {2}, {}, "LongStorage")}}));
  auto load = [&](const std::string& path) {
    DataSpec s;
    s.name = mtrain::config::DataName::Tensors;
    s.path = path;
    s.val_fraction = 0;
    auto ds = make_tensors(s, Split::Train);
    const Batch b = ds->batch({0, 1});
    CHECK(b.input.sum().item<double>() == 21);
    CHECK(b.target.equal(at::tensor({0, 1}, at::kLong)));
    return fmt::format("{} rows", ds->size());
  };
  run_case("tensors", "valid {input, target}", "", [&] { return load(write(d / "ok.pt", zip_of({{"data.pkl", pair}, {"data/0", x}, {"data/1", y}}))); });
  // Item 4: SIGSEGV in index_select, or training on heap bytes when the lie was small.
  run_case("tensors", "storage declared larger than its record", "does not fit its data", [&] {
    return load(write(d / "short.pt", zip_of({{"data.pkl", pair}, {"data/0", x.substr(0, 8)}, {"data/1", y}})));
  });
  run_case("tensors", "10^6 nested tuples (1 MB)", "nests containers more than 256 deep", [&] {
    return load(write(d / "nested.pt", zip_of({{"data.pkl", pickle_of(")" + std::string(1'000'000, '\x85'))}, {"data/0", x}})));
  });
  // Item 8: torch.save({"input": X}) was "Unknown opcode 0x73" (SETITEM).
  run_case("tensors", "torch.save({\"input\": X}) only", "a dict without the key \"target\"", [&] {
    return load(write(d / "one.pt", zip_of({{"data.pkl", pickle_of("}" + pk_str("input") + pk_tensor("0", 6, {2, 3}) + "s")}, {"data/0", x}})));
  });
  const std::string fifo = (d / "fifo.pt").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  run_case("tensors", "a FIFO as data.path", "is a FIFO (named pipe), not a regular file", [&] { return load(fifo); });
  run_case("tokens", "a FIFO as data.path", "is a FIFO (named pipe), not a regular file", [&] {
    return mtrain::read_token_file_layout(fifo, "data.path").describe();
  });
}

TEST_CASE("hostile checkpoint folders", "[checkpoint][hostile]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("hostile_ck");
  const at::Tensor w = at::arange(12, at::kFloat).reshape({3, 4});
  // Item 5: verify took 24 s at 4·10^4 tensors (the limited JSON parser rescanned objects).
  {
    std::vector<std::pair<std::string, at::Tensor>> many;
    for (int i = 0; i < 40000; ++i) many.emplace_back(fmt::format("model/t{}", i), at::full({1}, static_cast<float>(i)));
    const auto ck = write_checkpoint(d / "many", many);
    const Row r = run_case("checkpoint", "verify with 4·10^4 tensors", "", [&] {
      const VerifyReport rep = verify_checkpoint(ck.string());
      INFO(rep.problem());
      CHECK(rep.ok());
      return std::string("verified");
    });
    CHECK(r.seconds < 20);
  }
  // Item 5: CheckpointReader's coverage loop was O(pieces²): 113 s at 10^5 pieces.
  {
    const auto ck = write_checkpoint(d / "pieces", {{"model/w", at::ones({100000})}}, kCheckpointFormatVersion, true, 100000);
    const Row r = run_case("checkpoint", "read a tensor of 10^5 pieces", "", [&] {
      CheckpointReader reader(ck.string());
      const at::Tensor t = reader.read("model/w", 0, 100000);
      CHECK(t.sum().item<double>() == 100000);
      return std::string("10^5 elements");
    });
    CHECK(r.seconds < 30);
  }
  // Item 2/3: a manifest whose dtype is edited and checksum dropped passed verify.
  {
    const auto ck = write_checkpoint(d / "edited", {{"model/w", w}});
    edit_manifest(ck, [](nlohmann::json& j) {
      j["tensors"]["model/w"]["dtype"] = "float64";
      j.erase("checksum");
    });
    run_case("checkpoint", "format 3: dtype edited, checksum dropped", "requires a \"checksum\"", [&] {
      return verify_checkpoint(ck.string()).ok() ? std::string("verified") : throw mtrain::Error(verify_checkpoint(ck.string()).problem());
    });
    run_case("checkpoint", "--init DIR of that folder", "requires a \"checksum\"", [&] { return load_all(ck.string()); });
    const auto old = write_checkpoint(d / "old", {{"model/w", w}}, 2, false);
    edit_manifest(old, [](nlohmann::json& j) { j["tensors"]["model/w"]["dtype"] = "float64"; });
    run_case("checkpoint", "format 2 (no checksum): dtype edited", "holds 48 bytes, but the manifest says it is a piece of 'model/w' (12 elements of float64) = 96 bytes", [&] {
      const VerifyReport rep = verify_checkpoint(old.string());
      if (!rep.ok()) throw mtrain::Error(rep.problem());
      return std::string("verified");
    });
  }
  // Item 3: --init DIR skipped what --resume checks.
  {
    const auto ck = write_checkpoint(d / "flipped", {{"model/w", w}});
    CHECK(load_all(ck.string()) == "1 tensors, sum 66");
    std::fstream f(ck / "shard_rank0.pt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto size = static_cast<long>(f.tellg());
    f.seekp(size - 200);  // a byte of the data region, before the central directory
    char c = 0;
    f.seekg(size - 200);
    f.read(&c, 1);
    c ^= 0x10;
    f.seekp(size - 200);
    f.write(&c, 1);
    f.close();
    run_case("checkpoint", "--init DIR with a bit-flipped shard", "checksum mismatch", [&] { return load_all(ck.string()); });
    const auto ck2 = write_checkpoint(d / "fifo", {{"model/w", w}});
    fs::remove(ck2 / "shard_rank0.pt");
    REQUIRE(::mkfifo((ck2 / "shard_rank0.pt").c_str(), 0600) == 0);
    run_case("checkpoint", "--init DIR with a FIFO shard", "is a FIFO (named pipe)", [&] { return load_all(ck2.string()); });
  }
  // Item 6: consolidate -o onto the checkpoint's own shard, a FIFO, a symbolic link.
  {
    const auto ck = write_checkpoint(d / "cons", {{"model/w", w}});
    auto cons = [&](const std::string& out) {
      ConsolidateOptions o;
      o.dir = ck.string();
      o.output = out;
      consolidate_checkpoint(o);
      return out;
    };
    run_case("consolidate", "-o <checkpoint>/shard_rank0.pt", "lies inside the checkpoint folder", [&] { return cons((ck / "shard_rank0.pt").string()); });
    CHECK(verify_checkpoint(ck.string()).ok());
    run_case("consolidate", "-o <checkpoint>/../cons/x.pt", "lies inside the checkpoint folder", [&] { return cons((ck / ".." / "cons" / "x.pt").string()); });
    REQUIRE(::mkfifo((d / "out.fifo").c_str(), 0600) == 0);
    run_case("consolidate", "-o a FIFO", "the path is a FIFO (named pipe)", [&] { return cons((d / "out.fifo").string()); });
    fs::create_symlink(d / "victim", d / "link.pt");
    run_case("consolidate", "-o a symbolic link", "the path is a symbolic link to", [&] { return cons((d / "link.pt").string()); });
    CHECK(fs::is_symlink(d / "link.pt"));
    fs::create_hard_link(ck / "shard_rank0.pt", d / "hard.pt");
    run_case("consolidate", "-o a hard link to a shard", "the checkpoint's own file", [&] { return cons((d / "hard.pt").string()); });
    run_case("consolidate", "-o a new file", "", [&] { return cons((d / "model.pt").string()); });
    CHECK(load_all((d / "model.pt").string()) == "1 tensors, sum 66");
  }
}

// Issue 40 item 9: a manifest that names one shard record many times passed verify, and
// consolidate wrote a 375 KB shard out as a 657 MB file.
TEST_CASE("a manifest may name each shard record once", "[checkpoint][hostile]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("hostile_reuse");
  auto refused_by_both = [&](const fs::path& ck, const std::string& name) {
    run_case("checkpoint", "verify: " + name, "each record of a shard holds one piece of one tensor", [&] {
      const VerifyReport rep = verify_checkpoint(ck.string());
      if (!rep.ok()) throw mtrain::Error(rep.problem());
      return std::string("verified");
    });
    run_case("consolidate", name, "each record of a shard holds one piece of one tensor", [&] {
      ConsolidateOptions o;
      o.dir = ck.string();
      o.output = (d / (name.substr(0, 5) + ".pt")).string();
      consolidate_checkpoint(o);
      return std::string("wrote it");
    });
    CHECK_FALSE(fs::exists(d / (name.substr(0, 5) + ".pt")));
  };
  // 20,000 tensors naming the piece of the first.
  {
    const auto ck = write_checkpoint(d / "many", {{"model/w", at::ones({3, 4})}});
    edit_manifest(ck, [](nlohmann::json& j) {
      const nlohmann::json t = j["tensors"]["model/w"];
      for (int i = 0; i < 20000; ++i) {
        j["tensors"][fmt::format("model/copy{}", i)] = t;
        j["order"].push_back(fmt::format("model/copy{}", i));
      }
      j["checksum"] = manifest_checksum(j);
    });
    refused_by_both(ck, "20,000 tensors naming one piece");
  }
  // One tensor listing its piece 10,000 times.
  {
    const auto ck = write_checkpoint(d / "again", {{"model/w", at::ones({3, 4})}});
    edit_manifest(ck, [](nlohmann::json& j) {
      const nlohmann::json p = j["tensors"]["model/w"]["pieces"][0];
      for (int i = 0; i < 9999; ++i) j["tensors"]["model/w"]["pieces"].push_back(p);
      j["checksum"] = manifest_checksum(j);
    });
    refused_by_both(ck, "one tensor listing a piece 10,000 times");
  }
  // A tensor name with terminal escapes is shown made visible.
  {
    const auto ck = write_checkpoint(d / "esc", {{"model/w", at::ones({2})}});
    edit_manifest(ck, [](nlohmann::json& j) {
      j["tensors"]["model/\x1b]0;owned\x07"] = j["tensors"]["model/w"];
      j["checksum"] = manifest_checksum(j);
    });
    const std::string why = verify_checkpoint(ck.string()).problem();
    CHECK_THAT(why, Catch::Contains("model/^[]0;owned^G"));
    CHECK(why.find('\x1b') == std::string::npos);
  }
}

TEST_CASE("the table of hostile cases", "[hostile][table]") {
  // Runs after the cases above in one process (Catch runs test cases in declaration order).
  std::cout << "\n| family | case | exit | outcome | peak MB | s |\n|---|---|---|---|---|---|\n";
  for (const auto& r : rows()) {
    std::string o = r.outcome.substr(0, 110);
    for (auto& c : o)
      if (c == '|' || c == '\n') c = '/';
    std::cout << fmt::format("| {} | {} | {} | {} | {:.1f} | {:.2f} |\n", r.family, r.name, r.exit, o, r.peak_mb, r.seconds);
  }
  std::cout << std::flush;
}

TEST_CASE("a manifest integer written as a huge float is refused, never cast", "[checkpoint][hostile]") {
  // Fuzz checkpoint_manifest (regression crash-39bdbb79…): a shape of 4.5e21 parses as a double,
  // and nlohmann's get<int64_t> cast it as it was (undefined behaviour, UBSan).
  nlohmann::json j = {{"format_version", 1}, {"strategy", "ddp"}, {"world_size", 1}, {"step", 1},
                      {"tensors", {{"w", {{"shape", {4.5e21, 3}}, {"dtype", "float32"}, {"pieces", nlohmann::json::array()}}}}}};
  std::string text;
  try {
    manifest_from_json(j, "m.json");
  } catch (const mtrain::Error& e) {
    text = e.paragraph();
  }
  CHECK_THAT(text, Catch::Contains("m.json") && Catch::Contains("\"shape\" is 4.5e+21, not a whole number"));
}
