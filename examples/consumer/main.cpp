// The C++ example of docs/cpp.md: a numpy-exact histogram and a bincount, on the CPU backend.
#include <tally/tally.hpp>

#include <cstdio>
#include <vector>

int main() {
  // numpy.histogram([0, 0.1, 0.2, 0.3, 0.05], bins=3, range=(0, 0.3)) -> [2, 1, 2]
  std::vector<double> x{0.0, 0.1, 0.2, 0.3, 0.05};
  tally::histogram h(tally::axis::regular(3, 0.0, 0.3));
  h.fill(tally::make_view(x.data(), static_cast<std::int64_t>(x.size())));
  for (auto c : h.counts()) std::printf("%llu ", static_cast<unsigned long long>(c));
  std::printf("\n");

  // numpy.bincount([0, 1, 1, 3, 2, 1, 7]) -> [1, 3, 1, 1, 0, 0, 0, 1]; the extra -4, which
  // numpy would reject, is dropped and counted as underflow
  std::vector<int> k{0, 1, 1, 3, 2, 1, 7, -4};
  tally::options opts;
  opts.flow = true;
  tally::histogram b(tally::axis::integer(0, 8), opts);
  b.fill(tally::make_view(k.data(), static_cast<std::int64_t>(k.size())));
  for (auto c : b.counts()) std::printf("%llu ", static_cast<unsigned long long>(c));
  std::printf("| underflow %llu\n", static_cast<unsigned long long>(b.flow().underflow));
  const bool right = h.counts() == std::vector<std::uint64_t>{2, 1, 2} &&
                     b.counts() == std::vector<std::uint64_t>{1, 3, 1, 1, 0, 0, 0, 1} &&
                     b.flow().underflow == 1;
  return right ? 0 : 1;
}
