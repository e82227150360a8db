// bincount's plan: whether a call counts in one pass into a guessed length or finds the maximum
// first, decided here for the Python package (and any caller) from the call's size and place.
#pragma once

#include <cstdint>

#include "tally/dtype.hpp"

namespace tally {

/// How bincount counts samples whose maximum it does not know. length > 0: one pass into
/// integer bins [0, length), then only the samples beyond (their count comes back with the
/// flow) ask for the maximum and a second pass; length 0: the maximum first, then one pass.
struct bincount_plan {
  std::int64_t length = 0;
  /// The result is cut after its last nonzero count, and its length remembered as the next
  /// unweighted call's guess (remember_bincount_length).
  bool learn = false;
};

/// The plan for n samples of type `sample` in CUDA memory or host memory, with `minlength` (a
/// length that covers the samples is a one pass into it) and weights or not. Without minlength,
/// unweighted calls of many samples guess the last such call's length: in CUDA memory from 2^24
/// samples (below, the cut's read-back and copy cost more than the pass they save: a 16-sample
/// call took 166 us against 90), on the host from as many samples as the guess has bins (fewer
/// samples than zeroed cells cost more than reading them). Weighted sums cannot tell where the
/// data end (a bin's weights may add to 0): they guess minlength only. 8- and 16-bit samples
/// never guess beyond their type's largest value.
bincount_plan plan_bincount(bool on_cuda, std::int64_t n, dtype sample, std::int64_t minlength, bool weighted);

/// Remembers a learned call's length: the next guess is the power of two at or above it, within
/// [2^12, 2^20]. Thread-safe.
void remember_bincount_length(std::int64_t length);
/// The current guess, and the guess reset to 2^12 (tally.clear_caches()).
std::int64_t bincount_guess();
void reset_bincount_guess();

}  // namespace tally
