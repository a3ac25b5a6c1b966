#include "lib/trainer/comm/exception_text.hpp"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace mtrain::trainer {

namespace {

constexpr const char* kBacktraceMarkers[] = {"\nException raised from ", "\nframe #"};

std::size_t backtrace_start(const std::string& what) {
  std::size_t at = std::string::npos;
  for (const char* marker : kBacktraceMarkers) at = std::min(at, what.find(marker));
  return at;
}

void trim_right(std::string& s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from <= s.size()) {
    const std::size_t nl = s.find('\n', from);
    std::string line = s.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
    trim_right(line);
    out.push_back(std::move(line));
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

// "RuntimeError: …", "IndexError: …", "torch.jit.Error: …" at the start of a line: the error line
// the interpreter writes after the traceback (Python's exception class, then the message).
bool is_error_line(const std::string& line) {
  const std::size_t colon = line.find(": ");
  if (colon == std::string::npos || colon == 0) return false;
  const std::string cls = line.substr(0, colon);
  for (char c : cls)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return cls.size() >= 5 && (cls.compare(cls.size() - 5, 5, "Error") == 0 ||
                             (cls.size() >= 9 && cls.compare(cls.size() - 9, 9, "Exception") == 0));
}

}  // namespace

std::string without_backtrace(const std::string& what) {
  std::string out = what;
  const std::size_t at = backtrace_start(out);
  if (at != std::string::npos) out.erase(at);
  trim_right(out);
  return out;
}

std::string backtrace_of(const std::string& what) {
  const std::size_t at = backtrace_start(what);
  if (at == std::string::npos) return "";
  std::string out = what.substr(at + 1);
  trim_right(out);
  return out;
}

std::string exception_text(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return without_backtrace(c->what_without_backtrace());
  return without_backtrace(e.what());
}

ScriptError split_script_error(const std::string& text) {
  std::vector<std::string> lines = lines_of(text);
  ScriptError out;
  const bool interpreter = !lines.empty() && lines.front().find("failed in the TorchScript interpreter") != std::string::npos;
  // The last error line at the left margin: the traceback's source lines are indented.
  std::size_t err = lines.size();
  if (interpreter)
    for (std::size_t i = lines.size(); i-- > 1;)
      if (is_error_line(lines[i])) {
        err = i;
        break;
      }
  if (!interpreter || err == lines.size()) {
    std::vector<std::string> kept(lines.begin(), lines.end());
    for (std::size_t i = 0; i < kept.size(); ++i) out.error += (i ? "\n" : "") + kept[i];
    return out;
  }
  out.error = lines[err];
  // After the error line the interpreter repeats the message when C++ stack traces are on
  // (TORCH_SHOW_CPP_STACKTRACES): the repeat is dropped, anything else is the message's own.
  const std::string message = lines[err].substr(lines[err].find(": ") + 2);
  for (std::size_t i = err + 1; i < lines.size(); ++i)
    if (lines[i] != message && !lines[i].empty()) out.error += "\n" + lines[i];
  // A model saved with its debug info has two tracebacks: the serialized code ("code/__torch__.py")
  // and the user's own Python source; the user's is the one they can act on.
  auto from = lines.begin() + 1;
  for (auto it = from; it != lines.begin() + static_cast<std::ptrdiff_t>(err); ++it)
    if (it->rfind("Traceback of TorchScript, original code", 0) == 0) from = it;
  std::vector<std::string> tb;
  for (auto it = from; it != lines.begin() + static_cast<std::ptrdiff_t>(err); ++it)
    if (!it->empty()) tb.push_back(*it);
  if (tb.size() > kMaxTracebackLines) {
    // The innermost calls are nearest the error: the head (the user's own call) and the tail kept.
    const std::size_t head = kMaxTracebackLines / 3, tail = kMaxTracebackLines - head;
    std::vector<std::string> cut(tb.begin(), tb.begin() + static_cast<std::ptrdiff_t>(head));
    cut.push_back(fmt::format("  … {} lines of the traceback left out", tb.size() - head - tail));
    cut.insert(cut.end(), tb.end() - static_cast<std::ptrdiff_t>(tail), tb.end());
    tb = std::move(cut);
  }
  out.traceback = std::move(tb);
  return out;
}

ScriptError script_error(const std::exception& e) { return split_script_error(exception_text(e)); }

}  // namespace mtrain::trainer
