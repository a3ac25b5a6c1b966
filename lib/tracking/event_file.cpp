#include "lib/tracking/event_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/tracking/record_framing.hpp"
#include "tensorboard_event.pb.h"

namespace mtrain::tracking {

namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir, double wall_time) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string base = fmt::format("{}/events.out.tfevents.{}.{}", dir, static_cast<int64_t>(wall_time), host_name());
  path_ = base;
  // A second writer in the same second (a resume right after a failure) gets its own file.
  for (int i = 1; fs::exists(path_); ++i) path_ = fmt::format("{}.{}", base, i);
  if (!ec) out_.open(path_, std::ios::binary | std::ios::trunc);
  if (ec || !out_) {
    throw Error(fmt::format("{}: cannot create the TensorBoard event file{}", path_,
                            ec ? ": " + ec.message() : std::string()),
                "set log.tensorboard to a folder you can write, or leave it empty to write no event files",
                kExitFailure);
  }
  tb::Event e;
  e.set_wall_time(wall_time);
  e.set_file_version("brain.Event:2");
  write(e.SerializeAsString());
}

void EventFileWriter::scalars(int64_t step, double wall_time, const std::vector<Scalar>& values) {
  tb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  for (const Scalar& s : values) {
    tb::Summary::Value* v = e.mutable_summary()->add_value();
    v->set_tag(s.tag);
    v->set_simple_value(static_cast<float>(s.value));
  }
  write(e.SerializeAsString());
}

void EventFileWriter::text(const std::string& tag, int64_t step, double wall_time, const std::string& markdown) {
  tb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  tb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  // The text plugin's data: its name and an empty TextPluginData (version 0).
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tb::TensorProto* t = v->mutable_tensor();
  t->set_dtype(7);  // DT_STRING, a scalar (no dims)
  t->mutable_tensor_shape();
  t->add_string_val(markdown);
  write(e.SerializeAsString());
}

void EventFileWriter::session_start(int64_t step, double wall_time) {
  tb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  e.mutable_session_log()->set_status(1);  // START
  write(e.SerializeAsString());
}

void EventFileWriter::write(const std::string& event_bytes) {
  out_ << frame_record(event_bytes);
  out_.flush();
}

}  // namespace mtrain::tracking
