// The planner's CUDA rules, on any machine: plan() is pure and takes the device's figures as data.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "partition_limit.hpp"
#include "tally/tally.hpp"

namespace {

using tally_test::partition_pass_limit;

tally::plan_request h100_request(std::int64_t cells, tally::dtype sample = tally::dtype::i32) {
  tally::plan_request r;
  r.where = tally::backend::cuda;
  r.cells = cells;
  r.n = std::int64_t{1} << 28;
  r.sample = sample;
  r.kind = tally::axis_kind::integer;
  r.contiguous = true;
  r.device_sms = 132;
  r.device_shared_bytes = 232448;   // an H100's opt-in shared memory per block
  r.device_shared_per_sm = 233472;  // and per multiprocessor
  return r;
}

TEST(CudaPlan, ReplicatedWhereCopiesFitSharedUpToTheLimitWarpAggregatedBeyond) {
  // 4099 counters x 4 bytes x 4 copies = 65584 bytes: the most copies within half of the
  // multiprocessor's 228 KiB (less 1 KiB per block); three such blocks fit per multiprocessor.
  const auto p = tally::plan(h100_request(4096));
  EXPECT_EQ(p.where, tally::backend::cuda);
  EXPECT_EQ(p.chosen, tally::strategy::shared_replicated);
  EXPECT_EQ(p.replicas, 4);
  EXPECT_EQ(p.shared_bytes, 65584);
  EXPECT_EQ(p.grid_blocks, 3 * 132);
  EXPECT_EQ(p.block_threads, 512);
  EXPECT_EQ(p.vector_bytes, 16);
  EXPECT_FALSE(p.value_table);
  EXPECT_NE(tally::describe(p).find("blocks x 512 threads"), std::string::npos);

  // One copy per lane for 256 cells.
  EXPECT_EQ(tally::plan(h100_request(256)).replicas, 32);
  // One copy fits a whole block up to (58109 + 3) x 4 = 232448 bytes; then 16-bit counters, two
  // per word, up to 116221 cells; then a cluster.
  const auto largest = tally::plan(h100_request(58109));
  EXPECT_EQ(largest.chosen, tally::strategy::shared);
  EXPECT_EQ(largest.counter_bits, 32);
  EXPECT_EQ(largest.grid_blocks, 132);
  const auto packed = tally::plan(h100_request(58110));
  EXPECT_EQ(packed.chosen, tally::strategy::shared);
  EXPECT_EQ(packed.counter_bits, 16);
  EXPECT_EQ(packed.shared_bytes, (58110 + 4) / 2 * 4);
  EXPECT_TRUE(packed.merge_runs);
  EXPECT_NE(tally::describe(packed).find("16-bit counters"), std::string::npos);
  EXPECT_EQ(tally::plan(h100_request(116221)).counter_bits, 16);
  EXPECT_EQ(tally::plan(h100_request(116222)).chosen, tally::strategy::partitioned);
  auto strided = h100_request(58110);
  strided.contiguous = false;  // the generic kernel counts in 32 bits
  EXPECT_EQ(tally::plan(strided).chosen, tally::strategy::warp_aggregated);
}

TEST(CudaPlan, CountIntoWritesOnceFromOneClusterOrAddsFromBlocksOnlyForSmallAutomaticFills) {
  auto r = h100_request(16);
  r.n = 16;
  EXPECT_FALSE(tally::plan(r).write_once) << "a fill into a histogram's cells adds; only count_into asks";
  r.write_once = true;
  const auto p = tally::plan(r);
  EXPECT_TRUE(p.write_once);
  EXPECT_EQ(p.chosen, tally::strategy::shared);
  EXPECT_EQ(p.grid_blocks, 1);
  EXPECT_EQ(p.block_threads, 256);
  EXPECT_EQ(p.shared_bytes, (16 + 3) * 4);
  EXPECT_NE(tally::describe(p).find("each cell once"), std::string::npos);
  r.n = 0;
  EXPECT_TRUE(tally::plan(r).write_once) << "no samples: the block writes zeros";
  r.n = 4096;
  r.cells = 16384;
  EXPECT_TRUE(tally::plan(r).write_once);
  EXPECT_FALSE(tally::plan(r).add_once);
  // Past one block's 4096 samples: a cluster of blocks of 1024 threads, 16 samples a thread.
  auto more = r;
  for (const auto& [n, blocks] : {std::pair<std::int64_t, std::int64_t>{4097, 1}, {16384, 1}, {16385, 2},
                                  {100003, 7}, {tally::write_once_max_samples, 8}}) {
    more.n = n;
    const auto p = tally::plan(more);
    EXPECT_TRUE(p.write_once) << n;
    EXPECT_FALSE(p.add_once) << n;
    EXPECT_EQ(p.block_threads, 1024) << n;
    EXPECT_EQ(p.grid_blocks, blocks) << n;
    EXPECT_EQ(p.shared_bytes, (16384 + 3) * 4);
  }
  EXPECT_EQ(tally::write_once_max_samples, 8 * 1024 * 16) << "clusters of 8 blocks are portable";
  // Past one cluster: blocks of 4096 add into the zeroed output, up to 2^20 samples and into
  // types whose adds are exact in any order.
  more.n = tally::write_once_max_samples + 1;
  auto added = tally::plan(more);
  EXPECT_FALSE(added.write_once);
  EXPECT_TRUE(added.add_once);
  EXPECT_EQ(added.grid_blocks, 33);
  EXPECT_EQ(added.block_threads, 256);
  EXPECT_EQ(added.shared_bytes, (16384 + 3) * 4);
  EXPECT_NE(tally::describe(added).find("zeroed output"), std::string::npos);
  more.n = std::int64_t{1} << 20;
  for (auto t : {tally::dtype::u64, tally::dtype::i64, tally::dtype::f64, tally::dtype::f32}) {
    more.write_type = t;
    added = tally::plan(more);
    EXPECT_TRUE(added.add_once) << tally::name_of(t);
    EXPECT_EQ(added.grid_blocks, 256);
  }
  for (auto t : {tally::dtype::f16, tally::dtype::bf16, tally::dtype::i32, tally::dtype::u8}) {
    more.write_type = t;
    EXPECT_FALSE(tally::plan(more).add_once) << tally::name_of(t) << ": adds into it are not exact (or not written)";
    auto small = r;
    small.write_type = t;
    EXPECT_TRUE(tally::plan(small).write_once) << "one block rounds each count once";
    small.n = tally::write_once_max_samples;
    EXPECT_TRUE(tally::plan(small).write_once) << "one cluster rounds each count once";
  }
  more = r;
  more.n = (std::int64_t{1} << 20) + 1;
  EXPECT_FALSE(tally::plan(more).write_once || tally::plan(more).add_once);
  for (std::int64_t n : {std::int64_t{16}, std::int64_t{5000}}) {
    more = r;
    more.n = n;
    more.cells = 16385;
    EXPECT_FALSE(tally::plan(more).write_once || tally::plan(more).add_once);
    more = r;
    more.n = n;
    more.wanted = tally::strategy::shared;
    EXPECT_FALSE(tally::plan(more).write_once || tally::plan(more).add_once) << "a named strategy runs as named";
    more = r;
    more.n = n;
    more.weighted = true;
    more.weight_type = tally::dtype::f32;
    EXPECT_FALSE(tally::plan(more).write_once || tally::plan(more).add_once);
    more = r;
    more.n = n;
    more.channels = 3;
    more.sample = tally::dtype::u8;
    EXPECT_FALSE(tally::plan(more).write_once || tally::plan(more).add_once);
    more = r;
    more.n = n;
    more.device_shared_bytes = 48 * 1024;  // (16384 + 3) x 4 bytes exceed it
    EXPECT_FALSE(tally::plan(more).write_once || tally::plan(more).add_once);
  }
}

TEST(CudaPlan, RegisterCountsAtMostTwentyNineBinsOfOneColumn) {
  auto r = h100_request(29);
  r.wanted = tally::strategy::registers;
  const auto p = tally::plan(r);
  EXPECT_EQ(p.chosen, tally::strategy::registers);
  EXPECT_EQ(p.vector_bytes, 16);
  EXPECT_FALSE(p.value_table);
  EXPECT_FALSE(p.merge_runs);
  r.sample = tally::dtype::u8;  // counted by the axis' rule, not by value
  EXPECT_FALSE(tally::plan(r).value_table);
  r.cells = 30;
  EXPECT_THROW(tally::plan(r), tally::error);
  r.cells = 16;
  r.contiguous = false;
  EXPECT_THROW(tally::plan(r), tally::error);
}

TEST(CudaPlan, RunsMergeWhereLanesShareCounters) {
  EXPECT_FALSE(tally::plan(h100_request(256)).merge_runs);  // 32 copies: one per lane
  EXPECT_TRUE(tally::plan(h100_request(4096)).merge_runs);  // 4 copies
  EXPECT_TRUE(tally::plan(h100_request(65536)).merge_runs); // a cluster
  auto r = h100_request(256);
  r.wanted = tally::strategy::shared;
  EXPECT_TRUE(tally::plan(r).merge_runs);
  EXPECT_NE(tally::describe(tally::plan(r)).find("runs       merged within a load"), std::string::npos);
  r.wanted = tally::strategy::global_atomic_vec;  // device memory: runs kept across loads
  EXPECT_TRUE(tally::plan(r).merge_runs);
  EXPECT_NE(tally::describe(tally::plan(r)).find("runs       two per thread"), std::string::npos);
}

TEST(CudaPlan, SmallFillsLaunchOnlyTheBlocksOneStepNeeds) {
  // A block's step: 512 threads x 4 loads x 16 bytes = 8192 i32 samples or 32768 u8 samples.
  auto r = h100_request(256);
  r.n = 1;
  EXPECT_EQ(tally::plan(r).grid_blocks, 1);
  r.n = 8192 * 5 + 1;
  EXPECT_EQ(tally::plan(r).grid_blocks, 6);
  EXPECT_NE(tally::describe(tally::plan(r)).find("one grid-stride step"), std::string::npos);
  r.sample = tally::dtype::u8;
  EXPECT_EQ(tally::plan(r).grid_blocks, 2);
  // Generic shared kernel (strided): 4 samples per thread and step of 1024 threads.
  r.contiguous = false;
  r.n = 4097;
  EXPECT_EQ(tally::plan(r).grid_blocks, 2);
  r.n = 4096;
  EXPECT_EQ(tally::plan(r).grid_blocks, 1);
  // Clusters launch whole: 4 blocks for 65536 cells even for one sample.
  auto c = h100_request(65536);
  c.wanted = tally::strategy::cluster;
  c.n = 1;
  EXPECT_EQ(tally::plan(c).grid_blocks, 4);
  // Large fills keep every resident block.
  EXPECT_EQ(tally::plan(h100_request(256)).grid_blocks % 132, 0);
}

TEST(CudaPlan, WithoutClustersNothingPlansTheClusterKernels) {
  // An A100 (sm_80, as a wheel's code runs on): no thread block clusters.
  const auto a100 = [](std::int64_t cells) {
    auto r = h100_request(cells);
    r.device_sms = 108;
    r.device_shared_bytes = 166912;
    r.device_shared_per_sm = 167936;
    r.device_clusters = false;
    return r;
  };
  auto asked = a100(65536);
  asked.wanted = tally::strategy::cluster;
  try {
    tally::plan(asked);
    ADD_FAILURE() << "cluster planned without clusters";
  } catch (const tally::error& e) {
    EXPECT_NE(std::string(e.what()).find("thread block clusters"), std::string::npos) << e.what();
  }
  for (std::int64_t cells : {16, 4096, 65536, 1 << 17, 1 << 20, 1 << 24}) {
    EXPECT_NE(tally::plan(a100(cells)).chosen, tally::strategy::cluster) << cells;
    EXPECT_EQ(tally::plan(a100(cells)).cluster_blocks, 0) << cells;
  }
  // count_into's small fills: one launch that adds into the zeroed output, never the one-cluster
  // write; for a type whose adds round (f16), a histogram's fill.
  auto small = a100(16);
  small.write_once = true;
  small.n = 16;
  const auto p = tally::plan(small);
  EXPECT_FALSE(p.write_once);
  EXPECT_TRUE(p.add_once);
  small.write_type = tally::dtype::f16;
  EXPECT_FALSE(tally::plan(small).write_once || tally::plan(small).add_once);
  small.device_clusters = true;  // the same fill on an H100
  EXPECT_TRUE(tally::plan(small).write_once);
}

TEST(CudaPlan, ClustersHoldWhatOneBlockCannotUpToEightBlocks) {
  // 65536 cells (as asked for: automatic takes 16-bit counters in one block): 2 blocks of 32768
  // (131084 bytes) exceed half a multiprocessor, 4 of 16384 fit.
  auto asked = h100_request(65536);
  asked.wanted = tally::strategy::cluster;
  const auto p = tally::plan(asked);
  EXPECT_EQ(p.chosen, tally::strategy::cluster);
  EXPECT_EQ(p.cluster_blocks, 4);
  EXPECT_EQ(p.shared_bytes, (16384 + 3) * 4);
  EXPECT_EQ(p.grid_blocks % 4, 0);
  EXPECT_EQ(p.vector_bytes, 16);
  EXPECT_NE(tally::describe(p).find("cluster    4 blocks"), std::string::npos);
  // 2^17 cells: 8 blocks of 16384; 2^18: 8 of 32768, one per multiprocessor; 2^20: beyond any
  // cluster (automatic: partitioned up to 2^23 cells, then device memory).
  for (int cells : {1 << 17, 1 << 18}) {
    asked.cells = cells;
    EXPECT_EQ(tally::plan(asked).cluster_blocks, 8);
  }
  EXPECT_EQ(tally::plan(h100_request(1 << 24)).chosen, tally::strategy::global_atomic_vec);
  auto strided_many = h100_request(1 << 20);
  strided_many.contiguous = false;
  EXPECT_EQ(tally::plan(strided_many).chosen, tally::strategy::warp_aggregated);

  // Asked for: any cell count a cluster holds; never 8-bit, strided or too many cells.
  auto r = h100_request(256);
  r.wanted = tally::strategy::cluster;
  EXPECT_EQ(tally::plan(r).cluster_blocks, 2);
  r.sample = tally::dtype::u8;
  EXPECT_THROW(tally::plan(r), tally::error);
  r.sample = tally::dtype::i32;
  r.contiguous = false;
  EXPECT_THROW(tally::plan(r), tally::error);
  r.contiguous = true;
  r.cells = 1 << 20;
  EXPECT_THROW(tally::plan(r), tally::error);
}

TEST(CudaPlan, ByteSamplesCountValuesAndTablesGoToSharedMemory) {
  auto r = h100_request(100, tally::dtype::u8);
  r.kind = tally::axis_kind::regular;
  r.table_bytes = 101 * 8;
  const auto bytes = tally::plan(r);
  EXPECT_TRUE(bytes.value_table);
  EXPECT_FALSE(bytes.tables_in_shared);      // the fold reads the edges, not the count kernel
  EXPECT_EQ(bytes.shared_bytes, 259 * 4 * 32);  // 256 values and 3 flow counters, 32 copies

  r.sample = tally::dtype::f32;
  const auto floats = tally::plan(r);
  EXPECT_FALSE(floats.value_table);
  EXPECT_TRUE(floats.tables_in_shared);
  EXPECT_EQ(floats.shared_bytes, 103 * 4 * 32 + 101 * 8);

  // Strided, N-D or unaligned samples take the generic kernels, which read no staged tables.
  r.contiguous = false;
  const auto generic = tally::plan(r);
  EXPECT_EQ(generic.vector_bytes, 0);
  EXPECT_EQ(generic.block_threads, 1024);
  EXPECT_FALSE(generic.tables_in_shared);
  EXPECT_EQ(generic.shared_bytes, 103 * 4 * 32 + 4);  // and the int of a stride-0 column's bin
  r.wanted = tally::strategy::global_atomic_vec;
  EXPECT_THROW(tally::plan(r), tally::error);
}

TEST(CudaPlan, InterleavedByteChannelsTakeOnePassOthersOneByOne) {
  auto r = h100_request(256, tally::dtype::u8);
  r.channels = 4;
  const auto rgba = tally::plan(r);
  EXPECT_TRUE(rgba.value_table);
  EXPECT_EQ(rgba.vector_bytes, 16);
  // 4 x 256 values and 3 spare counters, as many copies (16) as fit half a multiprocessor.
  EXPECT_EQ(rgba.replicas, 16);
  EXPECT_EQ(rgba.shared_bytes, (4 * 256 + 3) * 4 * 16);
  EXPECT_NE(tally::describe(rgba).find("4 channels of 8-bit samples"), std::string::npos);

  // Three histograms of RGBA (no alpha): 3 x 256 values, and 32 copies fit.
  r.counted_channels = 3;
  const auto rgb_of_rgba = tally::plan(r);
  EXPECT_TRUE(rgb_of_rgba.value_table);
  EXPECT_EQ(rgb_of_rgba.replicas, 32);
  EXPECT_EQ(rgb_of_rgba.shared_bytes, (3 * 256 + 3) * 4 * 32);
  EXPECT_NE(tally::describe(rgb_of_rgba).find("3 of 4 channels"), std::string::npos);
  r.counted_channels = 0;

  r.channels = 5;  // more than one pass takes: each channel a strided column
  const auto five = tally::plan(r);
  EXPECT_FALSE(five.value_table);
  EXPECT_EQ(five.vector_bytes, 0);
  EXPECT_NE(tally::describe(five).find("one by one"), std::string::npos);

  r.channels = 3;
  r.sample = tally::dtype::i32;  // not 8-bit
  EXPECT_EQ(tally::plan(r).vector_bytes, 0);
  r.sample = tally::dtype::i8;
  r.wanted = tally::strategy::shared;  // a named strategy: channel by channel, as asked
  EXPECT_FALSE(tally::plan(r).value_table);
}

TEST(CudaPlan, WeightedSumsUseAGridFixedByTheSampleCount) {
  auto r = h100_request(256);
  r.weighted = true;
  const auto p = tally::plan(r);
  EXPECT_EQ(p.chosen, tally::strategy::shared);
  EXPECT_EQ(p.grid_blocks, 4096);
  EXPECT_EQ(p.window_cells, 256);
  r.device_sms = 114;  // another device: the same grid, so the same order of additions
  EXPECT_EQ(tally::plan(r).grid_blocks, 4096);
  r.n = 100;
  EXPECT_EQ(tally::plan(r).grid_blocks, 1);
  // Many cells: windows of cells, one pass each, up to four passes (shared insists on them)...
  r.cells = 1 << 20;
  r.wanted = tally::strategy::shared;
  const std::int64_t window = tally::plan(r).window_cells;
  EXPECT_LT(window, r.cells);
  EXPECT_NE(tally::describe(tally::plan(r)).find("passes"), std::string::npos);
  r.wanted = tally::strategy::automatic;
  r.cells = 4 * window;
  EXPECT_EQ(tally::plan(r).window_cells, window);
  EXPECT_FALSE(tally::plan(r).exact_wide);
  // ... beyond them, one pass of exact wide words, rounded into the f64 sums.
  r.cells = 4 * window + 1;
  const auto wide = tally::plan(r);
  EXPECT_TRUE(wide.exact_wide);
  EXPECT_EQ(wide.window_cells, 0);
  EXPECT_NE(tally::describe(wide).find("5 passes"), std::string::npos);
}

TEST(CudaPlan, FlowBinsTakeTheGenericKernels) {
  auto r = h100_request(6 * 9);  // two axes of 3 and 6 bins, each with its 3 flow bins
  r.contiguous = false;           // as make_request sets it for flow bins
  r.dims = 2;
  r.flow_bins = true;
  auto p = tally::plan(r);
  EXPECT_TRUE(p.flow_bins);
  EXPECT_EQ(p.vector_bytes, 0);
  EXPECT_EQ(p.partition_bits, 0);
  EXPECT_NE(tally::describe(p).find("flow bins"), std::string::npos);
  r.wanted = tally::strategy::cluster;
  EXPECT_THROW(tally::plan(r), tally::error);
  r.wanted = tally::strategy::shared_replicated;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::shared_replicated);
  r.weighted = true;
  EXPECT_THROW(tally::plan(r), tally::error);
}

TEST(CudaPlan, NdCountsTakeOneBlockOf1024ThreadsWithSeveralSamplesOfEachColumnInFlight) {
  // The HEP count of issue 40 on an H200 (132 multiprocessors, the H100's shared memory):
  // StrCategory(5) x Regular(100) x Regular(50), a dataset's 2 x 10^7 events, the category a
  // stride-0 column. Before: 2 blocks of 256 threads a multiprocessor (1 with flow bins), one
  // sample per load. Now one block of 1024 threads, 4 samples of each column in flight a thread,
  // one copy of the 32-bit counters and an int per axis for a stride-0 column's bin.
  auto r = h100_request(5 * 100 * 50, tally::dtype::i64);
  r.contiguous = false;
  r.dims = 3;
  r.n = 20000000;
  const auto p = tally::plan(r);
  EXPECT_EQ(p.chosen, tally::strategy::shared);
  EXPECT_EQ(p.replicas, 1);
  EXPECT_EQ(p.shared_bytes, (25000 + 3) * 4 + 3 * 4);
  EXPECT_EQ(p.block_threads, 1024);
  EXPECT_EQ(p.grid_blocks, 132);
  EXPECT_EQ(p.unroll, 4);
  EXPECT_EQ(p.vector_bytes, 0);
  EXPECT_FALSE(p.tables_in_shared);
  EXPECT_NE(tally::describe(p).find("4 of each column in flight per thread"), std::string::npos) << tally::describe(p);
  EXPECT_NE(tally::describe(p).find("stride 0"), std::string::npos);

  // With boost-histogram's flow bins (each axis bins + 3 cells): one copy still fits a block.
  r.cells = 8 * 103 * 53;
  r.flow_bins = true;
  const auto flow = tally::plan(r);
  EXPECT_EQ(flow.chosen, tally::strategy::shared);
  EXPECT_EQ(flow.shared_bytes, (8 * 103 * 53 + 3) * 4 + 3 * 4);
  EXPECT_EQ(flow.block_threads, 1024);
  EXPECT_EQ(flow.grid_blocks, 132);

  // 2-D, 5000 cells: 4 interleaved copies in half a multiprocessor.
  r.cells = 5000;
  r.dims = 2;
  r.flow_bins = false;
  const auto two = tally::plan(r);
  EXPECT_EQ(two.chosen, tally::strategy::shared_replicated);
  EXPECT_EQ(two.replicas, 4);
  EXPECT_EQ(two.shared_bytes, 5003 * 4 * 4 + 2 * 4);
  EXPECT_EQ(two.block_threads, 1024);

  // One copy and the axes' ints fill a block's 232448 bytes at 58107 cells of 2 axes; beyond,
  // device memory (one atomic per warp and cell).
  r.cells = 58107;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::shared);
  EXPECT_EQ(tally::plan(r).shared_bytes, 232448);
  r.cells = 58108;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::warp_aggregated);
  EXPECT_EQ(tally::plan(r).block_threads, 256);
  r.wanted = tally::strategy::shared;
  EXPECT_THROW(tally::plan(r), tally::error);
}

TEST(CudaPlan, F32WeightsSumExactlyInSharedOrDeviceMemory) {
  auto r = h100_request(256);
  r.weighted = true;
  r.weight_type = tally::dtype::f32;
  r.sample = tally::dtype::i32;
  r.contiguous = true;
  auto p = tally::plan(r);
  EXPECT_TRUE(p.exact_sums);
  EXPECT_EQ(p.window_cells, 0);
  EXPECT_EQ(p.chosen, tally::strategy::shared);
  // The record of the block's window (128 bytes), a window of 6 digits and the flags per cell,
  // then, at a 128-byte boundary, the ring: 4 slots of 16 + 16 bytes per thread of 512.
  constexpr std::int64_t ring = 4 * 512 * 32;
  EXPECT_EQ(p.shared_bytes, 128 + 256 * (6 * 4 + 4) + ring);
  EXPECT_EQ(p.vector_bytes, 16);  // the typed loop: four samples per load
  EXPECT_NE(tally::describe(p).find("exact"), std::string::npos);
  EXPECT_NE(tally::describe(p).find("ring"), std::string::npos);
  r.cells = 2000;  // the windows leave no room for the ring beside a second block
  EXPECT_EQ(tally::plan(r).shared_bytes, 128 + 2000 * (6 * 4 + 4));
  r.cells = 256;
  r.contiguous = false;
  EXPECT_EQ(tally::plan(r).vector_bytes, 0);  // the generic loop, no ring
  EXPECT_EQ(tally::plan(r).shared_bytes, 128 + 256 * (6 * 4 + 4));
  r.contiguous = true;
  r.wanted = tally::strategy::global_atomic;  // integer atomics: still the same bits
  p = tally::plan(r);
  EXPECT_EQ(p.chosen, tally::strategy::global_atomic);
  EXPECT_EQ(p.shared_bytes, ring);  // the ring alone
  r.wanted = tally::strategy::warp_aggregated;
  EXPECT_THROW(tally::plan(r), tally::error);
  // More cells than a block's copy holds: partitions (F32WeightsSumExactlyInPartitions), device
  // memory for a strided column, or an error where shared is asked for.
  r.wanted = tally::strategy::automatic;
  r.cells = 5000;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::partitioned);
  r.contiguous = false;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::global_atomic);
  r.contiguous = true;
  r.wanted = tally::strategy::shared;
  EXPECT_THROW(tally::plan(r), tally::error);
  // 2^27 cells and more: the fixed-order sums of any weight type (a run's key is 32 bits).
  r.wanted = tally::strategy::automatic;
  r.cells = std::int64_t{1} << 27;
  EXPECT_FALSE(tally::plan(r).exact_sums);
  r.cells -= 1;
  EXPECT_TRUE(tally::plan(r).exact_sums);
}

TEST(CudaPlan, F32WeightsSumExactlyInPartitions) {
  // 2^20 cells: 512 buckets of 2^11 cells, whose windows (56 KiB) and tables leave room for two
  // summing blocks a multiprocessor; passes of 2^25 samples of 2^28.
  auto r = h100_request(1 << 20);
  r.weighted = true;
  r.weight_type = tally::dtype::f32;
  auto p = tally::plan(r);
  EXPECT_TRUE(p.exact_sums);
  EXPECT_EQ(p.chosen, tally::strategy::partitioned);
  EXPECT_EQ(p.partition_bits, 11);
  EXPECT_EQ(p.partition_buckets, 512);
  EXPECT_EQ(p.partition_chunk, std::int64_t{1} << 25);
  EXPECT_EQ(p.partition_blocks, 2 * 132);
  EXPECT_EQ(p.block_threads, 512);
  EXPECT_EQ(p.shared_bytes, 8192 * 6 + (3 * 512 + 5) * 4);  // a tile of pairs; counts, starts, totals; flow
  EXPECT_NE(tally::describe(p).find("512 buckets of 2^11 slots"), std::string::npos);
  EXPECT_NE(tally::describe(p).find("summing blocks"), std::string::npos);
  // Half of that and fewer: buckets of 2^10 cells (2^19 cells: 512 of them).
  r.cells = 1 << 19;
  EXPECT_EQ(tally::plan(r).partition_bits, 10);
  EXPECT_EQ(tally::plan(r).partition_buckets, 512);
  r.cells += 1;
  EXPECT_EQ(tally::plan(r).partition_bits, 11);
  EXPECT_EQ(tally::plan(r).partition_buckets, 257);
  r.cells = 1 << 20;
  // Cells whose windows do not fit a block.
  for (std::int64_t cells : {5000, 8192, 65536}) {
    r.cells = cells;
    p = tally::plan(r);
    EXPECT_EQ(p.chosen, tally::strategy::partitioned) << cells;
    EXPECT_EQ(p.partition_buckets, (cells + 1023) / 1024) << cells;
  }
  // 4128 cells: the record of the window and 115584 bytes of windows, the budget of two blocks
  // (115712 bytes each), one copy a block; one cell more does not fit.
  r.cells = 4128;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::shared);
  r.cells = 4129;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::partitioned);
  EXPECT_EQ(tally::plan(r).partition_buckets, 5);
  // Asked for where the words fit a block too; a small fill sorts whole tiles of 8192 samples.
  r.cells = 256;
  r.n = 10000;
  r.wanted = tally::strategy::partitioned;
  p = tally::plan(r);
  EXPECT_EQ(p.chosen, tally::strategy::partitioned);
  EXPECT_EQ(p.partition_buckets, 1);
  EXPECT_EQ(p.partition_chunk, 2 * 8192);
  // Beyond 2^20 cells, strided columns and 8-bit samples: device memory, or an error where asked.
  r.n = std::int64_t{1} << 28;
  r.cells = (1 << 20) + 1;
  EXPECT_THROW(tally::plan(r), tally::error);
  r.wanted = tally::strategy::automatic;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::global_atomic);
  r.cells = 1 << 16;
  r.sample = tally::dtype::u8;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::global_atomic);
  r.wanted = tally::strategy::partitioned;
  EXPECT_THROW(tally::plan(r), tally::error);
  r.sample = tally::dtype::f64;
  r.contiguous = false;
  EXPECT_THROW(tally::plan(r), tally::error);
  r.contiguous = true;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::partitioned);
  // A device whose blocks cannot hold a sorted tile (at least 49172 bytes) or a bucket's windows
  // and tables (about 37 KiB): device memory.
  r.wanted = tally::strategy::automatic;
  r.device_shared_bytes = 48 * 1024;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::global_atomic);
  r.device_shared_bytes = 60 * 1024;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::partitioned);
  // With 62 KiB, 2^20 cells keep buckets of 2^10 (their sort takes 61460 bytes): a block cannot
  // hold the windows of 2^11 (56 KiB) and the tables.
  r.cells = 1 << 20;
  r.device_shared_bytes = 62 * 1024;
  EXPECT_EQ(tally::plan(r).partition_bits, 10);
  EXPECT_EQ(tally::plan(r).partition_buckets, 1024);
}

TEST(CudaPlan, PartitionPassesShrinkForTests) {
  // The tests' limit on a pass (core/partition.hpp), in tiles of 8192 samples, for counts and sums.
  const partition_pass_limit limit(3);
  EXPECT_EQ(tally::plan(h100_request(1 << 20)).partition_chunk, 3 * 8192);
  auto r = h100_request(1 << 20);
  r.weighted = true;
  r.weight_type = tally::dtype::f32;
  EXPECT_EQ(tally::plan(r).partition_chunk, 3 * 8192);
}

TEST(CudaPlan, PartitionedIntoThirtyTwoBucketsOfBins) {
  // 2^20 cells and 3 flow counters: 32 buckets of 2^15 slots and one of the flow counters.
  const auto p = tally::plan(h100_request(1 << 20));
  EXPECT_EQ(p.chosen, tally::strategy::partitioned);
  EXPECT_EQ(p.partition_bits, 15);
  EXPECT_EQ(p.partition_buckets, 33);
  EXPECT_EQ(p.partition_blocks, 132);  // one 128 KiB block of counters a multiprocessor
  EXPECT_EQ(p.partition_chunk, std::int64_t{1} << 26);  // of 2^28 samples
  EXPECT_EQ(p.shared_bytes, 8192 * 2 + 34 * 8);
  EXPECT_EQ(p.grid_blocks, 2 * 132);
  EXPECT_NE(tally::describe(p).find("33 buckets of 2^15 slots"), std::string::npos);
  // 2^18 cells: 32 buckets of 2^13 slots, two counting blocks a multiprocessor.
  const auto quarter = tally::plan(h100_request(1 << 18));
  EXPECT_EQ(quarter.partition_bits, 13);
  EXPECT_EQ(quarter.partition_buckets, 33);
  EXPECT_EQ(quarter.partition_blocks, 2 * 132);
  // Few cells: at least 2^10 slots a bucket. A small fill sorts whole tiles of 8192 samples.
  auto few = h100_request(4096);
  few.wanted = tally::strategy::partitioned;
  few.n = 10000;
  const auto small = tally::plan(few);
  EXPECT_EQ(small.partition_bits, 10);
  EXPECT_EQ(small.partition_buckets, 5);
  EXPECT_EQ(small.partition_chunk, 2 * 8192);
  EXPECT_EQ(small.grid_blocks, 2);
  // A regular axis' 17 edges (136 bytes) go to shared memory ahead of the tile, at 16 bytes.
  auto edges = h100_request(16);
  edges.wanted = tally::strategy::partitioned;
  edges.kind = tally::axis_kind::regular;
  edges.table_bytes = 17 * 8;
  const auto staged = tally::plan(edges);
  EXPECT_TRUE(staged.tables_in_shared);
  EXPECT_EQ(staged.shared_bytes, 8192 * 2 + 2 * 8 + 144);
  // The largest: 256 buckets of 2^15 slots, less the flow counters' 3; one block of 128 KiB
  // counters a multiprocessor.
  const auto largest = tally::plan(h100_request(256 * 32768 - 3));
  EXPECT_EQ(largest.partition_buckets, 256);
  EXPECT_EQ(largest.partition_blocks, 132);
  EXPECT_EQ(tally::plan(h100_request(256 * 32768 - 2)).chosen, tally::strategy::global_atomic_vec);
  auto bytes = h100_request(1 << 20, tally::dtype::u8);
  bytes.wanted = tally::strategy::partitioned;
  EXPECT_THROW(tally::plan(bytes), tally::error);
  auto strided = h100_request(1 << 20);
  strided.contiguous = false;
  strided.wanted = tally::strategy::partitioned;
  EXPECT_THROW(tally::plan(strided), tally::error);
}

TEST(CudaPlan, HonoursTheAskedStrategyOrSaysWhyNot) {
  auto r = h100_request(256);
  r.wanted = tally::strategy::global_atomic;
  EXPECT_EQ(tally::plan(r).chosen, tally::strategy::global_atomic);
  r.wanted = tally::strategy::shared;
  EXPECT_EQ(tally::plan(r).replicas, 1);
  r.wanted = tally::strategy::cpu_private;
  EXPECT_THROW(tally::plan(r), tally::error);
  r = h100_request(1 << 20);
  r.wanted = tally::strategy::shared;
  EXPECT_THROW(tally::plan(r), tally::error);
  r = h100_request(256);
  r.weighted = true;
  r.wanted = tally::strategy::global_atomic;
  EXPECT_THROW(tally::plan(r), tally::error);  // float atomics would not be reproducible
  r = h100_request(256);
  r.where = tally::backend::cpu;
  r.wanted = tally::strategy::shared;
  EXPECT_THROW(tally::plan(r), tally::error);
}

TEST(Registry, EveryStrategyOnceInTheEnumsOrderWithItsName) {
  const auto& rows = tally::strategies();
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(tally::strategy::partitioned) + 1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const tally::strategy s = static_cast<tally::strategy>(i);
    EXPECT_EQ(rows[i].which, s);
    EXPECT_EQ(&tally::info_of(s), &rows[i]);
    EXPECT_EQ(tally::name_of(s), rows[i].name);
    EXPECT_EQ(tally::strategy_from_name(rows[i].name), s);
    EXPECT_FALSE(rows[i].technique.empty() || rows[i].applies.empty() || rows[i].chosen_when.empty()) << rows[i].name;
    EXPECT_EQ(rows[i].where, i == 0 ? tally::backend::automatic : i == 1 ? tally::backend::cpu : tally::backend::cuda);
  }
  EXPECT_EQ(tally::name_of(tally::strategy::registers), "register");
  try {
    tally::strategy_from_name("gpu_magic");
    ADD_FAILURE() << "an unknown name was accepted";
  } catch (const tally::error& e) {  // the message lists every registered name
    for (const auto& row : rows) EXPECT_NE(std::string(e.what()).find(std::string(row.name)), std::string::npos);
  }
}

TEST(Registry, EveryStrategyIsPlannedWhereItApplies) {
  // Each named strategy, asked for, is the plan's choice for some fill it applies to: counts of
  // few or many cells, 8-bit or wider samples, and exact sums of f32 and f64 weights.
  std::vector<tally::plan_request> fills;
  for (std::int64_t cells : {16, 4096, 65536, 1 << 20})
    for (tally::dtype t : {tally::dtype::u8, tally::dtype::i32}) fills.push_back(h100_request(cells, t));
  for (tally::dtype w : {tally::dtype::f32, tally::dtype::f64}) {
    tally::plan_request r = h100_request(256);
    r.weighted = true;
    r.weight_type = w;
    r.exact_sums = true;
    fills.push_back(r);
  }
  for (const auto& row : tally::strategies()) {
    if (row.which == tally::strategy::automatic) continue;
    bool planned = false;
    for (tally::plan_request r : fills) {
      r.where = row.where;
      r.wanted = row.which;
      try {
        planned = planned || tally::plan(r).chosen == row.which;
      } catch (const tally::error&) {  // not a fill it applies to
      }
    }
    EXPECT_TRUE(planned) << row.name;
  }
}

}  // namespace

namespace {

TEST(CudaPlan, DescribeDeviceFillsTheFiguresWhereCudaIsUsable) {
  bool usable = false;
  for (const auto& b : tally::backends())
    if (b.which == tally::backend::cuda) usable = b.usable;
  tally::plan_request r;
  r.where = tally::backend::cuda;
  EXPECT_EQ(tally::describe_device(r), usable);
  if (usable) {
    EXPECT_GT(r.device_sms, 0);
    EXPECT_GE(r.device_shared_per_sm, r.device_shared_bytes);
    EXPECT_GT(r.device_shared_bytes, 0);
  } else {
    EXPECT_EQ(r.device_sms, 0);  // nothing changed
  }
  r.where = tally::backend::cpu;
  EXPECT_TRUE(tally::describe_device(r));
}

TEST(CudaPlan, ExactSumsHistogramsKeepTheF32KernelAndTakeWideAtomicsForF64Weights) {
  auto r = h100_request(256);
  r.weighted = true;
  r.exact_sums = true;
  r.weight_type = tally::dtype::f32;  // the f32 kernel, its words widened afterwards
  auto p = tally::plan(r);
  EXPECT_TRUE(p.exact_sums);
  EXPECT_FALSE(p.exact_wide);
  r.weight_type = tally::dtype::f64;
  p = tally::plan(r);
  EXPECT_TRUE(p.exact_wide);
  EXPECT_FALSE(p.exact_sums);
  EXPECT_EQ(p.window_cells, 0);
  EXPECT_EQ(p.chosen, tally::strategy::global_atomic);
  EXPECT_EQ(p.shared_bytes, 0);
  EXPECT_NE(tally::describe(p).find("34 fixed-point words"), std::string::npos);
  r.wanted = tally::strategy::shared;
  EXPECT_THROW(tally::plan(r), tally::error);
  // f32 weights beyond the f32 kernel's keys take the wide atomics too.
  r.wanted = tally::strategy::automatic;
  r.weight_type = tally::dtype::f32;
  r.cells = std::int64_t{1} << 27;
  EXPECT_TRUE(tally::plan(r).exact_wide);
  // Without exact_sums, f64 weights keep the fixed-order sums.
  r.exact_sums = false;
  r.weight_type = tally::dtype::f64;
  r.cells = 256;
  EXPECT_FALSE(tally::plan(r).exact_wide);
  EXPECT_GT(tally::plan(r).window_cells, 0);
}

}  // namespace
