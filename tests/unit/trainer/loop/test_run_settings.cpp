// The settings a checkpoint keeps of the run that wrote it (lib/trainer/loop/run_settings.cpp),
// and what a resume under other values is told.
#include <catch2/catch.hpp>

#include "lib/trainer/loop/run_settings.hpp"

using namespace mtrain::trainer;
using nlohmann::json;

namespace {
json settings(int max_steps, double lr) {
  return {{"model", {{"name", "gpt"}, {"path", ""}}},
          {"data", {{"name", "tokens"}, {"path", "data.bin"}}},
          {"train", {{"max_steps", max_steps}, {"max_epochs", 0}, {"seed", 1}, {"batch_size", 8}}},
          {"optim", {{"lr", lr}}},
          {"strategy", "fsdp"}};
}
}  // namespace

TEST_CASE("run_settings: what the run trains, not how it is split", "[loop][run_settings]") {
  const json s = run_settings(settings(50, 0.001));
  CHECK(s.at("train.max_steps") == 50);
  CHECK(s.at("model.name") == "gpt");
  CHECK(s.at("optim.lr") == 0.001);
  CHECK(s.size() == 8);
  CHECK_FALSE(s.contains("strategy"));
  CHECK_FALSE(s.contains("train.batch_size"));
  // A job made in code may carry none of them, or part of a path.
  CHECK(run_settings(json::object()).empty());
  CHECK(run_settings(json{{"train", 3}, {"optim", {{"lr", 0.1}}}}) == json{{"optim.lr", 0.1}});
}

TEST_CASE("changed_settings: each difference with the value it had and has", "[loop][run_settings]") {
  const json saved = {{"settings", run_settings(settings(50, 0.001))}};
  CHECK(changed_settings(saved, settings(50, 0.001)).empty());
  CHECK(changed_settings(saved, settings(10, 0.001)) == std::vector<std::string>{"train.max_steps 50 (now 10)"});
  CHECK(changed_settings(saved, settings(10, 0.01)).size() == 2);
  // A checkpoint written before settings were kept, or a setting this run does not carry: no note.
  CHECK(changed_settings(json::object(), settings(10, 0.01)).empty());
  CHECK(changed_settings(json{{"settings", "old"}}, settings(10, 0.01)).empty());
  CHECK(changed_settings(saved, json::object()).empty());
  // Text from a checkpoint is shown as visible text, never as control characters.
  const json odd = {{"settings", {{"data.path", "a\x1b[2Jb"}}}};
  const auto c = changed_settings(odd, settings(50, 0.001));
  REQUIRE(c.size() == 1);
  CHECK(c[0].find('\x1b') == std::string::npos);
}
