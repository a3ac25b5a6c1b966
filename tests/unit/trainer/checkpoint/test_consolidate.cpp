// `checkpoint consolidate`: the streamed state dict equals the trainer's model.pt (C++ and
// Python's torch.load), in fp32 and bf16, while holding about one tensor in memory at a time.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include "helpers.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/checkpoint_cli.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"
#include "lib/trainer/checkpoint/consolidate.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

std::pair<int, std::string> sh(const std::string& cmd) {
  FILE* p = popen(("timeout 120 " + cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace

TEST_CASE("consolidate streams the shards into the model's state dict", "[checkpoint]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("consolidate");
  auto j = small_job(d);
  mtrain::config::set(j, "model.n_layer", 4);
  mtrain::config::set(j, "train.max_steps", 6);
  run_job(j, 3);  // world 3: every tensor is split across three shard files
  const auto ck = complete_checkpoints((d / "checkpoints").string()).back().second;
  const auto model = load_dict(d / "model.pt");
  REQUIRE(!model.empty());

  ConsolidateOptions o;
  o.dir = ck;
  o.output = (d / "consolidated.pt").string();
  auto& alloc = counting_allocator();
  alloc.reset_peak();
  const int64_t before = alloc.live();
  const ConsolidateResult r = consolidate_checkpoint(o);
  const int64_t peak = alloc.peak() - before;
  int64_t model_bytes = 0;
  for (const auto& [k, v] : model) model_bytes += v.numel() * 4;
  CHECK(r.tensors == static_cast<int64_t>(model.size()));
  // Streaming: the peak extra memory is a small multiple of the largest tensor, far below the
  // model (which a load-everything consolidation would hold twice over).
  INFO("peak " << peak << " bytes; largest tensor " << r.largest_tensor_bytes << "; model " << model_bytes);
  CHECK(peak <= 3 * r.largest_tensor_bytes + (1 << 20));
  CHECK(peak < model_bytes / 2);

  const auto cons = load_dict(d / "consolidated.pt");
  REQUIRE(cons.size() == model.size());
  for (const auto& [k, v] : model) {
    INFO(k);
    REQUIRE(cons.count(k));
    CHECK(cons.at(k).sizes() == v.sizes());
    CHECK(cons.at(k).scalar_type() == at::kFloat);
    CHECK(at::equal(cons.at(k), v));
  }
  // The order of named_parameters() is kept.
  const Manifest m = read_manifest(ck);
  std::vector<std::string> order;
  for (const auto& n : m.order) {
    if (n.rfind("model/", 0) == 0) order.push_back(n.substr(6));
  }
  std::vector<std::string> written;
  for (const auto& [k, v] : read_tensor_dict((d / "consolidated.pt").string())) written.push_back(k);
  CHECK(written == order);
  CHECK(order.front() == "wte.weight");

  // bf16 through the CLI entry point.
  std::ostringstream out, err;
  const int rc = run_checkpoint_command({"consolidate", ck, "-o", (d / "bf16.pt").string(), "--dtype", "bf16"},
                                        out, err);
  CHECK(rc == 0);
  CHECK_THAT(out.str(), Catch::Contains("bf16.pt") && Catch::Contains("tensors"));
  const auto b16 = load_dict(d / "bf16.pt");
  for (const auto& [k, v] : model) {
    INFO(k);
    CHECK(b16.at(k).scalar_type() == at::kBFloat16);
    CHECK(at::equal(b16.at(k), v.to(at::kBFloat16)));
  }

  // Python's torch.load reads the same names, shapes and values.
  const std::string py = R"(
import sys, torch
a = torch.load(sys.argv[1]); b = torch.load(sys.argv[2]); c = torch.load(sys.argv[3])
assert list(a.keys()) == list(b.keys()), (list(a.keys()), list(b.keys()))
for k in a:
    assert a[k].shape == b[k].shape and torch.equal(a[k], b[k]), k
    assert c[k].dtype == torch.bfloat16 and torch.equal(c[k], a[k].to(torch.bfloat16)), k
print("python-ok", len(a))
)";
  std::ofstream(d / "check.py") << py;
  const auto [prc, pout] = sh("/usr/bin/python3 " + (d / "check.py").string() + " " +
                              (d / "consolidated.pt").string() + " " + (d / "model.pt").string() + " " +
                              (d / "bf16.pt").string());
  INFO(pout);
  CHECK(prc == 0);
  CHECK_THAT(pout, Catch::Contains("python-ok"));
}

TEST_CASE("checkpoint inspect and verify report strategy, sizes and damage", "[checkpoint]") {
  at::set_num_threads(1);
  const auto d = fresh_dir("inspect");
  auto j = small_job(d, "mlp");
  mtrain::config::set(j, "train.max_steps", 4);
  run_job(j, 2);
  const auto ck = complete_checkpoints((d / "checkpoints").string()).back().second;
  const json r = inspect_checkpoint(ck);
  CHECK(r["strategy"] == "ddp");
  CHECK(r["world_size"] == 2);
  CHECK(r["step"] == 4);
  CHECK(r["verification"]["ok"] == true);
  CHECK(r["verification"]["checksums"] == true);
  CHECK(r["num_params"].get<int64_t>() > 0);
  CHECK(r["tensors"].size() > 3);
  std::ostringstream out, err;
  CHECK(run_checkpoint_command({"verify", ck}, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("ok (2 files"));

  flip_byte(fs::path(ck) / "shard_rank0.pt");
  std::ostringstream out2, err2;
  CHECK(run_checkpoint_command({"verify", ck}, out2, err2) == 1);
  CHECK_THAT(err2.str(), Catch::Contains("shard_rank0.pt") && Catch::Contains("checksum mismatch"));
  std::ostringstream out3, err3;
  CHECK(run_checkpoint_command({"inspect", ck, "--format", "json"}, out3, err3) == 1);
  const json bad = json::parse(out3.str());
  CHECK(bad["verification"]["ok"] == false);
  ConsolidateOptions o;
  o.dir = ck;
  o.output = (d / "x.pt").string();
  CHECK_THROWS_WITH(consolidate_checkpoint(o), Catch::Contains("checksum mismatch"));
  CHECK_FALSE(fs::exists(d / "x.pt"));

  std::ostringstream o4, e4;
  CHECK_THROWS_WITH(run_checkpoint_command({"consolidate", ck}, o4, e4), Catch::Contains("-o FILE"));
  CHECK_THROWS_WITH(run_checkpoint_command({"consolidate", ck, "-o", "y.pt", "--dtype", "fp8"}, o4, e4),
                    Catch::Contains("fp8"));
  CHECK_THROWS_WITH(run_checkpoint_command({"inspect", (d / "nope").string()}, o4, e4),
                    Catch::Contains("not a folder"));
}
