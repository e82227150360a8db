// bincount's one-pass plan and its learned length (tally/bincount.hpp).
#include "tally/bincount.hpp"

#include <algorithm>
#include <atomic>

#include "tally/plan.hpp"

namespace tally {
namespace {

constexpr std::int64_t kGuessMin = std::int64_t{1} << 12, kGuessMax = std::int64_t{1} << 20;
// From this many samples in CUDA memory the pass saved (64 MiB of i32: ~22 us) outweighs the cut
// (bench/PERFORMANCE.md, "Python call path").
constexpr std::int64_t kOnePassCuda = std::int64_t{1} << 24;

// Small host calls (fewer samples than host_call_max_samples) count without this plan.
static_assert(kGuessMin == host_call_max_samples, "the learned length starts where small host calls end");

std::atomic<std::int64_t> guess{kGuessMin};

/// The number of values of an 8- or 16-bit type from 0 up (0: wider types, no cap).
std::int64_t values_from_zero(dtype t) {
  switch (t) {
    case dtype::u8:
      return 256;
    case dtype::i8:
      return 128;
    case dtype::u16:
      return 65536;
    case dtype::i16:
      return 32768;
    default:
      return 0;
  }
}

}  // namespace

bincount_plan plan_bincount(bool on_cuda, std::int64_t n, dtype sample, std::int64_t minlength, bool weighted) {
  bincount_plan p;
  const std::int64_t learned = guess.load(std::memory_order_relaxed);
  p.learn = !weighted && minlength == 0 && n >= (on_cuda ? kOnePassCuda : learned);
  p.length = p.learn ? learned : minlength;
  if (p.learn && values_from_zero(sample)) p.length = std::min(p.length, values_from_zero(sample));
  return p;
}

void remember_bincount_length(std::int64_t length) {
  std::int64_t power = 1;
  while (power < length && power < kGuessMax) power <<= 1;
  guess.store(std::clamp(power, kGuessMin, kGuessMax), std::memory_order_relaxed);
}

std::int64_t bincount_guess() { return guess.load(std::memory_order_relaxed); }
void reset_bincount_guess() { guess.store(kGuessMin, std::memory_order_relaxed); }

}  // namespace tally
