#pragma once
// The machinery behind every choice setting's ONE name table. An enum class E that a setting
// chooses from specialises ChoiceTable<E> beside its declaration (train_choices.hpp,
// sharding_choices.hpp, launch_choices.hpp) with its rows; the registry's choice list, parsing
// and printing all come from those rows, so a value is spelled in exactly one place and code
// past the point where a job is read compares enums, never strings.
//
// A row may repeat an id under a second name (an alias such as slurm.pattern's task-per-gpu):
// parsing takes every row, printing the first row of an id, choice_names() lists every row.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "lib/core/error.hpp"

namespace mtrain::config {

template <class E>
struct ChoiceRow {
  E id;
  const char* name;
};

// Specialised per enum: `static constexpr const char* what` (the word errors use, "precision")
// and `static constexpr ChoiceRow<E> rows[]`.
template <class E>
struct ChoiceTable;

template <class E, class = void>
struct is_choice : std::false_type {};
template <class E>
struct is_choice<E, std::void_t<decltype(ChoiceTable<E>::rows)>> : std::true_type {};
template <class E>
using if_choice = std::enable_if_t<is_choice<E>::value, int>;

// "unknown <what> '<name>'", a did-you-mean among `names` (or the list of them), at `key`.
Error unknown_choice(std::string_view what, std::string_view name, const std::vector<std::string>& names,
                     const std::string& key);
// An id with no row: a table that lost a row its enum still has (a programming error).
[[noreturn]] void throw_missing_row(std::string_view what, int id);

// Every spelled name, in table order: the registry's choices for the setting.
template <class E, if_choice<E> = 0>
const std::vector<std::string>& choice_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& r : ChoiceTable<E>::rows) out.emplace_back(r.name);
    return out;
  }();
  return names;
}

template <class E, if_choice<E> = 0>
std::string to_string(E id) {
  for (const auto& r : ChoiceTable<E>::rows)
    if (r.id == id) return r.name;
  throw_missing_row(ChoiceTable<E>::what, static_cast<int>(id));
}

// After a switch over every value of E (no default, so -Wswitch names a missing case): a value
// outside the enum (a bad cast) ends here.
template <class E, if_choice<E> = 0>
[[noreturn]] void no_such_value(E id) {
  throw_missing_row(ChoiceTable<E>::what, static_cast<int>(id));
}

// nullopt for a name the table does not have (the caller words the error with its context).
template <class E, if_choice<E> = 0>
std::optional<E> parse_choice(std::string_view name) {
  for (const auto& r : ChoiceTable<E>::rows)
    if (name == r.name) return r.id;
  return std::nullopt;
}

// As parse_choice, but an unknown name throws mtrain::Error naming `key`, the value and a
// did-you-mean.
template <class E, if_choice<E> = 0>
E choice_from_text(std::string_view name, const std::string& key) {
  if (auto id = parse_choice<E>(name)) return *id;
  throw unknown_choice(ChoiceTable<E>::what, name, choice_names<E>(), key);
}

}  // namespace mtrain::config
