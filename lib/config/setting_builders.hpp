#pragma once
// Internal to lib/config: small constructors for registry entries, shared by the files that
// fill job_registry() (job_settings.cpp, strategy_settings.cpp, launch_settings.cpp).
#include "lib/config/registry.hpp"

namespace mtrain::config::detail {


inline Setting choice(std::string key, std::string def, std::vector<std::string> choices, std::string help,
               std::string flag = {}) {
  Setting s;
  s.key = std::move(key);
  s.type = Type::Choice;
  s.default_value = std::move(def);
  s.choices = std::move(choices);
  s.help = std::move(help);
  s.flag = std::move(flag);
  return s;
}

inline Setting integer(std::string key, long long def, std::optional<double> min, std::optional<double> max,
                std::string help, std::string flag = {}) {
  Setting s;
  s.key = std::move(key);
  s.type = Type::Int;
  s.default_value = def;
  s.min = min;
  s.max = max;
  s.help = std::move(help);
  s.flag = std::move(flag);
  return s;
}

inline Setting number(std::string key, double def, std::optional<double> min, std::optional<double> max,
               std::string help, std::string flag = {}) {
  Setting s = integer(std::move(key), 0, min, max, std::move(help), std::move(flag));
  s.type = Type::Float;
  s.default_value = def;
  return s;
}

inline Setting text(std::string key, std::string def, std::string help, std::string flag = {}) {
  Setting s;
  s.key = std::move(key);
  s.type = Type::String;
  s.default_value = std::move(def);
  s.help = std::move(help);
  s.flag = std::move(flag);
  return s;
}

inline Setting boolean(std::string key, bool def, std::string help, std::string flag = {}) {
  Setting s;
  s.key = std::move(key);
  s.type = Type::Bool;
  s.default_value = def;
  s.help = std::move(help);
  s.flag = std::move(flag);
  return s;
}

// Sections that live in their own files, added by job_registry() in this order.
void add_strategy_settings(Registry& r);   // zero.*, fsdp.*
void add_precision_settings(Registry& r);  // precision.* (loss scaling)
void add_launch_settings(Registry& r);     // launch.*
void add_slurm_settings(Registry& r);      // slurm.*

}  // namespace mtrain::config::detail
