// `tally hist`: open the input, find the range if needed (first pass), fill chunk by chunk
// (second pass), then write the requested files and print the report.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

#include "axes.hpp"
#include "core/memory.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "letters.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "staged_file.hpp"
#include "tally/device.hpp"

namespace tally_cli {
namespace {

namespace fs = std::filesystem;

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

void check_output_names(const hist_args& a) {
  if (!a.out.empty() && lower_extension(a.out) != ".csv" && lower_extension(a.out) != ".json")
    throw usage_error("--out " + a.out + ": the name must end in .csv or .json");
  if (!a.plot.empty() && lower_extension(a.plot) != ".png" && lower_extension(a.plot) != ".svg")
    throw usage_error("--plot " + a.plot + ": the name must end in .png or .svg");
}

/// --text reads FILE as bytes into fixed bins: the options that pick a format, columns, bins or
/// weights do not apply.
void check_text_options(const hist_args& a) {
  const std::pair<const char*, bool> given[] = {
      {"--dtype", !a.dtype.empty()}, {"--key", !a.key.empty()}, {"--column", !a.column.empty()},
      {"--delimiter", !a.delimiter.empty()}, {"--gray", a.gray}, {"--channels", a.channels > 0},
      {"--nd", a.nd}, {"--weights", !a.weights.empty()}, {"--bins", !a.bins.empty()},
      {"--range", !a.range.empty()}, {"--edges", !a.edges.empty()}, {"--integer", a.integer}};
  for (const auto& [flag, set] : given)
    if (set)
      throw usage_error(std::string(flag) +
                        " does not go with --text, which reads FILE as bytes into fixed bins (groups a-d .. y-z, "
                        "letters a..z or bytes 0..255)");
}

/// Refuses an output that is an input file, or the other output: the same device and inode,
/// through symlinks and other names (writing it would destroy the data being read).
void check_outputs_are_not_inputs(const hist_args& a, const std::string& samples) {
  const std::vector<std::pair<std::string, std::string>> inputs = {{"the input", samples},
                                                                   {"the weights file", a.weights}};
  const std::vector<std::pair<std::string, std::string>> outputs = {{"--out", a.out}, {"--plot", a.plot}};
  for (const auto& [flag, out] : outputs) {
    if (out.empty()) continue;
    for (const auto& [what, in] : inputs)
      if (!in.empty() && same_file(out, in)) throw usage_error(flag + " " + out + " is " + what + " " + in + "; write elsewhere");
  }
  if (!a.out.empty() && !a.plot.empty() && (a.out == a.plot || same_file(a.out, a.plot)))
    throw usage_error("--out and --plot name one file, " + a.out);
}

/// Whether standard input is a pipe or a redirected file (not a terminal, nor /dev/null): then it
/// is the input where no FILE is given, never the sample.
bool stdin_is_piped() {
  struct stat st {};
  return fstat(STDIN_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode));
}

/// The sample image: installed beside the executable, else in the source tree it was built from.
std::string bundled_sample() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    candidates.push_back(exe.parent_path() / ".." / "share" / "tally" / "data" / "sample.png");
  candidates.push_back(fs::path(TALLY_CLI_DATA_DIR) / "sample.png");
  for (const fs::path& p : candidates)
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  throw failure("no FILE given and the bundled sample image is missing (looked for " +
                candidates.back().string() + ")");
}

struct layout {
  layout_mode mode = layout_mode::single;
  std::vector<std::string> names;  // one per column
  int columns() const { return static_cast<int>(names.size()); }
};

layout resolve_layout(const hist_args& a, const source& s) {
  if (a.channels > 0 && s.image)
    throw usage_error(
        "--channels is for raw and .npy data; an image's channels come from the file");
  const int columns = a.channels > 0 ? a.channels : s.columns;
  if (s.values % columns != 0)
    throw failure(s.path + ": " + std::to_string(s.values) + " values are not a whole number of " +
                  std::to_string(columns) + "-value rows");
  layout l;
  if (columns == 1)
    l.mode = layout_mode::single;
  else if (a.nd || (s.matrix && a.channels == 0))
    l.mode = layout_mode::nd;
  else
    l.mode = layout_mode::channels;
  for (int c = 0; c < columns; ++c) {
    if (!s.names.empty() && a.channels == 0)  // an image's channels, a text header's columns
      l.names.push_back(s.names[c]);
    else
      l.names.push_back(l.mode == layout_mode::nd ? "axis " + std::to_string(c) : std::to_string(c));
  }
  return l;
}

void fill_chunk(std::vector<tally::histogram>& hists, layout_mode mode, int columns,
                const tally::view& samples, const tally::view* weights) {
  switch (mode) {
    case layout_mode::single:
      weights ? hists[0].fill(samples, *weights) : hists[0].fill(samples);
      return;
    case layout_mode::nd: {
      const std::vector<tally::view> cols = tally::columns_of(samples, columns);
      weights ? hists[0].fill(cols, *weights) : hists[0].fill(cols);
      return;
    }
    case layout_mode::channels: {
      if (!weights) {
        tally::fill_channels(hists, samples, columns);
        return;
      }
      // fill_channels takes no weights: each channel is a column with the row's weight.
      const std::vector<tally::view> cols = tally::columns_of(samples, columns);
      for (int c = 0; c < columns; ++c) hists[c].fill(cols[c], *weights);
      return;
    }
  }
}

/// --backend cuda: the fill pass streamed through the GPU (fill_stream: pinned buffers of
/// `buffer_bytes` a round, each round's copy overlapped with the previous round's count), then the
/// device's cells assigned to `hists` for the report. `on_samples` sees every chunk read, as the
/// host loop's caller does; `on_weights` the weights' bytes.
void fill_streamed(std::vector<tally::histogram>& hists, layout_mode mode, int columns, source& src,
                   std::optional<source>& weights, std::size_t buffer_bytes,
                   const std::function<void(const void*, std::int64_t)>& on_samples,
                   const std::function<void(std::int64_t)>& on_weights) {
  tally::options o = hists.front().opts();
  o.counts = tally::count_type::u64;  // a device histogram's; assign checks a u32 histogram's bound
  std::vector<tally::device_histogram> dev;
  for (const tally::histogram& h : hists) dev.emplace_back(h.axes(), o);
  std::uint64_t rows = 0;
  const tally::stream_reader read_samples = [&](void* out, std::int64_t max) {
    const std::int64_t n = src.reader->read(out, max);
    on_samples(out, n);
    rows += static_cast<std::uint64_t>(n / columns);
    return n;
  };
  const tally::stream_reader read_weights = [&](void* out, std::int64_t max) {
    const std::int64_t n = weights->reader->read(out, max);
    on_weights(n);
    return n;
  };
  tally::stream_options so;
  so.buffer_bytes = buffer_bytes;
  const tally::dtype weight_type = weights ? weights->type : tally::dtype::f64;
  if (mode == layout_mode::channels)
    tally::fill_channels_stream(dev, src.type, columns, read_samples, weights ? &read_weights : nullptr, weight_type,
                                nullptr, so);
  else if (weights)
    dev[0].fill_stream(src.type, read_samples, weight_type, read_weights, nullptr, so);
  else
    dev[0].fill_stream(src.type, read_samples, nullptr, so);
  for (std::size_t i = 0; i < hists.size(); ++i) {
    if (hists[i].weighted())
      hists[i].assign(dev[i].sums(), dev[i].flow(), rows);
    else
      hists[i].assign(dev[i].counts(), dev[i].flow(), rows);
  }
}

/// A chunk buffer for `values` values of type t, aligned for any sample type.
struct chunk_buffer {
  chunk_buffer(tally::dtype t, std::int64_t values)
      : capacity(values), storage((values * tally::size_of(t) + 7) / 8) {}
  std::int64_t capacity;
  std::vector<std::uint64_t> storage;
  void* data() { return storage.data(); }
};

/// Bytes a cell costs the report and the outputs beyond its storage: copies of the values and of
/// the edges (summary, bars, plots: three alive at once), and a text a cell for --out.
std::uint64_t report_bytes_per_cell(const hist_args& a) { return 24 + (a.out.empty() ? 0 : 48); }

/// The histograms: one per channel, or one over all axes (1-D or N-D); refused with a clear
/// error, before anything is allocated, where their report would not fit the memory.
std::vector<tally::histogram> make_histograms(const hist_args& a, layout_mode mode,
                                              const std::vector<tally::axis>& axes,
                                              const tally::options& opts) {
  std::uint64_t cells = 1;
  if (mode == layout_mode::channels) {
    cells = 0;
    for (const tally::axis& ax : axes) cells += static_cast<std::uint64_t>(ax.bins());
  } else {
    for (const tally::axis& ax : axes) cells = tally::detail::times(cells, static_cast<std::uint64_t>(ax.bins()));
  }
  tally::detail::ensure_memory(tally::detail::times(cells, report_bytes_per_cell(a)),
                               "the report of " + std::to_string(cells) + " bins (use fewer bins)");
  std::vector<tally::histogram> hists;
  if (mode == layout_mode::channels) {
    for (const tally::axis& ax : axes) hists.emplace_back(ax, opts);
  } else {
    hists.emplace_back(axes, opts);
  }
  return hists;
}

void write_outputs(const hist_args& a, const hist_result& r) {
  // Every file is written in full (or, a device or FIFO, opened) before any is committed.
  std::vector<std::unique_ptr<staged_file>> files;
  if (!a.out.empty())
    files.push_back(std::make_unique<staged_file>(
        a.out, lower_extension(a.out) == ".csv" ? to_csv(r) : to_json(r)));
  if (!a.plot.empty()) {
    const plot_model model = make_plot_model(r, plot_options{a.title, a.x_label, a.y_label, a.log, a.density});
    files.push_back(std::make_unique<staged_file>(
        a.plot, render_plot(model, lower_extension(a.plot) == ".png" ? plot_format::png : plot_format::svg)));
  }
  // Devices and FIFOs first: their writes cannot be undone, so no rename happens before they
  // have succeeded.
  std::stable_partition(files.begin(), files.end(), [](const auto& f) { return f->direct(); });
  for (auto& f : files) f->commit();
}

}  // namespace

int run_hist(const hist_args& a) {
  check_output_names(a);
  if (a.plot.empty() && (!a.title.empty() || !a.x_label.empty() || !a.y_label.empty() || a.log || a.density))
    throw usage_error("--title, --xlabel, --ylabel, --log and --density are for --plot");
  const std::optional<text_bins> as_text =
      a.text.empty() ? std::nullopt : std::optional<text_bins>(text_bins_of(text_mode_from_name(a.text)));
  if (as_text) check_text_options(a);
  const axis_options axis_opts = parse_axis_options(a);
  tally::options opts = to_options(a.run);
  const std::optional<tally::dtype> raw =
      a.dtype.empty() ? std::nullopt : std::optional<tally::dtype>(parse_dtype(a.dtype));

  if (as_text && a.file.empty() && !stdin_is_piped())
    throw usage_error("--text counts the text of FILE, or of standard input where it is piped; give FILE");
  const std::string input = !a.file.empty() ? a.file : stdin_is_piped() ? "-" : bundled_sample();
  check_outputs_are_not_inputs(a, input);
  if (!a.plot.empty() && !plots_available()) throw failure(kNoPlotsMessage);  // before the work
  source src = as_text ? open_bytes(input, as_text->map ? &*as_text->map : nullptr)
                       : open_samples(input, raw, a.gray, text_options{a.column, a.delimiter}, a.key);
  // --text's bins need no data: an empty file counts nothing in them.
  if (src.values == 0 && !as_text) throw failure(src.path + ": holds no values; nothing to histogram");
  const layout lay = resolve_layout(a, src);
  const int columns = lay.columns();
  const std::int64_t rows = src.values / columns;
  std::optional<source> weights;
  if (!a.weights.empty()) weights = open_weights(a.weights, rows);
  std::vector<axis_spec> specs = axis_specs(axis_opts, columns);

  const bool two_passes = !as_text && std::any_of(specs.begin(), specs.end(),
                                                  [&](const axis_spec& s) { return needs_first_pass(s, src); });
  const std::size_t item = tally::size_of(src.type);
  // Never more buffer than the data need, never less than one row.
  const std::int64_t chunk_rows = std::clamp<std::int64_t>(
      static_cast<std::int64_t>(std::min(a.chunk_mb * 1048576.0 / item, 9e18)) / columns, 1,
      std::max<std::int64_t>(rows, 1));
  chunk_buffer samples(src.type, chunk_rows * columns);
  std::optional<chunk_buffer> weight_buf;
  if (weights) weight_buf.emplace(weights->type, chunk_rows);
  const std::uint64_t bytes = static_cast<std::uint64_t>(src.values) * item;
  progress bar(bytes * (two_passes ? 2 : 1) + (weights ? rows * tally::size_of(weights->type) : 0));

  // The estimators read every value: the first pass keeps them in their own type, and the estimate
  // copies them (those in range, an ordered copy, float64 copies for its statistics).
  if (axis_opts.estimator)
    tally::detail::ensure_memory(tally::detail::times(static_cast<std::uint64_t>(src.values), 3 * item + 16),
                                 "--bins " + a.bins + ": copies of every value (give a number of bins)");
  scanner extrema_of(src.type, columns, axis_opts.estimator.has_value());
  if (two_passes) {
    while (const std::int64_t n = src.reader->read(samples.data(), samples.capacity)) {
      extrema_of.add(samples.data(), n);
      bar.advance(n * item);
    }
    src.reader->rewind();
  }
  // Without a first pass the axes need no extrema; the fill pass collects them for the report.
  const std::vector<extrema> bounds =
      two_passes ? extrema_of.result() : std::vector<extrema>(columns);

  opts.flow = true;  // the report always says how many samples were dropped
  opts.weighted = weights.has_value();
  std::vector<tally::axis> axes;
  for (int c = 0; c < columns; ++c) {
    if (as_text) {
      axes.push_back(as_text->axis);
      continue;
    }
    if (specs[c].estimator) specs[c].bins = estimated_bins(specs[c], src, bounds[c], extrema_of.values(c));
    axes.push_back(make_axis(specs[c], src, bounds[c]));
  }
  std::vector<tally::histogram> hists = make_histograms(a, lay.mode, axes, opts);

  if (opts.backend == tally::backend::cuda) {
    const std::uint64_t row_bytes = item * columns + (weights ? tally::size_of(weights->type) : 0);
    fill_streamed(
        hists, lay.mode, columns, src, weights,
        static_cast<std::size_t>(std::min<double>(a.chunk_mb * 1048576.0, static_cast<double>(rows * row_bytes) + 4096)),
        [&](const void* chunk, std::int64_t n) {
          if (!two_passes) extrema_of.add(chunk, n);
          bar.advance(n * item);
        },
        [&](std::int64_t n) { bar.advance(n * tally::size_of(weights->type)); });
  } else {
    while (const std::int64_t n = src.reader->read(samples.data(), samples.capacity)) {
      if (!two_passes) extrema_of.add(samples.data(), n);
      const tally::view sample_view{samples.data(), n, 1, src.type};
      std::optional<tally::view> weight_view;
      if (weights) {
        const std::int64_t got = weights->reader->read(weight_buf->data(), n / columns);
        weight_view = tally::view{weight_buf->data(), got, 1, weights->type};
        bar.advance(got * tally::size_of(weights->type));
      }
      fill_chunk(hists, lay.mode, columns, sample_view, weight_view ? &*weight_view : nullptr);
      bar.advance(n * item);
    }
  }

  hist_result r;
  r.input = src;
  r.weights_path = a.weights;
  r.mode = lay.mode;
  r.names = lay.names;
  r.bounds = extrema_of.result();
  r.hists = std::move(hists);
  r.show_flow = a.flow;
  if (as_text) r.named = as_text->named;

  bar.clear();  // before anything else is printed
  // The report first: a run that fails anywhere leaves no output behind.
  const std::string text = report(r, !a.no_bars);
  write_outputs(a, r);
  std::cout << text << std::flush;
  return 0;
}

}  // namespace tally_cli
