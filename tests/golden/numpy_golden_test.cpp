// Checks tally against numpy's own outputs (numpy_golden.json, from make_numpy_golden.py), bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tally/tally.hpp"

namespace {

using json = nlohmann::json;

const json& golden() {
  static const json data = [] {
    std::ifstream in(TALLY_GOLDEN_JSON);
    if (!in) throw std::runtime_error("cannot open " + std::string(TALLY_GOLDEN_JSON));
    return json::parse(in);
  }();
  return data;
}

std::vector<json> cases_of(const std::string& kind) {
  std::vector<json> out;
  for (const auto& c : golden()["cases"])
    if (c["kind"] == kind) out.push_back(c);
  return out;
}

double number(const json& v) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? HUGE_VAL : -HUGE_VAL;
  }
  return v.get<double>();
}

std::vector<double> numbers(const json& a) {
  std::vector<double> out;
  for (const auto& v : a) out.push_back(number(v));
  return out;
}

/// The samples of a case in its numpy dtype; `columns` views them.
struct typed_samples {
  std::vector<unsigned char> bytes;
  tally::view v;
};

template <class T, class Convert>
typed_samples make_samples(const std::vector<double>& x, Convert convert) {
  typed_samples s;
  s.bytes.resize(x.size() * sizeof(T));
  for (std::size_t i = 0; i < x.size(); ++i) {
    T t = convert(x[i]);
    std::memcpy(s.bytes.data() + i * sizeof(T), &t, sizeof(T));
  }
  s.v = tally::view{s.bytes.data(), static_cast<std::int64_t>(x.size()), 1, tally::dtype_of<T>};
  return s;
}

typed_samples samples_as(const std::string& dtype, const std::vector<double>& x) {
  if (dtype == "float64") return make_samples<double>(x, [](double d) { return d; });
  if (dtype == "float32") return make_samples<float>(x, [](double d) { return static_cast<float>(d); });
  if (dtype == "float16") return make_samples<tally::half>(x, [](double d) { return tally::to_half(d); });
  if (dtype == "int32") return make_samples<std::int32_t>(x, [](double d) { return static_cast<std::int32_t>(d); });
  if (dtype == "int64") return make_samples<std::int64_t>(x, [](double d) { return static_cast<std::int64_t>(d); });
  if (dtype == "uint8") return make_samples<std::uint8_t>(x, [](double d) { return static_cast<std::uint8_t>(d); });
  throw std::runtime_error("golden: unexpected dtype " + dtype);
}

std::vector<std::uint64_t> counts_of(const json& a) { return a.get<std::vector<std::uint64_t>>(); }

/// Doubles compared as bits (NaN equal to NaN), so that "equal" means bit for bit.
void expect_same_bits(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    EXPECT_EQ(got[i], want[i]) << what << " at " << i;
  }
}

tally::dtype edge_type_of(const std::string& numpy_dtype) {
  return numpy_dtype == "float16" ? tally::dtype::f16
         : numpy_dtype == "float32" ? tally::dtype::f32
                                    : tally::dtype::f64;
}

TEST(NumpyGolden, GoldenFileIsPresent) {
  EXPECT_GT(golden()["cases"].size(), 50u);
}

TEST(NumpyGolden, RegularAxisCountsEdgesAndDensity) {
  const auto cases = cases_of("regular");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string what = "histogram(" + c["dtype"].get<std::string>() + ", bins=" +
                             std::to_string(c["bins"].get<int>()) + ", range=(" +
                             std::to_string(c["lo"].get<double>()) + ", " + std::to_string(c["hi"].get<double>()) + "))";
    const auto a = tally::axis::regular(c["bins"], c["lo"], c["hi"], edge_type_of(c["edge_dtype"]));
    expect_same_bits(a.edges(), numbers(c["edges"]), what + " edges");
    for (int threads : {1, 2}) {
      tally::options o;
      o.threads = threads;
      tally::histogram h(a, o);
      const auto s = samples_as(c["dtype"], numbers(c["x"]));
      h.fill(s.v);
      EXPECT_EQ(h.counts(), counts_of(c["counts"])) << what;
      expect_same_bits(h.density(), numbers(c["density"]), what + " density");
    }
  }
}

TEST(NumpyGolden, VariableAxisCounts) {
  const auto cases = cases_of("variable");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    tally::histogram h(tally::axis::variable(numbers(c["edges"])));
    const auto s = samples_as(c["dtype"], numbers(c["x"]));
    h.fill(s.v);
    EXPECT_EQ(h.counts(), counts_of(c["counts"])) << c["dtype"] << " with " << c["edges"].size() << " edges";
  }
}

TEST(NumpyGolden, IntegerAxisIsBincount) {
  const auto cases = cases_of("bincount");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const auto x = c["x"].get<std::vector<std::int64_t>>();
    tally::histogram h(tally::axis::integer(0, c["minlength"].get<std::int64_t>()));
    h.fill(tally::make_view(x.data(), static_cast<std::int64_t>(x.size())));
    EXPECT_EQ(h.counts(), counts_of(c["counts"])) << x.size() << " samples";
  }
}

/// The generator make_numpy_golden.py uses.
std::vector<double> lcg(std::uint64_t seed, std::size_t n) {
  std::vector<double> out(n);
  for (auto& v : out) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v = std::ldexp(static_cast<double>(seed >> 11), -53);
  }
  return out;
}

TEST(NumpyGolden, WeightedSumsEqualNumpysBitForBit) {
  const auto cases = cases_of("weighted");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::size_t n = c["n"];
    const auto u = lcg(c["seed"], 2 * n);
    std::vector<double> x(u.begin(), u.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<double> w(n);
    for (std::size_t i = 0; i < n; ++i) w[i] = (u[n + i] * 2.0 - 1.0) * c["weight_scale"].get<double>();
    for (int threads : {1, 2, 3}) {
      tally::options o;
      o.weighted = true;
      o.threads = threads;
      tally::histogram h(tally::axis::regular(c["bins"], c["lo"], c["hi"]), o);
      h.fill(tally::make_view(x.data(), static_cast<std::int64_t>(n)),
             tally::make_view(w.data(), static_cast<std::int64_t>(n)));
      expect_same_bits(h.sums(), numbers(c["sums"]),
                       "weighted seed " + std::to_string(c["seed"].get<int>()) + ", threads " + std::to_string(threads));
    }
  }
}

TEST(NumpyGolden, HistogramddCountsAndDensity) {
  const auto cases = cases_of("nd");
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    std::vector<tally::axis> axes;
    const auto bins = c["bins"].get<std::vector<std::int64_t>>();
    for (std::size_t d = 0; d < bins.size(); ++d)
      axes.push_back(tally::axis::regular(bins[d], c["ranges"][d][0], c["ranges"][d][1]));
    const auto x = numbers(c["x"]);
    tally::histogram h(axes);
    h.fill(tally::columns_of(tally::make_view(x.data(), static_cast<std::int64_t>(x.size())),
                             static_cast<int>(bins.size())));
    EXPECT_EQ(h.counts(), counts_of(c["counts"])) << bins.size() << "-D";
    expect_same_bits(h.density(), numbers(c["density"]), std::to_string(bins.size()) + "-D density");
  }
}

/// make_numpy_golden.py's estimator_samples, again: the same arithmetic on the same lcg() draws.
std::vector<double> estimator_samples(const std::string& shape, const std::string& dtype, std::uint64_t seed,
                                      std::size_t n) {
  std::vector<std::vector<double>> u;
  for (std::uint64_t k = 0; k < 4; ++k) u.push_back(lcg(seed + k, n));
  const bool byte = dtype == "uint8";
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double a = u[0][i], b = u[1][i], c = u[2][i], d = u[3][i];
    if (shape == "uniform") x[i] = byte ? a * 256.0 : a * 200.0 - 100.0;
    else if (shape == "skewed") x[i] = (a * a) * (a * a) * (byte ? 256.0 : 1000.0);
    else if (shape == "hot") x[i] = a < 0.9 ? 17.25 : b * (byte ? 256.0 : 100.0);
    else if (shape == "normal" || shape == "sorted") x[i] = byte ? ((a + b) + (c + d)) * 64.0 : (((a + b) + (c + d)) - 2.0) * 10.0;
    else x[i] = 5.0;
  }
  if (shape == "sorted") std::sort(x.begin(), x.end());
  if (dtype != "float64")
    for (double& v : x) v = std::floor(v);
  return x;
}

TEST(NumpyGolden, BinEstimatorsMakeNumpysNumberOfBins) {
  const auto cases = cases_of("estimator");
  ASSERT_FALSE(cases.empty());
  int warned = 0;
  for (const auto& c : cases) {
    const std::string dtype = c["dtype"];
    const std::vector<double> x = estimator_samples(c["shape"], dtype, c["seed"], c["n"]);
    // The samples in their own type (the values are whole numbers for the integer types).
    const std::vector<std::uint8_t> bytes(x.begin(), x.end());
    const std::vector<std::int64_t> ints(x.begin(), x.end());
    const tally::view samples = dtype == "uint8"   ? tally::make_view(bytes.data(), static_cast<std::int64_t>(x.size()))
                                : dtype == "int64" ? tally::make_view(ints.data(), static_cast<std::int64_t>(x.size()))
                                                   : tally::make_view(x.data(), static_cast<std::int64_t>(x.size()));
    std::optional<std::pair<tally::range_end, tally::range_end>> range;  // Python floats, or the data's
    if (!c["range"].is_null())
      range.emplace(tally::range_end::python_float(c["range"][0]), tally::range_end::python_float(c["range"][1]));
    for (const auto& [name, bins] : c["bins"].items()) {
      const auto e = tally::bin_estimator_from_name(name);
      ASSERT_TRUE(e) << name;
      EXPECT_STREQ(tally::name_of(*e), name.c_str());
      const tally::bin_estimate got = tally::estimate_bins(*e, samples, range);
      EXPECT_EQ(got.bins, bins.get<std::int64_t>())
          << name << " of " << c["n"] << " " << c["shape"] << " " << dtype << " samples, range " << c["range"];
      if (*e == tally::bin_estimator::stone) {
        EXPECT_EQ(got.at_search_bound, c["stone_warns"].get<bool>()) << c["n"] << " " << c["shape"] << " " << dtype;
        warned += got.at_search_bound;
      }
    }
  }
  EXPECT_GT(warned, 0);  // the golden cases include stone searches that end at the bound
  EXPECT_FALSE(tally::bin_estimator_from_name("Auto"));
  EXPECT_FALSE(tally::bin_estimator_from_name("automatic"));
}

}  // namespace
