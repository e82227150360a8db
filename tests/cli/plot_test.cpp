// The plots as the renderer draws them, in this process: every kind (bars of one series, of
// several channels with a legend, a 2-D heat map with a colour bar, --log, --density) in both
// formats, at the frame's size, with every text of the model drawn: in the SVG one glyph per
// character of plot_texts(), in the PNG dark text pixels in the title band and beside the axes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "harness.hpp"
#include "plot_check.hpp"

namespace cli_test {
namespace {

using tally_cli::frame;
using tally_cli::plot_format;
using tally_cli::plot_model;
using tally_cli::plot_options;

std::vector<double> normal_like(int n, double centre, double spread) {
  // A deterministic bell: sums of three uniform steps.
  std::vector<double> v;
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = (i * 7919 % 1000) / 1000.0, w = (i * 104729 % 997) / 997.0, z = (i * 1299709 % 991) / 991.0;
    v.push_back(centre + spread * (u + w + z - 1.5));
  }
  return v;
}

tally_cli::hist_result one_series() {
  return result_of("/data/heights.npy", normal_like(2000, 170, 40), tally::axis::regular(40, 110, 230));
}

tally_cli::hist_result rgb_channels() {
  std::vector<std::vector<double>> c;
  for (const double centre : {90.0, 130.0, 170.0}) {
    std::vector<double> v = normal_like(3000, centre, 120);
    for (double& x : v) x = std::clamp(std::floor(x), 0.0, 255.0);
    c.push_back(v);
  }
  return channels_result("/data/photo.png", c, {"R", "G", "B"}, tally::axis::integer(0, 256));
}

tally_cli::hist_result heat() {
  std::vector<double> xy;
  const std::vector<double> x = normal_like(4000, 0, 4), y = normal_like(4000, 1, 3);
  for (std::size_t i = 0; i < x.size(); ++i) {
    xy.push_back(x[i]);
    xy.push_back(y[(i * 31) % y.size()] + 0.3 * x[i]);
  }
  return matrix_result("/data/points.npy", xy, {tally::axis::regular(30, -6, 6), tally::axis::regular(20, -3, 5)});
}

struct kind {
  const char* name;
  tally_cli::hist_result (*result)();
  plot_options options;
};

const kind kKinds[] = {
    {"one_series", one_series, {}},
    {"channels", rgb_channels, {}},
    {"heat_map", heat, {}},
    {"log", one_series, {"", "", "", true, false}},
    {"density", one_series, {"", "", "", false, true}},
    {"channels_log_density", rgb_channels, {"", "", "", true, true}},
    {"heat_map_log_density", heat, {"", "", "", true, true}},
};

void PrintTo(const kind& k, std::ostream* out) { *out << k.name; }

class EveryKind : public ::testing::TestWithParam<kind> {};

TEST_P(EveryKind, SvgHasTheSizeAndAGlyphForEveryCharacterOfItsTexts) {
  REQUIRE_PLOTS();
  const plot_model m = make_plot_model(GetParam().result(), GetParam().options);
  const std::string svg = render_plot(m, plot_format::svg);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  const svg_size size = size_of_svg(svg);
  EXPECT_EQ(size.width, frame::width);
  EXPECT_EQ(size.height, frame::height);
  const std::vector<std::string> texts = tally_cli::plot_texts(m);
  EXPECT_GT(ink_characters(texts), 20);
  EXPECT_EQ(svg_glyphs(svg), ink_characters(texts)) << ::testing::PrintToString(texts);
}

TEST_P(EveryKind, PngHasTheSizeAndTextInTheTitleBandAndBesideTheAxes) {
  REQUIRE_PLOTS();
  const plot_model m = make_plot_model(GetParam().result(), GetParam().options);
  const image img = decode_png(render_plot(m, plot_format::png));
  ASSERT_EQ(img.width, frame::width);
  ASSERT_EQ(img.height, frame::height);
  EXPECT_EQ(img.channels, 3);  // RGB, no alpha
  const frame f = tally_cli::plot_frame(m);
  const int left = static_cast<int>(f.left), top = static_cast<int>(f.top);
  const int x_end = static_cast<int>(f.x_end()), base = static_cast<int>(f.y_base());
  EXPECT_GT(img.dark_pixels(0, 0, frame::width, top - 4), 30) << "title";
  EXPECT_GT(img.dark_pixels(left - 20, top - 6, left - 7, base + 6), 30) << "y tick labels";
  EXPECT_GT(img.dark_pixels(left - 20, base + 7, x_end + 20, base + 24), 30) << "x tick labels";
  EXPECT_GT(img.dark_pixels(0, top, 24, base), 20) << "y label";
  EXPECT_GT(img.dark_pixels(left, base + 25, x_end, frame::height), 20) << "x label";
  if (m.heat) {
    EXPECT_GT(img.dark_pixels(x_end + 39, top - 6, frame::width, base + 6), 20) << "colour bar labels";
  }
  // Something was drawn in the plot area beyond white, grid gray and ink: bars or cells.
  int coloured = 0;
  for (int y = top + 1; y < base; ++y)
    for (int x = left + 1; x < x_end; ++x) {
      const unsigned char* p = img.at(x, y);
      coloured += std::max({p[0], p[1], p[2]}) - std::min({p[0], p[1], p[2]}) > 30;
    }
  EXPECT_GT(coloured, 1000);
}

INSTANTIATE_TEST_SUITE_P(Plot, EveryKind, ::testing::ValuesIn(kKinds),
                         [](const ::testing::TestParamInfo<kind>& info) { return std::string(info.param.name); });

TEST(Plot, TextsAreTheTitleLabelsAndTickLabels) {
  const plot_model m = make_plot_model(one_series());
  const std::vector<std::string> texts = tally_cli::plot_texts(m);
  ASSERT_GE(texts.size(), 3u);
  EXPECT_EQ(texts[0], "heights.npy (f64)");
  EXPECT_EQ(texts[1], "value");
  EXPECT_EQ(texts[2], "count");
  std::vector<std::string> expected = {texts[0], texts[1], texts[2]};
  for (const auto& t : tally_cli::x_ticks(m)) expected.push_back(t.label);
  for (const auto& t : tally_cli::y_ticks(m)) expected.push_back(t.label);
  EXPECT_EQ(texts, expected);  // one series: no legend
  for (const char* x : {"120", "140", "160", "180", "200", "220"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), x), texts.end()) << x;

  const plot_model labelled = make_plot_model(one_series(), {"Heights <cm>", "height", "people", false, false});
  const std::vector<std::string> l = tally_cli::plot_texts(labelled);
  EXPECT_EQ(std::vector<std::string>(l.begin(), l.begin() + 3), (std::vector<std::string>{"Heights <cm>", "height", "people"}));
}

TEST(Plot, SeveralChannelsHaveALegendAndAHeatMapAColourBar) {
  const std::vector<std::string> rgb = tally_cli::plot_texts(make_plot_model(rgb_channels()));
  ASSERT_GE(rgb.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(rgb.end() - 3, rgb.end()), (std::vector<std::string>{"R", "G", "B"}));

  const plot_model m = make_plot_model(heat());
  EXPECT_EQ(m.x_label, "axis 0");
  EXPECT_EQ(m.y_label, "axis 1");
  const std::vector<tally_cli::tick> bar = tally_cli::colour_ticks(m);
  ASSERT_GE(bar.size(), 3u);
  EXPECT_EQ(bar.front().label, "0");
  EXPECT_LE(bar.back().value, m.heat_max);
  const std::vector<std::string> texts = tally_cli::plot_texts(m);
  EXPECT_EQ(texts.back(), bar.back().label);
  EXPECT_TRUE(tally_cli::colour_ticks(make_plot_model(one_series())).empty());

  // Log colours: the bar spans the least nonzero cell to the fullest, ticked at powers of ten.
  const plot_model log = make_plot_model(heat(), {"", "", "", true, false});
  const tally_cli::colour_scale s = tally_cli::colour_scale_of(log);
  EXPECT_TRUE(s.log);
  EXPECT_EQ(s.lo, log.heat_min);
  EXPECT_EQ(s.hi, log.heat_max);
  for (const auto& t : tally_cli::colour_ticks(log)) {
    EXPECT_GE(t.value, s.lo);
    EXPECT_LE(t.value, s.hi);
  }
  EXPECT_NE(log.title.find("count per cell (log colours)"), std::string::npos) << log.title;
}

TEST(Plot, LogTicksAreDecadesAndTheirHalvesAndFifths) {
  EXPECT_EQ(tally_cli::log_ticks(0.1, 3), (std::vector<double>{0.1, 0.2, 0.5, 1, 2}));
  EXPECT_EQ(tally_cli::log_ticks(1, 1e4), (std::vector<double>{1, 10, 100, 1000, 1e4}));
  EXPECT_LE(tally_cli::log_ticks(1e-20, 1e20).size(), 9u);
  EXPECT_EQ(tally_cli::log_ticks(3, 4), (std::vector<double>{3, 4}));  // no power of ten inside
}

TEST(Plot, AnotherTitleChangesOnlyTheTitleBand) {
  REQUIRE_PLOTS();
  const plot_model a = make_plot_model(one_series());
  plot_model b = a;
  b.title = "Another title entirely";
  const image one = decode_png(render_plot(a, plot_format::png)), other = decode_png(render_plot(b, plot_format::png));
  ASSERT_EQ(one.rgb.size(), other.rgb.size());
  const frame f = tally_cli::plot_frame(a);
  const std::size_t band = static_cast<std::size_t>(f.top - 4) * frame::width * 3;
  EXPECT_NE(std::vector<unsigned char>(one.rgb.begin(), one.rgb.begin() + band),
            std::vector<unsigned char>(other.rgb.begin(), other.rgb.begin() + band));
  EXPECT_EQ(std::vector<unsigned char>(one.rgb.begin() + band, one.rgb.end()),
            std::vector<unsigned char>(other.rgb.begin() + band, other.rgb.end()));
}

// A title (or axis label) too long for one line at a readable size takes two, broken at a
// space; one without spaces shrinks to fit; the legend moves to a line of its own. Every
// character is drawn, inside the picture.
TEST(Plot, LongTitlesWrapOrShrinkAndTheLegendMovesBelow) {
  REQUIRE_PLOTS();
  plot_model m = make_plot_model(rgb_channels());
  const frame usual = tally_cli::plot_frame(m);
  EXPECT_EQ(usual.top, 42);
  for (const std::string& title :
       {std::string("A rather long title that says where the data came from, how it was binned, what was dropped, "
                    "and who measured it"),
        std::string(150, 'W')}) {
    m.title = m.x_label = m.y_label = title;
    const frame moved = tally_cli::plot_frame(m);
    EXPECT_GT(moved.top, usual.top);  // the legend's own line (and the title's second)
    const std::string svg = render_plot(m, plot_format::svg);
    EXPECT_EQ(svg_glyphs(svg), ink_characters(tally_cli::plot_texts(m))) << title;
    const image img = decode_png(render_plot(m, plot_format::png));
    const int band = static_cast<int>(moved.top) - 4;
    EXPECT_GT(img.dark_pixels(0, 0, 80, band), 10) << title;
    EXPECT_GT(img.dark_pixels(frame::width - 80, 0, frame::width, band), 10) << title;
    EXPECT_EQ(img.dark_pixels(0, 0, 3, band) + img.dark_pixels(frame::width - 3, 0, frame::width, band), 0) << title;
    const int below = static_cast<int>(moved.y_base()) + 25;  // the x label
    EXPECT_GT(img.dark_pixels(0, below, 80, frame::height), 10) << title;
    EXPECT_GT(img.dark_pixels(frame::width - 80, below, frame::width, frame::height), 10) << title;
    EXPECT_EQ(img.dark_pixels(0, below, 3, frame::height) + img.dark_pixels(0, frame::height - 2, frame::width, frame::height), 0);
    if (title.find(' ') != std::string::npos) {  // the y label in two lines, at a readable size
      EXPECT_GT(img.dark_pixels(0, static_cast<int>(moved.top), 14, static_cast<int>(moved.y_base())), 100);
      EXPECT_GT(img.dark_pixels(16, static_cast<int>(moved.top), 30, static_cast<int>(moved.y_base())), 100);
    }
  }
}

// Up to kMaxLegend series are named, in right-aligned rows below the title where one row beside
// it is too short; more have no legend (the palette's 8 colours repeat).
TEST(Plot, ManySeriesTakeLegendRowsOrNone) {
  std::vector<std::vector<double>> columns;
  std::vector<std::string> names;
  for (int c = 0; c < 20; ++c) {
    columns.push_back(normal_like(200, c, 4));
    names.push_back("column " + std::to_string(c));
  }
  const plot_model twenty = make_plot_model(channels_result("/data/many.npy", columns, names, tally::axis::regular(40, -4, 24)));
  const std::vector<std::string> unnamed = tally_cli::plot_texts(twenty);
  EXPECT_EQ(std::count(unnamed.begin(), unnamed.end(), "column 3"), 0);
  columns.resize(tally_cli::kMaxLegend);
  names.resize(tally_cli::kMaxLegend);
  const plot_model m = make_plot_model(channels_result("/data/many.npy", columns, names, tally::axis::regular(40, -4, 24)));
  const std::vector<std::string> texts = tally_cli::plot_texts(m);
  EXPECT_EQ(std::vector<std::string>(texts.end() - names.size(), texts.end()), names);
  REQUIRE_PLOTS();
  EXPECT_GT(tally_cli::plot_frame(m).top, 42 + 2 * 18);  // three rows at least
  EXPECT_EQ(tally_cli::plot_frame(twenty).top, 42);
  for (const plot_model& p : {m, twenty}) {
    const std::string svg = render_plot(p, plot_format::svg);
    EXPECT_EQ(svg_glyphs(svg), ink_characters(tally_cli::plot_texts(p)));
  }
}

TEST(Plot, WithoutCairoPlotIsAClearError) {
  if (tally_cli::plots_available()) GTEST_SKIP() << "this build draws plots (cairo was found)";
  EXPECT_THROW(render_plot(make_plot_model(one_series()), plot_format::png), std::runtime_error);
  scratch dir;
  write_bytes(dir.path("a.npy"), npy("<f8", {2}, bytes_of<double>({1, 2})));
  for (const char* name : {"p.png", "p.svg"}) {
    const outcome o = tally({"hist", dir.path("a.npy"), "--out", dir.path("o.csv"), "--plot", dir.path(name)});
    EXPECT_EQ(o.code, 1);
    EXPECT_EQ(o.err, std::string("tally: error: ") + tally_cli::kNoPlotsMessage + "\n");
    EXPECT_EQ(dir.listing(), std::vector<std::string>{"a.npy"});
  }
}

}  // namespace
}  // namespace cli_test
