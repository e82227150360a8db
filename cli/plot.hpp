// --plot: a picture model built once from the result, drawn by one renderer (cairo) as PNG
// (pixels) or SVG (vectors) with the same calls, so both carry the same text.
#pragma once

#include <cmath>
#include <cstddef>
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

/// A tick on an axis or on the heat map's colour bar: its value and the text drawn beside it.
struct tick {
  double value;
  std::string label;
};

/// What is drawn, in data coordinates: bars of one or more series, or a 2-D heat map.
struct plot_model {
  std::string title, x_label, y_label;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool log_y = false;     // bar heights on a log scale from y_lo
  bool log_heat = false;  // heat colours by log(value), the least nonzero cell still coloured
  std::vector<plot_series> series;
  std::vector<tick> x_names;        // named bins: each bin's name at its centre, for the x ticks
  std::optional<merged_grid> heat;  // x = axis 0, y = axis 1
  double heat_max = 0, heat_min = 0;  // the fullest cell, and the least nonzero one
};

plot_model make_plot_model(const hist_result& r, const plot_options& options = {});

/// The picture (its size is fixed), the plot area inside it (margins, in pixels, that the
/// renderer sizes to the texts around the area) and the map from data to pixel coordinates
/// (log_y: heights on a log scale, values at or below y_lo on the bottom line).
struct frame {
  static constexpr int width = 800, height = 450;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool log_y = false;
  double left = 80, right = 20, top = 40, bottom = 60;
  double x_end() const { return width - right; }
  double y_base() const { return height - bottom; }
  double px(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * (width - left - right); }
  double py(double y) const {
    const double t = log_y ? (y > y_lo ? std::log10(y / y_lo) / std::log10(y_hi / y_lo) : 0.0)
                           : (y - y_lo) / (y_hi - y_lo);
    return height - bottom - t * (height - top - bottom);
  }
};

/// Round tick values (1, 2 or 5 times a power of ten apart) inside [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 6);
/// Powers of ten inside [lo, hi] (0 < lo <= hi), with 2 and 5 times them where the range spans
/// less than two decades; every k-th power where there would be more than 8; lo and hi
/// themselves where no power falls inside.
std::vector<double> log_ticks(double lo, double hi);
/// The x axis' ticks (nice_ticks), labelled: whole numbers below ten million in full, others
/// with as many significant digits as keep them distinct; named bins' names where it has them.
std::vector<tick> x_ticks(const plot_model& m);
/// The y axis' ticks: nice_ticks, or on a log scale log_ticks.
std::vector<tick> y_ticks(const plot_model& m);

/// The heat map's colour scale: the values its colour bar spans (bottom to top), linear from 0
/// to the fullest cell, or logarithmic from the least nonzero cell to the fullest.
struct colour_scale {
  double lo, hi;
  bool log;
  /// Where v falls on the bar: 0 at lo, 1 at hi.
  double at(double v) const {
    if (!(hi > lo)) return 1.0;
    return log ? std::log10(v / lo) / std::log10(hi / lo) : (v - lo) / (hi - lo);
  }
};
colour_scale colour_scale_of(const plot_model& m);
/// The colour bar's ticks (none without a heat map).
std::vector<tick> colour_ticks(const plot_model& m);
/// The heat map's colour for a value (empty cells are not drawn).
rgb heat_color(const plot_model& m, double value);

/// A non-empty heat-map cell, in picture coordinates (y0 < y1), with its value and colour.
struct heat_cell {
  double x0, y0, x1, y1;
  double value;
  rgb color;
};
std::vector<heat_cell> heat_cells(const plot_model& m, const frame& f);

/// Whether the picture names its series in a legend: 2 to kMaxLegend of them (more would take
/// the plot's room, and the palette's 8 colours repeat anyway).
inline constexpr std::size_t kMaxLegend = 16;
inline bool has_legend(const plot_model& m) { return m.series.size() > 1 && m.series.size() <= kMaxLegend; }

/// Every text the picture shows, as the renderer draws it: the title, the axis labels, the x
/// and y tick labels, the legend's names (has_legend) and the colour bar's tick labels (a heat
/// map); empty texts are not drawn and not listed.
std::vector<std::string> plot_texts(const plot_model& m);

enum class plot_format { png, svg };

/// Whether this build draws plots: cairo was found where it was built.
bool plots_available();
/// What --plot says in a build without cairo.
inline constexpr const char* kNoPlotsMessage =
    "this tally was built without cairo (Debian: libcairo2-dev); it cannot draw plots";

/// The frame the renderer draws `m` in: the margins sized to the texts around the plot area.
/// Throws failure (kNoPlotsMessage) without cairo.
frame plot_frame(const plot_model& m);
/// The picture as PNG (8-bit RGB) or SVG bytes, frame::width x frame::height pixels. Throws
/// failure (kNoPlotsMessage) without cairo.
std::string render_plot(const plot_model& m, plot_format format);

}  // namespace tally_cli
