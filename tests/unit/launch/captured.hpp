#pragma once
// What a test wrote into a stdio stream (a tmpfile standing in for the console or a log).
#include <cstdio>
#include <string>

inline std::string slurp(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}
