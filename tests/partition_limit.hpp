// A test's limit on the partitioned strategies' passes (core/partition.hpp's hook), for the cases
// that build against the library's internal headers.
#pragma once

#include <cstdint>

#include "core/partition.hpp"

namespace tally_test {

/// Partitioned fills in this scope take passes of at most `tiles` tiles of 8192 samples, so that
/// a few samples cross several passes.
class partition_pass_limit {
 public:
  explicit partition_pass_limit(std::int64_t tiles) { tally::detail::partition_pass_tiles() = tiles; }
  ~partition_pass_limit() { tally::detail::partition_pass_tiles() = 0; }
  partition_pass_limit(const partition_pass_limit&) = delete;
  partition_pass_limit& operator=(const partition_pass_limit&) = delete;
};

}  // namespace tally_test
