// The planner's CUDA rules, on any machine: plan() is pure and takes the device's figures as data.
#include <gtest/gtest.h>

#include "tally/tally.hpp"

namespace {

tally::plan_request h100_request(std::int64_t cells) {
  tally::plan_request r;
  r.where = tally::backend::cuda;
  r.cells = cells;
  r.n = std::int64_t{1} << 28;
  r.sample = tally::dtype::i32;
  r.device_sms = 132;
  r.device_shared_bytes = 232448;  // an H100's opt-in shared memory per block
  return r;
}

TEST(CudaPlan, SharedWhenTheCountersFitAndWarpAggregatedBeyond) {
  const auto small = tally::plan(h100_request(4096));
  EXPECT_EQ(small.where, tally::backend::cuda);
  EXPECT_EQ(small.chosen, tally::strategy::shared);
  EXPECT_EQ(small.grid_blocks, 4 * 132);
  EXPECT_EQ(small.block_threads, 256);
  EXPECT_EQ(tally::plan(h100_request(58109)).chosen, tally::strategy::shared);  // (58109 + 3) * 4 = 232448
  EXPECT_EQ(tally::plan(h100_request(58110)).chosen, tally::strategy::warp_aggregated);
  EXPECT_NE(tally::describe(small).find("blocks x 256 threads"), std::string::npos);
}

TEST(CudaPlan, HonoursTheAskedStrategyOrSaysWhyNot) {
  auto r = h100_request(256);
  r.wanted = tally::strategy::global_atomic;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::global_atomic);
  r.wanted = tally::strategy::cpu_private;
  EXPECT_THROW(tally::plan(r), tally::error);
  r = h100_request(1 << 20);
  r.wanted = tally::strategy::shared;
  EXPECT_THROW(tally::plan(r), tally::error);
  r = h100_request(256);
  r.weighted = true;
  EXPECT_THROW(tally::plan(r), tally::error);
  r = h100_request(256);
  r.where = tally::backend::cpu;
  r.wanted = tally::strategy::shared;
  EXPECT_THROW(tally::plan(r), tally::error);
}

TEST(CudaPlan, StrategyNamesRoundTrip) {
  for (auto s : {tally::strategy::global_atomic, tally::strategy::warp_aggregated, tally::strategy::shared})
    EXPECT_EQ(tally::strategy_from_name(tally::name_of(s)), s);
  EXPECT_EQ(tally::name_of(tally::strategy::global_atomic), "global_atomic");
}

}  // namespace
