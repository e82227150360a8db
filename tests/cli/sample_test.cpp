// The bundled sample run (no FILE) with its plots, and `tally info` / `tally strategies` /
// `tally plan`.
#include <gtest/gtest.h>
#include <stb_image.h>

#include "harness.hpp"
#include "tally/strategy.hpp"

namespace cli_test {
namespace {

TEST(Sample, RunsWithoutFileAndDrawsBothPlots) {
  scratch dir;
  const std::string png = dir.path("s.png"), svg = dir.path("s.svg");
  const outcome o = tally({"hist", "--plot", png});
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* expected : {"sample.png", "PNG, 256 x 256 pixels, 3 channels", "channel R:",
                               "channel G:", "channel B:", "samples 65536   in bins 65536",
                               "integer [0, 256), 256 bins", "(estimated from bin centres)", "│"})
    EXPECT_NE(o.out.find(expected), std::string::npos) << expected << "\n" << o.out;

  int w = 0, h = 0, n = 0;
  unsigned char* pixels = stbi_load(png.c_str(), &w, &h, &n, 3);
  ASSERT_NE(pixels, nullptr);
  stbi_image_free(pixels);
  EXPECT_EQ(w, 800);
  EXPECT_EQ(h, 450);

  ASSERT_EQ(tally({"hist", "--plot", svg, "--no-bars"}).code, 0);
  const std::string text = read_bytes(svg);
  for (const char* expected : {"<svg xmlns=\"http://www.w3.org/2000/svg\"", ">value</text>",
                               ">count</text>", ">100</text>", ">R</text>", "</svg>"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected;
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
