// --plot: a picture model built once from the result, drawn as PNG (pixels) or SVG (vectors).
#pragma once

#include <cmath>
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

/// What the plot options ask for: labels that replace the made-up ones (empty: keep), a log
/// scale (bar heights; a heat map's colours), densities instead of counts or sums (each
/// series' values over its in-range total and the bar's width, a heat map's over cell areas).
struct plot_options {
  std::string title, x_label, y_label;
  bool log = false;
  bool density = false;
};

/// What is drawn, in data coordinates: bars of one or more series, or a 2-D heat map.
struct plot_model {
  std::string title, x_label, y_label;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool log_y = false;     // bar heights on a log scale from y_lo
  bool log_heat = false;  // heat colours by log(value), the least nonzero cell still coloured
  std::vector<plot_series> series;
  std::optional<merged_grid> heat;  // x = axis 0, y = axis 1
  double heat_max = 0, heat_min = 0;  // the fullest cell, and the least nonzero one
};

plot_model make_plot_model(const hist_result& r, const plot_options& options = {});

/// The plot area inside the picture and the map from data to pixel coordinates (log_y: heights
/// on a log scale, values at or below y_lo on the bottom line).
struct frame {
  static constexpr int width = 800, height = 450;
  static constexpr int left = 80, right = 20, top = 40, bottom = 60;
  double x_lo, x_hi, y_lo, y_hi;
  bool log_y = false;
  double px(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * (width - left - right); }
  double py(double y) const {
    const double t = log_y ? (y > y_lo ? std::log10(y / y_lo) / std::log10(y_hi / y_lo) : 0.0)
                           : (y - y_lo) / (y_hi - y_lo);
    return height - bottom - t * (height - top - bottom);
  }
};

/// Round tick values (1, 2 or 5 times a power of ten apart) inside [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 6);
/// The y axis' ticks: nice_ticks, or on a log scale the powers of ten inside [lo, hi] (with 2
/// and 5 times them where the range spans less than two decades).
std::vector<double> y_ticks(const plot_model& m);

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
