// The bundled sample run (no FILE) with its plots, and `tally info` / `tally strategies` /
// `tally plan`.
#include <gtest/gtest.h>

#include "harness.hpp"
#include "plot_check.hpp"
#include "tally/strategy.hpp"

namespace cli_test {
namespace {

TEST(Sample, RunsWithoutFile) {
  const outcome o = tally({"hist"});
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* expected : {"sample.png", "PNG, 256 x 256 pixels, 3 channels", "channel R:",
                               "channel G:", "channel B:", "samples 65536   in bins 65536",
                               "integer [0, 256), 256 bins", "(estimated from bin centres)", "│"})
    EXPECT_NE(o.out.find(expected), std::string::npos) << expected << "\n" << o.out;
}

// The sample's plots: three channels with a legend, the same texts in the PNG and the SVG.
TEST(Sample, DrawsBothPlots) {
  REQUIRE_PLOTS();
  scratch dir;
  const std::string png = dir.path("s.png"), svg = dir.path("s.svg");
  const outcome o = tally({"hist", "--plot", png});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("channel B:"), std::string::npos) << o.out;
  const image img = decode_png(read_bytes(png));
  EXPECT_EQ(img.width, 800);
  EXPECT_EQ(img.height, 450);
  EXPECT_GT(img.dark_pixels(0, 0, 800, 36), 30);  // the title and the legend's names
  // The legend's R, G and B boxes, in the title band.
  int red = 0, green = 0, blue = 0;
  for (int y = 0; y < 36; ++y)
    for (int x = 400; x < 800; ++x) {
      const unsigned char* p = img.at(x, y);
      red += p[0] > 150 && p[1] < 100 && p[2] < 100;
      green += p[1] > 120 && p[0] < 100 && p[2] < 100;
      blue += p[2] > 150 && p[0] < 100 && p[1] < 160;
    }
  EXPECT_GT(red, 20);
  EXPECT_GT(green, 20);
  EXPECT_GT(blue, 20);

  ASSERT_EQ(tally({"hist", "--plot", svg, "--no-bars"}).code, 0);
  const std::string text = read_bytes(svg);
  EXPECT_EQ(size_of_svg(text).width, 800);
  EXPECT_EQ(size_of_svg(text).height, 450);
  // Title, "value", "count", the tick labels (0 .. 250 at least) and the legend's R, G, B.
  EXPECT_GT(svg_glyphs(text), ink_characters({"sample.png (u8)", "value", "count", "0", "50", "100", "150",
                                              "200", "250", "R", "G", "B"}));
}

TEST(Sample, NoBarsDropsTheChart) {
  const outcome with = tally({"hist"}), without = tally({"hist", "--no-bars"});
  ASSERT_EQ(with.code, 0) << with.err;
  ASSERT_EQ(without.code, 0) << without.err;
  EXPECT_NE(with.out.find("█"), std::string::npos);
  EXPECT_EQ(without.out.find("█"), std::string::npos);
  EXPECT_NE(without.out.find("channel B:"), std::string::npos);
}

TEST(Info, ListsVersionAndBackends) {
  const outcome v = tally({"--version"});
  ASSERT_EQ(v.code, 0);
  const outcome o = tally({"info"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("tally " + v.out.substr(0, v.out.find('\n')) + "\n", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("  cpu   usable"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  cuda  "), std::string::npos) << o.out;
}

TEST(Strategies, ListsEveryRegisteredStrategy) {
  const outcome o = tally({"strategies"});
  ASSERT_EQ(o.code, 0) << o.err;
  std::size_t rows = 0;
  for (const tally::strategy_info& s : tally::strategies()) {
    const std::string where = s.where == tally::backend::cuda ? "cuda" : s.where == tally::backend::cpu ? "cpu" : "cpu or cuda";
    const std::size_t at = o.out.find("\n" + std::string(s.name) + " (" + where + ")\n");
    EXPECT_TRUE(at != std::string::npos || o.out.rfind(std::string(s.name) + " (" + where + ")\n", 0) == 0)
        << s.name << "\n" << o.out;
    ++rows;
  }
  EXPECT_EQ(rows, 10u);  // the enum's strategies, automatic included
  // Each row's three parts, each line within 100 columns.
  std::size_t applies = 0, chosen = 0, from = 0;
  while ((from = o.out.find("    applies to: ", from)) != std::string::npos) ++applies, ++from;
  from = 0;
  while ((from = o.out.find("    chosen: ", from)) != std::string::npos) ++chosen, ++from;
  EXPECT_EQ(applies, rows);
  EXPECT_EQ(chosen, rows);
  std::size_t start = 0;
  for (std::size_t end; (end = o.out.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, 100u) << o.out.substr(start, end - start);
  // The help text points there.
  EXPECT_NE(tally({"hist", "--help"}).out.find("see `tally strategies`"), std::string::npos);
}

TEST(Plan, DescribesThePlannersChoice) {
  const outcome o = tally({"plan", "--bins", "4096", "--dtype", "i32", "--n", "1000000"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("backend    cpu"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("strategy   cpu_private"), std::string::npos) << o.out;

  const outcome one =
      tally({"plan", "--bins", "64", "--dtype", "u8", "--threads", "1", "--kind", "integer"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("threads    1"), std::string::npos) << one.out;

  // Weights: f64 unless a type is given; f32 weights on the GPU are summed exactly.
  const outcome f64 = tally({"plan", "--backend", "cuda", "--dtype", "i32", "--bins", "256", "--weights"});
  ASSERT_EQ(f64.code, 0) << f64.err;
  EXPECT_EQ(f64.out.find("sums       exact"), std::string::npos) << f64.out;
  const outcome f32 = tally({"plan", "--backend", "cuda", "--dtype", "i32", "--bins", "256", "--weights=f32"});
  ASSERT_EQ(f32.code, 0) << f32.err;
  EXPECT_NE(f32.out.find("sums       exact"), std::string::npos) << f32.out;
  EXPECT_EQ(tally({"plan", "--weights=complex"}).code, 2);
  EXPECT_EQ(tally({"plan", "--dtype", "complex"}).code, 2);
  EXPECT_EQ(tally({"plan", "--kind", "circular"}).code, 2);
}

}  // namespace
}  // namespace cli_test
