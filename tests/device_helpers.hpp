// Shared by the device test files (device_*_test.cpp): the fixture that skips where no CUDA device
// is usable, the options of a device_histogram and of a tally::histogram filled from device memory,
// and device_histogram's comparisons with the reference.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "check.hpp"
#include "reference.hpp"
#include "tally/device.hpp"
#include "tally/tally.hpp"

namespace tally_test {

using tally::device_histogram;

class Device : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }
};

inline tally::options device_options(bool weighted = false) {
  tally::options o;
  o.flow = true;
  o.weighted = weighted;
  return o;
}

/// The device histogram's counts and flow equal the reference's.
inline void expect_matches(const device_histogram& h, const ref::result& want, void* s) {
  EXPECT_TRUE(same_elements(h.counts(s), want.counts)) << "counts";
  EXPECT_TRUE(same_flow(h.flow(s), want.flow));
}

/// expect_matches, or for a weighted histogram filled without weights its sums (of weights of 1)
/// equal to the reference's counts.
inline void expect_counted(const device_histogram& h, const ref::result& want, void* s) {
  if (!h.weighted()) return expect_matches(h, want, s);
  const std::vector<double> ones(want.counts.begin(), want.counts.end());
  EXPECT_TRUE(same_elements(h.sums(s), ones)) << "sums";
  EXPECT_TRUE(same_flow(h.flow(s), want.flow));
}

/// The options of a tally::histogram filled from device memory (device_options on the automatic
/// backend): its fills gather on the device, and every reader takes them first.
inline tally::options sync_options(bool weighted = false) {
  tally::options o = device_options(weighted);
  o.backend = tally::backend::automatic;
  return o;
}

}  // namespace tally_test
