// --plot: a picture model built once from the result, drawn as PNG (pixels) or SVG (vectors).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "result.hpp"
#include "summary.hpp"

namespace tally_cli {

struct rgb {
  unsigned char r, g, b;
};

/// One channel's (or the single histogram's) bars.
struct plot_series {
  std::string name;
  rgb color;
  merged_bins bins;
};

/// What is drawn, in data coordinates: bars of one or more series, or a 2-D heat map.
struct plot_model {
  std::string title, x_label, y_label;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  std::vector<plot_series> series;
  std::optional<merged_grid> heat;  // x = axis 0, y = axis 1
  double heat_max = 0;
};

plot_model make_plot_model(const hist_result& r);

/// The plot area inside the picture and the map from data to pixel coordinates.
struct frame {
  static constexpr int width = 800, height = 450;
  static constexpr int left = 80, right = 20, top = 40, bottom = 60;
  double x_lo, x_hi, y_lo, y_hi;
  double px(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * (width - left - right); }
  double py(double y) const {
    return height - bottom - (y - y_lo) / (y_hi - y_lo) * (height - top - bottom);
  }
};

/// Round tick values (1, 2 or 5 times a power of ten apart) inside [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

/// A non-empty heat-map cell, in picture coordinates (y0 < y1), with its value and colour.
struct heat_cell {
  double x0, y0, x1, y1;
  double value;
  rgb color;
};
std::vector<heat_cell> heat_cells(const plot_model& m, const frame& f);

/// PNG bytes.
std::string render_png(const plot_model& m);
/// An SVG document with axis labels and tick values.
std::string render_svg(const plot_model& m);

}  // namespace tally_cli
