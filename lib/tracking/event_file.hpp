#pragma once
// A TensorBoard event file: `events.out.tfevents.<seconds>.<host>` in one folder (TensorBoard's
// run), each record an Event protobuf (tensorboard_event.proto) framed as TFRecord
// (record_framing.hpp). Records are flushed as they are written, so a TensorBoard watching the
// folder shows a run while it trains.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace mtrain::tracking {

struct Scalar {
  std::string tag;
  double value = 0;
};

class EventFileWriter {
 public:
  // Creates `dir` (and its parents) and a new event file in it, starting with the file_version
  // record TensorBoard expects first. Throws mtrain::Error naming log.tensorboard when it cannot.
  EventFileWriter(const std::string& dir, double wall_time);

  void scalars(int64_t step, double wall_time, const std::vector<Scalar>& values);
  // A text summary (TensorBoard's Text tab renders it as Markdown).
  void text(const std::string& tag, int64_t step, double wall_time, const std::string& markdown);
  // A run that continues this folder (a resume) from `step`: TensorBoard drops the events this
  // folder already holds at or after `step` (the steps a killed run logged past its checkpoint).
  void session_start(int64_t step, double wall_time);

  const std::string& path() const { return path_; }
  bool good() const { return out_.good(); }

 private:
  void write(const std::string& event_bytes);

  std::string path_;
  std::ofstream out_;
};

}  // namespace mtrain::tracking
