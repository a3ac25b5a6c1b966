// The console fields and metrics.jsonl records of a training window and a validation pass
// (lib/trainer/loop/log_records.cpp).
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/trainer/loop/log_records.hpp"

using namespace mtrain::trainer;
using nlohmann::json;

namespace {
using Fields = std::vector<std::pair<std::string, std::string>>;
TrainWindow window() {
  TrainWindow w;
  w.step = 20;
  w.epoch = 2;
  w.iter = 5;
  w.lr = 3e-4;
  w.eta_s = 3725;
  w.time = 0.123456;
  w.data_time = 0.001;
  w.memory_mb = 512;
  w.loss = 2.345678;
  return w;
}
}  // namespace

TEST_CASE("log_records: a training window without clipping, in fp32", "[loop][log_records]") {
  const LogRecord r = train_log(window());
  CHECK(r.fields == Fields{{"lr", "3.0000e-04"}, {"eta", "1:02:05"}, {"time", "0.1235"}, {"data_time", "0.0010"},
                           {"memory", "512"}, {"loss", "2.3457"}});
  CHECK(r.record == json{{"mode", "train"}, {"step", 20}, {"epoch", 2}, {"iter", 5}, {"lr", 3e-4},
                         {"loss", 2.345678}, {"time", 0.123456}, {"data_time", 0.001}, {"memory", 512}});
}

TEST_CASE("log_records: grad norm and the fp16 loss scale when they apply", "[loop][log_records]") {
  TrainWindow w = window();
  w.grad_norm = 0.5;
  w.fp16 = true;
  w.loss_scale = 65536;
  w.skipped_steps = 3;
  const LogRecord r = train_log(w);
  REQUIRE(r.fields.size() == 8);
  CHECK(r.fields[6] == std::make_pair(std::string("grad_norm"), std::string("0.5000")));
  CHECK(r.fields[7] == std::make_pair(std::string("loss_scale"), std::string("65536")));
  CHECK(r.record["grad_norm"] == 0.5);
  CHECK(r.record["loss_scale"] == 65536.0);
  CHECK(r.record["skipped_steps"] == 3);
  w.grad_norm = 0;  // a zero norm is measured
  CHECK(train_log(w).record.contains("grad_norm"));
}

TEST_CASE("log_records: validation of a language model and of a classifier", "[loop][log_records]") {
  const LogRecord lm = val_log(40, 20.0, 10.0, 0.0, true, 1.5);
  CHECK(lm.record["mode"] == "val");
  CHECK(lm.record["step"] == 40);
  CHECK(lm.record["loss"] == 2.0);
  CHECK(lm.record["perplexity"].get<double>() == Approx(std::exp(2.0)));
  CHECK_FALSE(lm.record.contains("accuracy/top1"));
  CHECK(lm.fields == Fields{{"loss", "2.0000"}, {"perplexity", "7.3891"}, {"time", "1.5000"}});

  const LogRecord cls = val_log(40, 5.0, 8.0, 6.0, false, 0.25);
  CHECK(cls.record["accuracy/top1"] == 75.0);
  CHECK(cls.record["loss"] == 0.625);
  CHECK(cls.fields == Fields{{"accuracy/top1", "75.0000"}, {"loss", "0.6250"}, {"time", "0.2500"}});
  // No sample on any rank: divided by 1, not by 0.
  CHECK(val_log(1, 0.0, 0.0, 0.0, false, 0).record["loss"] == 0.0);
}
