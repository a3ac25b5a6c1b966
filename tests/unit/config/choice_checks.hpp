#pragma once
// One check for a choice setting's name table (lib/config/choice_table.hpp), used by the tests
// of train_choices.hpp, sharding_choices.hpp and launch_choices.hpp: every enum value has a name
// and comes back from it, the registry offers exactly the table's names for `key` with a default
// that is one of them, and an unknown name fails naming the key with a did-you-mean.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "lib/config/choice_table.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"

namespace mtrain::testing {

template <class E>
void check_choice_table(const std::string& key, const std::vector<E>& every_value) {
  using namespace mtrain::config;
  INFO("setting " << key);
  const std::vector<std::string>& names = choice_names<E>();
  std::set<E> named;
  for (const auto& n : names) {
    INFO("name " << n);
    const auto id = parse_choice<E>(n);
    REQUIRE(id.has_value());
    named.insert(*id);
    // An alias prints as its id's first name, which parses back to the same id.
    CHECK(parse_choice<E>(to_string(*id)) == id);
  }
  for (const E v : every_value) {
    INFO("enum value " << static_cast<int>(v));
    CHECK(named.count(v) == 1);
    CHECK(choice_from_text<E>(to_string(v), key) == v);
  }
  CHECK(named.size() == every_value.size());

  const Setting* s = job_registry().find(key);
  REQUIRE(s != nullptr);
  CHECK(s->type == Type::Choice);
  CHECK(s->choices == names);
  CHECK(parse_choice<E>(s->default_value.get<std::string>()).has_value());

  CHECK_FALSE(parse_choice<E>("").has_value());
  const std::string typo = names.front() + "x";
  try {
    (void)choice_from_text<E>(typo, key);
    FAIL("'" << typo << "' was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.paragraph(), Catch::Contains(key) && Catch::Contains("'" + typo + "'") &&
                                  Catch::Contains("did you mean '" + names.front() + "'"));
  }
}

}  // namespace mtrain::testing
