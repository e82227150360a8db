// `tally hist` end to end: results read back from --out, checked against counts worked out here.
#include <gtest/gtest.h>
#include <stb_image_write.h>

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "harness.hpp"
#include "plot_check.hpp"

namespace cli_test {
namespace {

using json = nlohmann::json;
using counts = std::vector<std::uint64_t>;
using sums = std::vector<double>;

/// `tally hist ARGS --out DIR/result.json`, parsed; fails the test if the run fails.
json hist_json(const scratch& dir, std::vector<std::string> args) {
  const std::string out = dir.path("result.json");
  args.insert(args.begin(), "hist");
  args.insert(args.end(), {"--out", out, "--no-bars"});
  const outcome o = tally(args);
  EXPECT_EQ(o.code, 0) << o.err;
  return json::parse(read_bytes(out));
}

counts counts_of(const json& j, int h = 0) { return j["histograms"][h]["counts"].get<counts>(); }
std::vector<double> edges_of(const json& j, int h = 0, int axis = 0) {
  return j["histograms"][h]["axes"][axis]["edges"].get<std::vector<double>>();
}

std::string write_npy(const scratch& dir, const std::string& name, const std::string& descr,
                      const std::vector<std::int64_t>& shape, const std::string& data) {
  const std::string path = dir.path(name);
  write_bytes(path, npy(descr, shape, data));
  return path;
}

TEST(Hist, U8NpyGetsOneBinPerInteger) {
  scratch dir;
  const std::string in =
      write_npy(dir, "a.npy", "|u1", {7}, bytes_of<std::uint8_t>({0, 1, 1, 2, 2, 2, 5}));
  const json j = hist_json(dir, {in});
  EXPECT_EQ(j["histograms"][0]["axes"][0]["kind"], "integer");
  EXPECT_EQ(edges_of(j), (std::vector<double>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(counts_of(j), (counts{1, 2, 3, 0, 0, 1}));
  EXPECT_EQ(j["histograms"][0]["axes"][0]["min"], 0);
  EXPECT_EQ(j["histograms"][0]["axes"][0]["max"], 5);

  const std::string csv = dir.path("a.csv");
  const outcome o = tally({"hist", in, "--out", csv});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto rows = csv_rows(read_bytes(csv));
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"channel", "bin_lo", "bin_hi", "count"}));
  EXPECT_EQ(rows[3], (std::vector<std::string>{"0", "2", "3", "3"}));
  EXPECT_NE(o.out.find("min 0   max 5   (exact)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("samples 7   in bins 7   dropped 0"), std::string::npos) << o.out;
}

TEST(Hist, I32NpyNegativeValuesAndWideSpan) {
  scratch dir;
  const json narrow = hist_json(
      dir, {write_npy(dir, "n.npy", "<i4", {5}, bytes_of<std::int32_t>({-3, -1, -1, 0, 7}))});
  EXPECT_EQ(edges_of(narrow).front(), -3);
  EXPECT_EQ(edges_of(narrow).back(), 8);
  EXPECT_EQ(counts_of(narrow), (counts{1, 0, 2, 1, 0, 0, 0, 0, 0, 0, 1}));

  // A span over 65536 gets 64 regular bins over [min, max]; 500000 is edge 32 exactly.
  const json wide = hist_json(
      dir, {write_npy(dir, "w.npy", "<i4", {3}, bytes_of<std::int32_t>({0, 1000000, 500000}))});
  EXPECT_EQ(wide["histograms"][0]["axes"][0]["kind"], "regular");
  const counts c = counts_of(wide);
  ASSERT_EQ(c.size(), 64u);
  EXPECT_EQ(c[0], 1u);
  EXPECT_EQ(c[32], 1u);
  EXPECT_EQ(c[63], 1u);
}

TEST(Hist, IntegerEdgesPast2To53AreExact) {
  scratch dir;
  // Doubles cannot hold these integers: every edge, label and range is printed from int64.
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::string in = dir.path("big.i64");
  write_bytes(in, bytes_of<std::int64_t>({kMax - 2, kMax - 1, kMax - 1}));
  const json j = hist_json(dir, {in, "--dtype", "i64"});
  EXPECT_EQ(j["histograms"][0]["axes"][0]["kind"], "integer");
  EXPECT_EQ(j["histograms"][0]["axes"][0]["edges"].get<std::vector<std::int64_t>>(),
            (std::vector<std::int64_t>{kMax - 2, kMax - 1, kMax}));
  EXPECT_EQ(counts_of(j), (counts{1, 2}));

  const std::string csv = dir.path("big.csv");
  const outcome o = tally({"hist", in, "--dtype", "i64", "--out", csv});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto rows = csv_rows(read_bytes(csv));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2], (std::vector<std::string>{"0", "9223372036854775806",
                                               "9223372036854775807", "2"}));
  for (const char* expected : {"integer [9223372036854775805, 9223372036854775807), 2 bins",
                               "  9223372036854775805 │", "  9223372036854775806 │"})
    EXPECT_NE(o.out.find(expected), std::string::npos) << expected << "\n" << o.out;
}

TEST(Hist, F64EdgesMatchNumpyDocumentation) {
  scratch dir;
  // np.histogram([1, 2, 1], bins=[0, 1, 2, 3]) -> [0, 2, 1]
  const std::string a = write_npy(dir, "a.npy", "<f8", {3}, bytes_of<double>({1, 2, 1}));
  EXPECT_EQ(counts_of(hist_json(dir, {a, "--edges", "0,1,2,3"})), (counts{0, 2, 1}));
  // np.histogram(np.arange(4), bins=np.arange(5)) -> [1, 1, 1, 1]
  const std::string b = write_npy(dir, "b.npy", "<f8", {4}, bytes_of<double>({0, 1, 2, 3}));
  EXPECT_EQ(counts_of(hist_json(dir, {b, "--edges", "0,1,2,3,4"})), (counts{1, 1, 1, 1}));
}

TEST(Hist, LastBinIsClosedAndDroppedSamplesAreCounted) {
  scratch dir;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::string in = write_npy(dir, "a.npy", "<f8", {8},
                                   bytes_of<double>({0, 0.25, 0.5, 0.75, 1.0, 1.5, -0.1, nan}));
  const json j = hist_json(dir, {in, "--bins", "4", "--range", "0,1"});
  EXPECT_EQ(counts_of(j), (counts{1, 1, 1, 2}));
  const json& h = j["histograms"][0];
  EXPECT_EQ(h["flow"]["underflow"], 1);
  EXPECT_EQ(h["flow"]["overflow"], 1);
  EXPECT_EQ(h["flow"]["nan"], 1);
  EXPECT_EQ(h["samples"], 8);
  EXPECT_EQ(h["in_bins"], 5);
  EXPECT_EQ(h["axes"][0]["min"], -0.1);  // NaN is not a minimum
  EXPECT_EQ(h["axes"][0]["max"], 1.5);

  const outcome o = tally({"hist", in, "--bins", "4", "--range", "0,1", "--flow"});
  EXPECT_NE(o.out.find("dropped 3 (underflow 1, overflow 1, nan 1)"), std::string::npos) << o.out;
}

TEST(Hist, F32SamplesUseFloat32EdgesAsNumpyDoes) {
  scratch dir;
  // numpy computes f32 edges: edge 7 of linspace(0, 1, 11) is 0.7f, so 0.7f lands in bin 7;
  // against the f64 edge 0.7000000000000001 it would land in bin 6.
  const std::string in = write_npy(dir, "a.npy", "<f4", {1}, bytes_of<float>({0.7f}));
  const json j = hist_json(dir, {in, "--bins", "10", "--range", "0,1"});
  EXPECT_EQ(j["histograms"][0]["axes"][0]["edge_type"], "f32");
  EXPECT_EQ(edges_of(j)[7], static_cast<double>(0.7f));
  counts want(10, 0);
  want[7] = 1;
  EXPECT_EQ(counts_of(j), want);
}

TEST(Hist, DefaultRangeIsTheDataMinMax) {
  scratch dir;
  const json j =
      hist_json(dir, {write_npy(dir, "a.npy", "<f8", {4}, bytes_of<double>({1, 2, 3, 4}))});
  const std::vector<double> e = edges_of(j);
  ASSERT_EQ(e.size(), 65u);
  EXPECT_EQ(e.front(), 1);
  EXPECT_EQ(e.back(), 4);
  const counts c = counts_of(j);  // bin width 3/64: 2 falls in bin 21, 3 in bin 42
  EXPECT_EQ(c[0], 1u);
  EXPECT_EQ(c[21], 1u);
  EXPECT_EQ(c[42], 1u);
  EXPECT_EQ(c[63], 1u);

  // numpy widens a constant input to [v - 0.5, v + 0.5].
  const json constant =
      hist_json(dir, {write_npy(dir, "c.npy", "<f8", {3}, bytes_of<double>({5, 5, 5}))});
  EXPECT_EQ(edges_of(constant).front(), 4.5);
  EXPECT_EQ(edges_of(constant).back(), 5.5);
  EXPECT_EQ(constant["histograms"][0]["in_bins"], 3);
}

TEST(Hist, IntegerFlagBinsFloatsByFloor) {
  scratch dir;
  const std::string in =
      write_npy(dir, "a.npy", "<f8", {4}, bytes_of<double>({0.5, 1.2, 1.9, 3.0}));
  const json j = hist_json(dir, {in, "--integer"});
  EXPECT_EQ(edges_of(j), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(counts_of(j), (counts{1, 2, 0, 1}));
  // With a range, --integer means the integers LO..HI-1.
  EXPECT_EQ(counts_of(hist_json(dir, {in, "--integer", "--range", "1,3"})), (counts{2, 0}));
}

const std::vector<double> kPoints = {0.1, 0.1, 0.1, 1.5, 0.9, 1.9, 0.6, 0.2, 0.4, 1.0};  // 5 x 2

TEST(Hist, MatrixNpyIsOneNdHistogram) {
  scratch dir;
  const std::string in = write_npy(dir, "m.npy", "<f8", {5, 2}, bytes_of(kPoints));
  const json j = hist_json(dir, {in, "--bins", "2", "--range", "0,1,0,2"});
  EXPECT_EQ(j["mode"], "nd");
  EXPECT_EQ(j["histograms"][0]["shape"], json::array({2, 2}));
  // Cells (x<0.5, y<1), (x<0.5, y>=1), (x>=0.5, y<1), (x>=0.5, y>=1).
  EXPECT_EQ(counts_of(j), (counts{1, 2, 1, 1}));
  EXPECT_EQ(edges_of(j, 0, 1).back(), 2);

  const std::string csv = dir.path("m.csv");
  const outcome o = tally({"hist", in, "--bins", "2", "--range", "0,1,0,2", "--out", csv});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto rows = csv_rows(read_bytes(csv));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"axis0_lo", "axis0_hi", "axis1_lo", "axis1_hi", "count"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"0", "0.5", "1", "2", "2"}));
  EXPECT_NE(o.out.find("N-D histogram, 2 axes, 4 cells"), std::string::npos) << o.out;
}

TEST(Hist, MatrixWithChannelsIsOneHistogramPerColumn) {
  scratch dir;
  const std::string in = write_npy(dir, "m.npy", "<f8", {5, 2}, bytes_of(kPoints));
  const json j = hist_json(dir, {in, "--channels", "2", "--bins", "2", "--range", "0,1,0,2"});
  EXPECT_EQ(j["mode"], "channels");
  ASSERT_EQ(j["histograms"].size(), 2u);
  EXPECT_EQ(counts_of(j, 0), (counts{3, 2}));  // x: 0.1 0.1 0.4 | 0.9 0.6
  EXPECT_EQ(counts_of(j, 1), (counts{2, 3}));  // y: 0.1 0.2 | 1.5 1.9 1.0
}

TEST(Hist, RawFilesOfEachKind) {
  scratch dir;
  const std::string u16 = dir.path("a.u16");
  write_bytes(u16, bytes_of<std::uint16_t>({1, 1, 3}));
  EXPECT_EQ(counts_of(hist_json(dir, {u16, "--dtype", "u16"})), (counts{2, 0, 1}));

  const std::string i16 = dir.path("a.i16");
  write_bytes(i16, bytes_of<std::int16_t>({-2, -2, 1}));
  const json ji = hist_json(dir, {i16, "--dtype", "i16"});
  EXPECT_EQ(edges_of(ji).front(), -2);
  EXPECT_EQ(counts_of(ji), (counts{2, 0, 0, 1}));

  const std::string f32 = dir.path("a.f32");
  write_bytes(f32, bytes_of<float>({0.5f, 1.5f, 1.5f}));
  EXPECT_EQ(counts_of(hist_json(dir, {f32, "--dtype", "float32", "--bins", "2", "--range", "0,2"})),
            (counts{1, 2}));

  const std::string bf16 = dir.path("a.bf16");  // 1.0 and 2.0 as bfloat16 bits
  write_bytes(bf16, bytes_of<std::uint16_t>({0x3F80, 0x3F80, 0x4000}));
  EXPECT_EQ(counts_of(hist_json(dir, {bf16, "--dtype", "bf16", "--bins", "2", "--range", "0,4"})),
            (counts{2, 1}));

  const std::string pairs = dir.path("pairs.u8");  // two interleaved channels
  write_bytes(pairs, bytes_of<std::uint8_t>({1, 10, 2, 20, 1, 30}));
  const json jc = hist_json(dir, {pairs, "--dtype", "u8", "--channels", "2"});
  EXPECT_EQ(counts_of(jc, 0), (counts{2, 1}));
  const counts second = counts_of(jc, 1);
  ASSERT_EQ(second.size(), 21u);
  EXPECT_EQ(second[0] + second[10] + second[20], 3u);

  // The same rows as one 2-D histogram.
  const json jn = hist_json(dir, {pairs, "--dtype", "u8", "--channels", "2", "--nd"});
  EXPECT_EQ(jn["mode"], "nd");
  EXPECT_EQ(jn["histograms"][0]["shape"], json::array({2, 21}));
  const counts cells = counts_of(jn);
  EXPECT_EQ(cells[0 * 21 + 0] + cells[1 * 21 + 10] + cells[0 * 21 + 20], 3u);
}

TEST(Hist, NpyByteOrdersVersionsAndHalfFloats) {
  scratch dir;
  // Big-endian int32 1, 2, 2.
  const std::string be =
      write_npy(dir, "be.npy", ">i4", {3}, std::string("\0\0\0\x01\0\0\0\x02\0\0\0\x02", 12));
  EXPECT_EQ(counts_of(hist_json(dir, {be})), (counts{1, 2}));

  const std::string v2 = dir.path("v2.npy");
  write_bytes(v2, npy("<f8", {2}, bytes_of<double>({0.25, 0.75}), 2));
  EXPECT_EQ(counts_of(hist_json(dir, {v2, "--bins", "2", "--range", "0,1"})), (counts{1, 1}));

  const std::string fortran = dir.path("f.npy");
  write_bytes(fortran, npy("<i8", {3}, bytes_of<std::int64_t>({4, 4, 6}), 1, true));
  EXPECT_EQ(counts_of(hist_json(dir, {fortran})), (counts{2, 0, 1}));

  // float16 0.5, 1.0, 1.0.
  const std::string f16 =
      write_npy(dir, "h.npy", "<f2", {3}, bytes_of<std::uint16_t>({0x3800, 0x3C00, 0x3C00}));
  const json jh = hist_json(dir, {f16, "--bins", "2", "--range", "0,2"});
  EXPECT_EQ(counts_of(jh), (counts{1, 2}));
  EXPECT_EQ(jh["histograms"][0]["axes"][0]["min"], 0.5);
}

TEST(Hist, PngImagesPerChannelAndGray) {
  scratch dir;
  const unsigned char rgb[] = {10, 20, 30, 10, 200, 30, 255, 0, 30, 10, 20, 30};
  const std::string png = dir.path("rgb.png");
  ASSERT_TRUE(stbi_write_png(png.c_str(), 4, 1, 3, rgb, 4 * 3));
  const json j = hist_json(dir, {png});
  ASSERT_EQ(j["histograms"].size(), 3u);
  std::map<std::string, std::map<int, std::uint64_t>> want = {
      {"R", {{10, 3}, {255, 1}}}, {"G", {{20, 2}, {200, 1}, {0, 1}}}, {"B", {{30, 4}}}};
  for (int c = 0; c < 3; ++c) {
    const std::string name = j["histograms"][c]["axes"][0]["name"];
    const counts got = counts_of(j, c);
    ASSERT_EQ(got.size(), 256u) << name;
    for (int v = 0; v < 256; ++v) EXPECT_EQ(got[v], want[name][v]) << name << " value " << v;
  }

  // Gray pixels keep their value under stb's luminance weights.
  const unsigned char gray_rgb[] = {0, 0, 0, 100, 100, 100, 100, 100, 100, 255, 255, 255};
  const std::string gray = dir.path("gray.png");
  ASSERT_TRUE(stbi_write_png(gray.c_str(), 2, 2, 3, gray_rgb, 2 * 3));
  const json jg = hist_json(dir, {gray, "--gray"});
  ASSERT_EQ(jg["histograms"].size(), 1u);
  const counts g = counts_of(jg);
  EXPECT_EQ(g[0], 1u);
  EXPECT_EQ(g[100], 2u);
  EXPECT_EQ(g[255], 1u);
}

// Standard input, piped with no FILE or named `-`, is read as a file of any format; the bundled
// sample is taken only where stdin is a terminal or /dev/null (tally() runs with /dev/null).
TEST(Hist, StandardInputIsReadWhenPipedOrNamed) {
  scratch dir;
  const std::string in = write_npy(dir, "a.npy", "<f4", {5}, bytes_of<float>({0.5f, 1.5f, 1.5f, 2.5f, 3.5f}));
  const std::string out = dir.path("piped.json");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"hist", "--bins", "3", "--out", out, "--no-bars"},
        std::vector<std::string>{"hist", "-", "--bins", "3", "--out", out, "--no-bars"}}) {
    const outcome o = tally_piped(args, in);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("file     stdin"), std::string::npos) << o.out;
    const json piped = json::parse(read_bytes(out));
    EXPECT_EQ(counts_of(piped), counts_of(hist_json(dir, {in, "--bins", "3"})));
    EXPECT_EQ(counts_of(piped), (counts{1, 2, 2}));
  }
  // An image through a pipe decodes as the file does.
  const unsigned char rgb[] = {10, 20, 30, 10, 200, 30};
  const std::string png = dir.path("rgb.png");
  ASSERT_TRUE(stbi_write_png(png.c_str(), 2, 1, 3, rgb, 2 * 3));
  const outcome o = tally_piped({"hist", "--out", out, "--no-bars"}, png);
  ASSERT_EQ(o.code, 0) << o.err;
  const json j = json::parse(read_bytes(out));
  ASSERT_EQ(j["histograms"].size(), 3u);
  EXPECT_EQ(counts_of(j, 0)[10], 2u);
  EXPECT_EQ(counts_of(j, 1)[200], 1u);
  // Without a pipe and without FILE: the sample image.
  const outcome sample = tally({"hist", "--no-bars"});
  ASSERT_EQ(sample.code, 0) << sample.err;
  EXPECT_NE(sample.out.find("sample.png"), std::string::npos) << sample.out;
}

// Text and CSV: numpy.loadtxt's numbers (signs, exponents, inf, nan, '#' comments), a header's
// names, --column by index or name (several: one N-D histogram), --delimiter.
TEST(Hist, TextAndCsvColumns) {
  scratch dir;
  const std::string csv = dir.path("t.csv");
  write_bytes(csv, "# measured\nx,y , z\n1,+2.5,1e1\n\n3,-4,nan   # a comment\r\n0.5,1E-1,-inf\n");
  const json x = hist_json(dir, {csv, "--column", "x", "--bins", "2"});
  EXPECT_EQ(x["histograms"][0]["axes"][0]["name"], "x");
  EXPECT_EQ(edges_of(x), (std::vector<double>{0.5, 1.75, 3}));
  EXPECT_EQ(counts_of(x), (counts{2, 1}));
  const json y = hist_json(dir, {csv, "--column", "1", "--range", "-5,5", "--bins", "2"});
  EXPECT_EQ(counts_of(y), (counts{1, 2}));
  EXPECT_EQ(y["histograms"][0]["axes"][0]["name"], "y");
  // z: NaN and -inf are dropped below and as NaN, as numpy with a range.
  const outcome z = tally({"hist", csv, "--column", "z", "--range", "0,20", "--bins", "2", "--flow", "--no-bars"});
  ASSERT_EQ(z.code, 0) << z.err;
  EXPECT_NE(z.out.find("samples 3   in bins 1   dropped 2"), std::string::npos) << z.out;
  // Two columns: one 2-D histogram.
  const json xy = hist_json(dir, {csv, "--column", "x,y", "--bins", "2", "--range", "0,4,-5,5"});
  ASSERT_EQ(xy["histograms"][0]["axes"].size(), 2u);
  EXPECT_EQ(counts_of(xy), (counts{0, 2, 1, 0}));
  // Whitespace-separated, no header; a semicolon delimiter given.
  const std::string txt = dir.path("t.txt");
  write_bytes(txt, "1 2\n2\t3\n  3 4\n");
  EXPECT_EQ(counts_of(hist_json(dir, {txt, "--column", "1", "--bins", "3"})), (counts{1, 1, 1}));
  const std::string semi = dir.path("s.txt");
  write_bytes(semi, "1;2\n5;6\n");
  EXPECT_EQ(counts_of(hist_json(dir, {semi, "--delimiter", ";", "--column", "0", "--bins", "2"})), (counts{1, 1}));
}

TEST(Hist, JpegImagesDecodeToChannels) {
  scratch dir;
  std::vector<unsigned char> pixels(16 * 8 * 3);
  for (std::size_t i = 0; i < pixels.size(); i += 3)
    pixels[i] = 128, pixels[i + 1] = 64, pixels[i + 2] = 200;
  const std::string jpg = dir.path("flat.jpg");
  ASSERT_TRUE(stbi_write_jpg(jpg.c_str(), 16, 8, 3, pixels.data(), 100));
  const json j = hist_json(dir, {jpg});
  EXPECT_EQ(j["format"], "JPEG");
  ASSERT_EQ(j["histograms"].size(), 3u);
  const int want[] = {128, 64, 200};
  for (int c = 0; c < 3; ++c) {
    const counts got = counts_of(j, c);
    EXPECT_EQ(j["histograms"][c]["samples"], 128);
    // JPEG is lossy: a flat colour comes back within a few levels.
    std::uint64_t near = 0;
    for (int v = want[c] - 4; v <= want[c] + 4; ++v) near += got[v];
    EXPECT_EQ(near, 128u) << c;
  }
}

TEST(Hist, WeightsFromNpyAndRaw) {
  scratch dir;
  const std::string in =
      write_npy(dir, "a.npy", "<f8", {4}, bytes_of<double>({0.5, 1.5, 1.5, 2.5}));
  const std::string w64 = write_npy(dir, "w.npy", "<f8", {4}, bytes_of<double>({1, 2, 3, 0.5}));
  const std::string w32 = dir.path("w.f32");
  write_bytes(w32, bytes_of<float>({1, 2, 3, 0.5f}));
  for (const std::string& w : {w64, w32}) {
    const json j = hist_json(dir, {in, "--edges", "0,1,2,3", "--weights", w});
    EXPECT_EQ(j["value"], "sum");
    EXPECT_EQ(j["histograms"][0]["sums"].get<sums>(), (sums{1, 5, 0.5})) << w;
  }
  const std::string csv = dir.path("w.csv");
  ASSERT_EQ(tally({"hist", in, "--edges", "0,1,2,3", "--weights", w64, "--out", csv}).code, 0);
  EXPECT_EQ(csv_rows(read_bytes(csv))[0].back(), "sum");
  EXPECT_EQ(csv_rows(read_bytes(csv))[2].back(), "5");

  // One weight per row: an N-D histogram's points, and an interleaved pixel's channels.
  const std::string m = write_npy(dir, "m.npy", "<f8", {5, 2}, bytes_of(kPoints));
  const std::string wm = write_npy(dir, "wm.npy", "<f8", {5}, bytes_of<double>({1, 1, 1, 1, 10}));
  EXPECT_EQ(hist_json(dir, {m, "--bins", "2", "--range", "0,1,0,2", "--weights",
                            wm})["histograms"][0]["sums"]
                .get<sums>(),
            (sums{1, 11, 1, 1}));
  const std::string px = dir.path("px.u8");
  write_bytes(px, bytes_of<std::uint8_t>({1, 10, 2, 20}));
  const std::string wp = write_npy(dir, "wp.npy", "<f4", {2}, bytes_of<float>({2, 3}));
  const json jc = hist_json(dir, {px, "--dtype", "u8", "--channels", "2", "--weights", wp});
  EXPECT_EQ(jc["histograms"][0]["sums"].get<sums>(), (sums{2, 3}));
  EXPECT_EQ(jc["histograms"][1]["sums"][10], 3.0);
}

TEST(Hist, SmallChunksGiveTheSameCountsAndSums) {
  scratch dir;
  std::vector<std::int32_t> values(100000);
  std::vector<double> weights(values.size());
  std::uint32_t state = 12345;
  std::map<std::int32_t, std::uint64_t> want_counts;
  std::map<std::int32_t, double> want_sums;
  for (std::size_t i = 0; i < values.size(); ++i) {
    state = state * 1664525u + 1013904223u;  // LCG
    values[i] = static_cast<std::int32_t>(state >> 16) % 1000 - 500;
    weights[i] = (i % 7) * 0.25;  // exact in binary, so the sums do not depend on order
    ++want_counts[values[i]];
    want_sums[values[i]] += weights[i];
  }
  const std::string in = write_npy(dir, "big.npy", "<i4", {100000}, bytes_of(values));
  const std::string w = write_npy(dir, "bigw.npy", "<f8", {100000}, bytes_of(weights));
  const std::int32_t lo = want_counts.begin()->first;

  // About 10 KiB chunks: dozens of fills, in both the range pass and the fill pass.
  const json jc = hist_json(
      dir, {in, "--chunk-mb", "0.01", "--counts", "32", "--threads", "1", "--backend", "cpu"});
  // Every bin, the empty ones included.
  const auto bins = static_cast<std::size_t>(want_counts.rbegin()->first - lo + 1);
  counts c_want(bins, 0);
  sums s_want(bins, 0.0);
  for (const auto& [v, n] : want_counts) c_want[v - lo] = n;
  for (const auto& [v, total] : want_sums) s_want[v - lo] = total;
  EXPECT_EQ(counts_of(jc), c_want);

  const sums s = hist_json(dir, {in, "--chunk-mb", "0.01", "--weights", w})["histograms"][0]["sums"]
                     .get<sums>();
  EXPECT_EQ(s, s_want);
}

TEST(Hist, ReportEstimatesFromTheBins) {
  scratch dir;
  std::vector<std::uint8_t> v(100);
  for (int i = 0; i < 100; ++i) v[i] = static_cast<std::uint8_t>(i);
  const outcome o = tally({"hist", write_npy(dir, "a.npy", "|u1", {100}, bytes_of(v))});
  ASSERT_EQ(o.code, 0) << o.err;
  // 0..99 once each: mean 49.5, std sqrt((100^2 - 1) / 12), median 49.5.
  EXPECT_NE(o.out.find("mean 49.5   std 28.8661"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("p50 49.5"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(3 bins per line)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("0..2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("█"), std::string::npos) << o.out;
}

TEST(Hist, PlotsOfNpyData) {
  REQUIRE_PLOTS();
  scratch dir;
  const std::string in = write_npy(dir, "a.npy", "<f8", {4}, bytes_of<double>({1, 2, 2, 3}));
  const std::string png = dir.path("p.png");
  ASSERT_EQ(tally({"hist", in, "--plot", png}).code, 0);
  const image img = decode_png(read_bytes(png));
  std::set<int> colours;  // more than the background and the axes: bars were drawn
  for (std::size_t i = 0; i < img.rgb.size(); i += 3)
    colours.insert(img.rgb[i] << 16 | img.rgb[i + 1] << 8 | img.rgb[i + 2]);
  EXPECT_EQ(img.width, 800);
  EXPECT_EQ(img.height, 450);
  EXPECT_GE(colours.size(), 3u);
  EXPECT_GT(img.dark_pixels(0, 0, 800, 36), 30);     // the title
  EXPECT_GT(img.dark_pixels(0, 401, 800, 418), 30);  // the x tick labels

  // A heat map: the texts of the model of the same result (the axes' names, the fullest cell's
  // count 2 in the title and atop the colour bar), one glyph a character in the SVG.
  const std::string m = write_npy(dir, "m.npy", "<f8", {5, 2}, bytes_of(kPoints));
  const std::string svg = dir.path("heat.svg");
  ASSERT_EQ(tally({"hist", m, "--bins", "2", "--range", "0,1,0,2", "--plot", svg}).code, 0);
  const std::string text = read_bytes(svg);
  EXPECT_EQ(text.rfind("<?xml", 0), 0u);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  EXPECT_EQ(size_of_svg(text).width, 800);
  EXPECT_EQ(size_of_svg(text).height, 450);
  const tally_cli::plot_model model = tally_cli::make_plot_model(
      matrix_result(m, kPoints, {tally::axis::regular(2, 0, 1), tally::axis::regular(2, 0, 2)}));
  const std::vector<std::string> texts = tally_cli::plot_texts(model);
  EXPECT_EQ(svg_glyphs(text), ink_characters(texts)) << ::testing::PrintToString(texts);
  EXPECT_EQ(model.title, "m.npy (f64), count per cell, darkest 2");
  EXPECT_EQ(texts[1], "axis 0");
  EXPECT_EQ(texts[2], "axis 1");
  EXPECT_EQ(texts.back(), "2");  // the colour bar's top tick: the fullest cell holds 2
}

/// The labels of ticks.
std::vector<std::string> labels(const std::vector<tally_cli::tick>& ticks) {
  std::vector<std::string> out;
  for (const auto& t : ticks) out.push_back(t.label);
  return out;
}

// --title, --xlabel, --ylabel replace the made-up labels; --density draws count / (total x width)
// (here 1/4, 2/4, 1/4 over bins of width 1: the top tick 0.5); --log draws heights on decades
// from half a decade below the least bar (counts 1, 2, 1: ticks 0.1 .. 2); a 2-D --density plot
// names its fullest cell's density. Without --plot they are a usage error. Each plot the tool
// writes draws the texts of the model of the same result with the same options: one glyph a
// character (the model's texts are checked here, the glyphs against them).
TEST(Hist, PlotLabelsDensityAndLogScale) {
  scratch dir;
  const std::vector<double> values = {0.5, 1.5, 1.5, 2.5};
  const std::string in = write_npy(dir, "a.npy", "<f8", {4}, bytes_of(values));
  for (const char* option : {"--log", "--density"}) {
    const outcome o = tally({"hist", in, option});
    EXPECT_EQ(o.code, 2);
    EXPECT_NE(o.err.find("are for --plot"), std::string::npos) << o.err;
  }
  REQUIRE_PLOTS();

  const std::string svg = dir.path("p.svg");
  const std::vector<std::string> base = {"hist", in, "--bins", "3", "--range", "0,3", "--no-bars", "--plot", svg};
  const tally_cli::hist_result same = result_of(in, values, tally::axis::regular(3, 0, 3));
  // The model of the plot `extra` asks for, checked against the SVG the tool writes.
  auto plot = [&](std::vector<std::string> extra, const tally_cli::plot_options& options) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const outcome o = tally(args);
    EXPECT_EQ(o.code, 0) << o.err;
    const tally_cli::plot_model m = tally_cli::make_plot_model(same, options);
    const std::vector<std::string> texts = tally_cli::plot_texts(m);
    EXPECT_EQ(svg_glyphs(read_bytes(svg)), ink_characters(texts)) << ::testing::PrintToString(texts);
    return m;
  };
  const tally_cli::plot_model plain = plot({}, {});
  EXPECT_EQ(plain.title, "a.npy (f64)");
  const tally_cli::plot_model labelled =
      plot({"--title", "Heights <cm>", "--xlabel", "height", "--ylabel", "people"}, {"Heights <cm>", "height", "people"});
  EXPECT_EQ(labelled.title, "Heights <cm>");
  EXPECT_EQ(labelled.x_label, "height");
  EXPECT_EQ(labelled.y_label, "people");
  // Only the labels changed: the SVGs differ by their characters alone.
  EXPECT_EQ(ink_characters(tally_cli::plot_texts(labelled)) - ink_characters(tally_cli::plot_texts(plain)),
            ink_characters({"Heights <cm>", "height", "people"}) - ink_characters({"a.npy (f64)", "value", "count"}));
  EXPECT_EQ(labels(tally_cli::y_ticks(labelled)), (std::vector<std::string>{"0", "0.5", "1", "1.5", "2"}));  // counts

  const tally_cli::plot_model density = plot({"--density"}, {"", "", "", false, true});
  EXPECT_EQ(density.y_label, "density");
  const std::vector<std::string> density_ticks = labels(tally_cli::y_ticks(density));
  EXPECT_EQ(density_ticks.back(), "0.5") << ::testing::PrintToString(density_ticks);
  EXPECT_EQ(std::count(density_ticks.begin(), density_ticks.end(), "2"), 0);

  const tally_cli::plot_model log = plot({"--log"}, {"", "", "", true, false});
  EXPECT_EQ(labels(tally_cli::y_ticks(log)), (std::vector<std::string>{"0.1", "0.2", "0.5", "1", "2"}));

  const std::string m = write_npy(dir, "m.npy", "<f8", {5, 2}, bytes_of(kPoints));
  const outcome heat = tally({"hist", m, "--bins", "2", "--range", "0,1,0,2", "--plot", svg, "--density", "--log"});
  ASSERT_EQ(heat.code, 0) << heat.err;
  const tally_cli::plot_model heat_model = tally_cli::make_plot_model(
      matrix_result(m, kPoints, {tally::axis::regular(2, 0, 1), tally::axis::regular(2, 0, 2)}), {"", "", "", true, true});
  EXPECT_NE(heat_model.title.find("density per cell (log colours)"), std::string::npos) << heat_model.title;
  EXPECT_EQ(svg_glyphs(read_bytes(svg)), ink_characters(tally_cli::plot_texts(heat_model)));
}

}  // namespace
}  // namespace cli_test
