// Checks tally against numpy's own outputs (numpy_golden.json, from make_numpy_golden.py), bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
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

}  // namespace
