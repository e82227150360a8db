// Reading the plots back: the SVG's size and the glyphs cairo drew, the PNG's pixels, and
// histogram results built here (as `tally hist` builds them) to compare a plot's texts with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plot.hpp"
#include "result.hpp"

namespace cli_test {

/// The width and height attributes of the <svg> element (-1 where missing).
struct svg_size {
  int width = -1, height = -1;
};
svg_size size_of_svg(const std::string& svg);

/// Glyphs drawn in a cairo SVG: <use> elements that name a glyph with an outline (a space is an
/// empty one).
int svg_glyphs(const std::string& svg);
/// Characters other than spaces in `texts` (UTF-8 code points): the glyphs drawing them takes.
int ink_characters(const std::vector<std::string>& texts);

/// A decoded PNG: RGB pixels row by row.
struct image {
  int width = 0, height = 0, channels = 0;
  std::vector<unsigned char> rgb;
  const unsigned char* at(int x, int y) const { return &rgb[(static_cast<std::size_t>(y) * width + x) * 3]; }
  /// Pixels in [x0, x1) x [y0, y1) darker than text's anti-aliased edges (every channel < 100).
  int dark_pixels(int x0, int y0, int x1, int y1) const;
};
/// Decodes PNG bytes (stb_image); an empty image where they are no PNG.
image decode_png(const std::string& png);

/// A run's result as `tally hist` makes it: one histogram of `values` on `axis` (mode single),
/// one per channel (channels), or one over the columns of an n x D matrix (nd).
tally_cli::hist_result result_of(const std::string& path, const std::vector<double>& values,
                                 const tally::axis& axis);
tally_cli::hist_result channels_result(const std::string& path, const std::vector<std::vector<double>>& channels,
                                       const std::vector<std::string>& names, const tally::axis& axis);
tally_cli::hist_result matrix_result(const std::string& path, const std::vector<double>& rows_by_columns,
                                     const std::vector<tally::axis>& axes);

}  // namespace cli_test

/// Skips a test that draws where this build cannot (no cairo), saying why: never a silent pass.
#define REQUIRE_PLOTS()                                                          \
  do {                                                                           \
    if (!tally_cli::plots_available()) GTEST_SKIP() << tally_cli::kNoPlotsMessage; \
  } while (0)
