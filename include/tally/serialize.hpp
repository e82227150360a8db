// A histogram as bytes and back: a versioned, little-endian binary format for saving histograms
// and for sending partial histograms between processes to merge them (+=).
//
// Format version 3; version 2 is the same without flow bins (flow bit 2), version 1 also without
// storage code 3. All are read; a histogram is written as version 1 unless it keeps exact sums
// (2) or flow bins (3), so that older readers still read it, and read only in that version (one
// histogram, one byte sequence). Integers are little-endian, of the
// width named; f64 is an IEEE-754 double's
// bits as a u64; str is a u8 length and that many ASCII bytes.
//
//   magic        8 bytes "TALLYHST"
//   version      u32, 1, 2 or 3
//   storage      u8: 0 u64 counts, 1 u32 counts, 2 f64 sums of weights (options::weighted),
//                3 exact sums of weights (options::weighted and options::exact_sums)
//   flow         u8: bit 0 options::flow; version 3, bit 1 options::flow_bins (the cells then
//                hold bins + 3 an axis, and the flow counts below are 0)
//   backend      str, name_of(options::backend)
//   strategy     str, name_of(options::strategy)
//   threads      i32 (options::threads)
//   samples      u64 (samples())
//   flow counts  3 x u64: underflow, overflow, nan (all 0 where flow is 0)
//   axes         u32 D >= 1, then D axes, each a u8 tag and its parameters:
//                  0 regular            i64 bins, f64 lo, f64 hi, str edge type (f64 f32 f16 bf16)
//                  1 regular_exact      i64 bins, u8 lo negative, u64 |lo|, u8 hi negative, u64 |hi|
//                  2 variable           u64 n, n x f64 edges
//                  3 variable_integers  u64 n, n x i64 edges
//                  4 variable_integers  u64 n, n x u64 edges (unsigned)
//                  5 integer            i64 lo, i64 hi
//   cells        u64 count (the product of the bins, each plus 3 with flow bins), then that many cells of the storage
//                type, row-major (the last axis fastest). An exact-sum cell is 35 x u64: 34 limbs,
//                least significant first, of the sum in units of 2^-1074 as a 2176-bit two's
//                complement integer, then the flags (bit 0 +inf, 1 -inf, 2 NaN weights seen)
//
// An axis is rebuilt by its constructor from these parameters, so it is validated again and
// what the constructor derives (unit-integer edges) is derived again.
#pragma once

#include <cstddef>
#include <vector>

#include "tally/histogram.hpp"

namespace tally {

/// The histogram as bytes in the format above: axes, options, cells, flow counters, samples().
std::vector<std::byte> serialize(const histogram& h);

/// The histogram that serialize wrote as `size` bytes at `data`; deserialize(serialize(h)) == h,
/// with h's options (threads at most this machine's hardware threads). Throws tally::error,
/// without reading past the end, for bytes that are not one: a wrong magic, another format
/// version, a truncated input or bytes after the end, an unknown tag or name (or one not
/// printable ASCII), negative threads, an axis its constructor rejects, axes whose cells could
/// not fit in the bytes left, a cell count that is not the product of the bins, flow counts
/// without flow, a count of 2^63 or more, exact-sum flags beyond bits 0-2 or an exact sum of
/// 2^2162 units or more, and a samples() that no fills or merges give: for counts, the cells'
/// sum plus the flow counts (with flow; at least the cells' sum without), for sums of weights at
/// least the flow counts. Takes time linear in `size`, whatever the bytes.
histogram deserialize(const void* data, std::size_t size);
inline histogram deserialize(const std::vector<std::byte>& bytes) { return deserialize(bytes.data(), bytes.size()); }

}  // namespace tally
