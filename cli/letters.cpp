// The letter modes fold case in a byte map and leave the grouping to the axis: bins over the
// byte codes of the lower-case letters.
#include "letters.hpp"

#include <algorithm>

#include "errors.hpp"

namespace tally_cli {
namespace {

/// a-z as they are, A-Z as a-z, every other byte as 0: below the first bin ('a'), so it is
/// dropped (counted as underflow).
byte_map folded_letters() {
  byte_map map{};
  for (int c = 'a'; c <= 'z'; ++c) {
    map[c] = static_cast<std::uint8_t>(c);
    map[c - 'a' + 'A'] = static_cast<std::uint8_t>(c);
  }
  return map;
}

constexpr const char* kDropped = "not letters";

}  // namespace

const std::vector<std::string>& text_mode_names() {
  static const std::vector<std::string> names = {"groups", "letters", "bytes"};
  return names;
}

text_mode text_mode_from_name(const std::string& name) {
  const auto& names = text_mode_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) throw usage_error("--text=" + name + ": the mode is groups, letters or bytes");
  return static_cast<text_mode>(it - names.begin());
}

text_bins text_bins_of(text_mode mode) {
  switch (mode) {
    case text_mode::groups: {
      // Bins from the codes of a, e, i, m, q, u and y up to 'z' + 1; the last bin (y-z) is
      // closed, as every last bin is, but no byte is mapped to 'z' + 1.
      named_bins named{"letter groups, A-Z as a-z", "letter group", kDropped, {}};
      std::vector<double> edges;
      for (int first = 'a'; first <= 'z'; first += 4) {
        edges.push_back(first);
        named.labels.push_back(std::string(1, static_cast<char>(first)) + "-" +
                               static_cast<char>(std::min(first + 3, int{'z'})));
      }
      edges.push_back('z' + 1);
      return {folded_letters(), tally::axis::variable(edges), named};
    }
    case text_mode::letters: {
      named_bins named{"letters, A-Z as a-z", "letter", kDropped, {}};
      for (char c = 'a'; c <= 'z'; ++c) named.labels.emplace_back(1, c);
      return {folded_letters(), tally::axis::integer('a', 'z' + 1), named};
    }
    case text_mode::bytes:
      break;
  }
  return {std::nullopt, tally::axis::integer(0, 256), std::nullopt};
}

}  // namespace tally_cli
