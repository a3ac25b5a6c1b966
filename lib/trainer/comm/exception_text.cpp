#include "mtrain/trainer/comm/exception_text.hpp"

#include <c10/util/Exception.h>

namespace mtrain::trainer {

std::string without_backtrace(const std::string& what) {
  std::string out = what;
  for (const char* marker : {"\nException raised from ", "\nframe #"}) {
    const auto at = out.find(marker);
    if (at != std::string::npos) out.erase(at);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ' || out.back() == '\t')) out.pop_back();
  return out;
}

std::string exception_text(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return without_backtrace(c->what_without_backtrace());
  return without_backtrace(e.what());
}

}  // namespace mtrain::trainer
