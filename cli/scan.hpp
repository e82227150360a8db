// The exact minimum and maximum of each column of the samples, NaN ignored: the data pass.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tally/dtype.hpp"

namespace tally_cli {

/// A sample value held exactly in its own kind: 64-bit integers do not fit a double, and a
/// float is printed shortest as a float (0.1, not 0.10000000149011612).
using exact = std::variant<std::int64_t, std::uint64_t, float, double>;

double to_double(const exact& v);
/// The value as an int64 when it is an integer that fits one.
std::optional<std::int64_t> to_int64(const exact& v);
/// Shortest text that reads back as the same value.
std::string to_text(const exact& v);

struct extrema {
  bool any = false;  // whether any non-NaN value was seen
  exact lo{0.0}, hi{0.0};
};

/// Accumulates extrema over interleaved rows of `columns` values, chunk by chunk, and where
/// asked every value but NaN in the samples' own type, per column (the bin estimators read them
/// all).
class scanner {
 public:
  scanner(tally::dtype type, int columns, bool keep_values = false);
  ~scanner();
  /// `values` is a multiple of the column count.
  void add(const void* data, std::int64_t values);
  std::vector<extrema> result() const;
  /// Column c's values but NaN in the order read, of the samples' type (keep_values only).
  tally::view values(int c) const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace tally_cli
