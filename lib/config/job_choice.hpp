#pragma once
// The value of a choice setting in a resolved job, as its enum (choice_table.hpp). The job has
// passed the registry's checks, so the name is one of the table's; a job that has not (a
// hand-built one) fails with the key named.
#include <string>

#include "lib/config/choice_table.hpp"
#include "lib/config/registry.hpp"

namespace mtrain::config {

template <class E, if_choice<E> = 0>
E choice_at(const json& job, const std::string& key) {
  return choice_from_text<E>(get(job, key).get<std::string>(), key);
}

}  // namespace mtrain::config
