// GoogleTest assertions shared by the test files: a tally::histogram against the reference
// (counts exactly, sums bit for bit, flow, samples), and snapshots for "a failed call writes nothing".
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {

/// Whether the CUDA backend is compiled in and a device is usable (GPU cases skip otherwise).
inline bool cuda_usable() {
  for (const auto& b : tally::backends())
    if (b.which == tally::backend::cuda && b.usable) return true;
  return false;
}

/// The call throws tally::error whose message contains `part`.
template <class F>
void expect_error(F&& call, const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning \"" << part << "\"";
  } catch (const tally::error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

inline std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// Element-wise equality, reporting the size mismatch or the first few differing elements.
/// Doubles compare by their bits (so -0.0 != 0.0 and NaN == NaN of the same payload).
template <class T>
::testing::AssertionResult same_elements(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << ", expected " << want.size();
  }
  std::ostringstream diff;
  diff.precision(17);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    bool equal;
    if constexpr (std::is_same_v<T, double>) {
      equal = bits_of(got[i]) == bits_of(want[i]);
    } else {
      equal = got[i] == want[i];
    }
    if (!equal && bad++ < 5) diff << "\n  [" << i << "] got " << got[i] << ", expected " << want[i];
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ:" << diff.str();
}

inline ::testing::AssertionResult same_flow(const tally::flow_counts& got, const tally::flow_counts& want) {
  if (got.underflow == want.underflow && got.overflow == want.overflow && got.nan == want.nan) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "flow (underflow, overflow, nan) = (" << got.underflow << ", " << got.overflow << ", " << got.nan
         << "), expected (" << want.underflow << ", " << want.overflow << ", " << want.nan << ")";
}

/// The storage the histogram exposes directly, widened (u32 or u64 counts).
inline std::vector<std::uint64_t> raw_counts(const tally::histogram& h) {
  const auto n = static_cast<std::size_t>(h.size());
  if (h.opts().counts == tally::count_type::u32) {
    const std::uint32_t* p = h.counts_u32();
    return p ? std::vector<std::uint64_t>(p, p + n) : std::vector<std::uint64_t>{};
  }
  const std::uint64_t* p = h.counts_u64();
  return p ? std::vector<std::uint64_t>(p, p + n) : std::vector<std::uint64_t>{};
}

/// Everything the histogram reports equals the reference: counts (through counts() and the
/// raw storage pointer) or sums bit for bit, values(), samples(), and flow when it is on.
inline void expect_matches(const tally::histogram& h, const ref::result& want) {
  ASSERT_EQ(h.weighted(), want.weighted);
  if (want.weighted) {
    EXPECT_TRUE(same_elements(h.sums(), want.sums)) << "sums";
  } else {
    EXPECT_TRUE(same_elements(h.counts(), want.counts)) << "counts()";
    EXPECT_TRUE(same_elements(raw_counts(h), want.counts)) << "counts_u32()/counts_u64() storage";
  }
  EXPECT_TRUE(same_elements(h.values(), want.values())) << "values()";
  EXPECT_EQ(h.samples(), want.samples);
  if (h.opts().flow) {
    EXPECT_TRUE(same_flow(h.flow(), want.flow));
  }
}

/// Options for the CPU backend with flow counters on; tests change the fields they vary.
inline tally::options cpu_options() {
  tally::options o;
  o.backend = tally::backend::cpu;
  o.flow = true;
  return o;
}

/// Fills h (a fresh histogram over `axis`) with one call, and a fresh reference likewise, and
/// compares them. Returns the reference so that callers can check more (density, other fills).
inline ref::result fill_both(tally::histogram& h, const axis_spec& axis, const tally::view& samples,
                             const tally::view* weights = nullptr) {
  if (weights) {
    h.fill(samples, *weights);
  } else {
    h.fill(samples);
  }
  ref::result want = ref::empty({axis.model()}, h.weighted());
  ref::fill(want, axis.model(), samples, weights);
  expect_matches(h, want);
  return want;
}

/// Samples that landed in a bin (the tests assert this is not zero, so nothing passes vacuously).
inline std::uint64_t binned(const ref::result& r) { return r.samples - r.flow.total(); }

/// The reference's weighted fill, and its fill of the same samples with the weights' magnitudes.
struct weighted_reference {
  ref::result want, magnitudes;
};
inline weighted_reference weighted_reference_of(const ref::axis_model& axis, const tally::view& samples,
                                                const tally::view& weights) {
  std::vector<double> magnitude(static_cast<std::size_t>(weights.size));
  for (std::int64_t i = 0; i < weights.size; ++i) magnitude[static_cast<std::size_t>(i)] = std::fabs(ref::weight_at(weights, i));
  const column magnitudes = make_column(dtype::f64, magnitude);
  const tally::view mv = magnitudes.view();
  weighted_reference r{ref::empty({axis}, true), ref::empty({axis}, true)};
  ref::fill(r.want, axis, samples, &weights);
  ref::fill(r.magnitudes, axis, samples, &mv);
  return r;
}

/// |got - want| <= n u sum|w| for every cell: the bound of any order of n additions.
inline void expect_within_summation_error(const std::vector<double>& got, const weighted_reference& r) {
  ASSERT_EQ(got.size(), r.want.sums.size());
  std::size_t bad = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double bound = static_cast<double>(r.want.samples) * 0x1p-53 * r.magnitudes.sums[k];
    if (!(std::fabs(got[k] - r.want.sums[k]) <= bound) && bad++ < 5)
      ADD_FAILURE() << "cell " << k << ": " << got[k] << ", reference " << r.want.sums[k] << ", bound " << bound;
  }
}

/// Fills whose column or weights have stride 0 (one value repeated: a broadcast scalar, as a
/// dataset's name beside its events) equal fills with the value written out: 1-D and 2-D,
/// counts and sums, values kept and dropped. `place` takes a host column and gives a view of it
/// where the backend of `o` reads it (the column itself for the CPU), kept alive to the end.
template <class Place>
void expect_stride_zero_repeats(tally::options o, Place&& place) {
  const axis_spec category = integer_spec(0, 5), x_axis = regular_spec(20, -1.3, 2.7);
  const std::int64_t n = 30011;
  const tally::view x = place(random_column_for(x_axis, dtype::f32, dist::normal, n, 95));
  std::vector<double> eighths(static_cast<std::size_t>(n));  // sums exact in any order
  for (std::int64_t i = 0; i < n; ++i) eighths[static_cast<std::size_t>(i)] = static_cast<double>(i % 7 - 2) / 8;
  const tally::view w = place(make_column(dtype::f64, eighths));
  const auto repeated = [&](double value) {
    tally::view v = place(typed_column<double>({value}));
    v.size = n;
    v.stride = 0;
    return v;
  };
  const auto written = [&](double value) {
    return place(typed_column<double>(std::vector<double>(static_cast<std::size_t>(n), value)));
  };
  for (const bool weighted : {false, true}) {
    o.weighted = weighted;
    for (const double value : {3.0, 0.5, -1.0, 7.0}) {  // kept (twice), underflow, overflow
      SCOPED_TRACE((weighted ? "weighted, " : "counts, ") + std::to_string(value));
      tally::histogram once(std::vector<tally::axis>{category.make(), x_axis.make()}, o), out(once);
      const tally::view* weights = weighted ? &w : nullptr;
      weighted ? once.fill({repeated(value), x}, *weights) : once.fill({repeated(value), x});
      weighted ? out.fill({written(value), x}, *weights) : out.fill({written(value), x});
      EXPECT_TRUE(once == out);
      tally::histogram one_d(category.make(), o), written_1d(one_d);
      weighted ? one_d.fill(repeated(value), repeated(0.375)) : one_d.fill(repeated(value));
      weighted ? written_1d.fill(written(value), written(0.375)) : written_1d.fill(written(value));
      EXPECT_TRUE(one_d == written_1d);
      EXPECT_EQ(once.samples(), static_cast<std::uint64_t>(n));
    }
  }
}

/// Fills with options::flow_bins (1-D to 3-D, regular, variable and integer axes, samples in and
/// beyond the axes and NaN, in two fills) keep every sample in boost-histogram's cells: each
/// axis' underflow, bins, overflow and NaN, as the reference places them; flow() totals them as
/// the flow counters of the same fills without flow bins; merged, saved and read back, they
/// stay. `place` as expect_stride_zero_repeats'.
template <class Place>
void expect_flow_bins_match(tally::options o, Place&& place) {
  o.flow_bins = true;
  const std::vector<std::vector<axis_spec>> cases = {
      {regular_spec(20, -1.3, 2.7)},
      {regular_spec(7, -1.0, 1.0), variable_spec(5, -2.0, 2.0, 31)},
      {integer_spec(-2, 4), regular_spec(3, 0.0, 1.0, dtype::f32), variable_spec(4, -1.0, 3.0, 32)}};
  std::uint64_t seed = 700;
  for (const auto& specs : cases) {
    for (dist d : {dist::uniform, dist::one_bin, dist::normal}) {
      SCOPED_TRACE(std::to_string(specs.size()) + "-D, " + name_of(d));
      std::vector<tally::axis> axes;
      std::vector<ref::axis_model> models;
      for (const auto& s : specs) {
        axes.push_back(s.make());
        models.push_back(s.model());
      }
      std::vector<column> host;
      std::vector<tally::view> columns;
      const std::int64_t n = 20011;
      for (const auto& s : specs) {  // a wider range than the axis', and NaN every 37th sample
        std::vector<double> v = random_values(d, {s.body().lo - 2, s.body().hi + 2}, n, ++seed, true);
        for (std::size_t i = 0; i < v.size(); i += 37) v[i] = std::numeric_limits<double>::quiet_NaN();
        host.push_back(make_column(dtype::f64, v));
        columns.push_back(place(host.back()));
      }
      tally::histogram h(axes, o), counters(axes, cpu_options());
      std::vector<tally::view> first, second;
      for (const auto& c : columns) {
        first.push_back(slice(c, 0, n / 3));
        second.push_back(slice(c, n / 3, n));
      }
      h.fill(first);
      h.fill(second);
      std::vector<tally::view> host_views;
      for (const auto& c : host) host_views.push_back(c.view());
      counters.fill(host_views);
      const std::vector<std::uint64_t> want = ref::flow_bin_counts(models, host_views);
      EXPECT_TRUE(same_elements(h.counts(), want));
      EXPECT_EQ(h.samples(), static_cast<std::uint64_t>(n));
      EXPECT_TRUE(same_flow(h.flow(), counters.flow()));
      std::vector<std::int64_t> shape;
      for (const auto& s : specs) shape.push_back(s.make().bins() + 3);
      EXPECT_EQ(h.shape(), shape);
      tally::histogram merged(axes, o);
      merged += h;
      EXPECT_TRUE(merged == h);
      EXPECT_TRUE(tally::deserialize(tally::serialize(h).data(), tally::serialize(h).size()) == h);
      EXPECT_THROW(merged += counters, tally::error);  // flow bins against none
    }
  }
}

/// The reference of `fills` fills of channel k of `interleaved` (`channels` a pixel) on `spec`'s axis.
inline ref::result channel_reference(const axis_spec& spec, const tally::view& interleaved, int k, int channels,
                                     int fills) {
  ref::result r = ref::empty({spec.model()}, false);
  for (int f = 0; f < fills; ++f) ref::fill(r, spec.model(), channel_view(interleaved, k, channels));
  return r;
}

/// What a histogram holds, to check that a failed call changed nothing.
struct snapshot {
  std::vector<double> values;
  std::uint64_t samples = 0;
  tally::flow_counts flow;

  explicit snapshot(const tally::histogram& h) : values(h.values()), samples(h.samples()) {
    if (h.opts().flow) flow = h.flow();
  }
};

inline void expect_unchanged(const tally::histogram& h, const snapshot& before) {
  const snapshot now(h);
  EXPECT_TRUE(same_elements(now.values, before.values)) << "a failed call wrote into the histogram";
  EXPECT_EQ(now.samples, before.samples) << "a failed call changed samples()";
  EXPECT_TRUE(same_flow(now.flow, before.flow)) << "a failed call changed the flow counters";
}

}  // namespace tally_test
