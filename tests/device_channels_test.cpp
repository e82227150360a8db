// fill_channels into device_histograms: interleaved channels of 8- and 16-bit device samples, in
// one pass or one by one, each channel compared with the reference. Skipped, never passed, where
// no CUDA device is usable.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "check.hpp"
#include "device_helpers.hpp"
#include "device_memory.hpp"
#include "random_data.hpp"
#include "tally/device.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

TEST_F(Device, InterleavedChannelsInOnePassOrOneByOne) {
  // 2-4 channels of 8-bit samples into unweighted histograms take one pass (a channel without a
  // histogram is skipped, the pixels may start anywhere); 5 channels, 16-bit samples and
  // weighted histograms fill one by one, each channel a strided column. Two fills accumulate.
  const stream s;
  std::uint64_t seed = 7800;
  for (dtype t : {dtype::u8, dtype::i8, dtype::i16}) {
    const std::int64_t lo = t == dtype::u8 ? 0 : -128;
    // The last two take every value, so that each channel of one-bin data bins something.
    const std::vector<axis_spec> specs = {integer_spec(lo, 256), regular_spec(17, lo + 10.5, lo + 200.0),
                                          variable_spec(40, lo + 3.5, lo + 250.5, 11),
                                          regular_spec(7, lo - 0.5, lo + 255.5), variable_spec(9, lo - 1.5, lo + 256.5, 12)};
    for (int channels : {2, 3, 4, 5}) {
      for (dist d : {dist::uniform, dist::one_bin, dist::mostly_one_bin, dist::sorted}) {
        for (bool weighted : {false, true}) {
          ++seed;
          if (weighted && seed % 3) continue;  // a third of the cases: the one-by-one path
          const int active = static_cast<int>(seed % 2) ? channels : channels - 1;
          const std::int64_t offset = static_cast<std::int64_t>(seed % 4) * channels;
          const column host = random_column_for(specs[0], t, d, channels * 100001 + offset, seed);
          const device_column dev(host.view());
          const tally::view v = slice(dev.view(), offset, host.n);
          const tally::view hv = slice(host.view(), offset, host.n);
          SCOPED_TRACE(std::string(tally::name_of(t)) + " " + std::to_string(channels) + " channels, " +
                       std::to_string(active) + " active, " + name_of(d) + (weighted ? ", weighted" : "") +
                       ", offset " + std::to_string(offset));
          std::vector<device_histogram> hs;
          for (int k = 0; k < active; ++k)
            hs.emplace_back(specs[static_cast<std::size_t>(k)].make(), device_options(weighted), s.get());
          tally::fill_channels(hs, v, channels, s.get());
          tally::fill_channels(hs, v, channels, s.get());
          for (int k = 0; k < active; ++k) {
            SCOPED_TRACE("channel " + std::to_string(k));
            const ref::result r = channel_reference(specs[static_cast<std::size_t>(k)], hv, k, channels, 2);
            ASSERT_GT(binned(r), 0u);
            expect_counted(hs[static_cast<std::size_t>(k)], r, s.get());
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tally_test
