// The `tally` command line: subcommands hist, info, strategies and plan; every error becomes one
// line on stderr and an exit code (2: usage, 1: anything else).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <new>

#include "commands.hpp"
#include "errors.hpp"
#include "letters.hpp"
#include "tally/dtype.hpp"
#include "tally/plan.hpp"

namespace {

using namespace tally_cli;

/// The most MiB --chunk-mb takes: far above any chunk worth reading, far below overflow.
constexpr double kMaxChunkMb = 1 << 20;

/// A check that the value is a finite number for which `ok` holds, else "'TEXT' is not RULE".
/// (CLI11's PositiveNumber lets "nan" through and names its bound as DBL_MAX's 309 digits.)
CLI::Validator number_that(std::function<bool(double)> ok, const std::string& rule) {
  return CLI::Validator(
      [ok = std::move(ok), rule](std::string& text) {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool good = !text.empty() && *end == '\0' && std::isfinite(v) && ok(v);
        return good ? std::string() : "'" + text + "' is not " + rule;
      },
      "");
}

/// Refuses an empty value, which the command would otherwise read as the option left out
/// (--bins "" as the default 64 bins, --out "" as no output).
const CLI::Validator non_empty(
    [](std::string& text) {
      return text.empty() ? std::string("an empty value; give one, or leave the option out")
                          : std::string();
    },
    "");

void add_run_options(CLI::App* cmd, run_args& run) {
  cmd->add_option("--backend", run.backend, "Where to compute: auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--strategy", run.strategy, "A named strategy (see `tally strategies`), or auto");
  const std::string cap = std::to_string(machine_threads());
  cmd->add_option("--threads", run.threads,
                  "CPU threads, 0 for all; more than this machine's " + cap + " are capped at " + cap)
      ->check(number_that([](double v) { return v >= 0 && v <= INT_MAX; }, "a number of threads >= 0"));
  cmd->add_option("--counts", run.counts, "Count storage: 32 or 64 bits")
      ->check(CLI::IsMember({32, 64}));
}

void add_hist(CLI::App& app, hist_args& h) {
  CLI::App* cmd = app.add_subcommand(
      "hist",
      "Histogram a .npy, .npz, CSV or text, raw binary, PNG or JPEG file, or standard input (the bundled sample "
      "image if no FILE and no pipe); with --text, the letters or bytes of any file");
  cmd->add_option("FILE", h.file,
                  "Input file, or - for standard input (read when piped and no FILE is given); its format is told by "
                  "its first bytes")
      ->check(non_empty);
  cmd->add_flag("--text{groups}", h.text,
                "Count FILE's bytes as text, in fixed bins: --text (or --text=groups) by letter group a-d, e-h, "
                "i-l, m-p, q-t, u-x, y-z (PMPP's text histogram), --text=letters by letter a..z, both with A-Z "
                "counted as a-z and other bytes dropped as not letters; --text=bytes by byte value 0..255")
      ->check(CLI::IsMember(text_mode_names()));
  cmd->add_option(
      "--dtype", h.dtype,
      "Read FILE as raw native-endian values: " + tally::sample_type_names())
      ->check(non_empty);
  cmd->add_option("--key", h.key, ".npz input: the array to histogram (default: the only one)")->check(non_empty);
  cmd->add_option("--column", h.column,
                  "Text/CSV input: the columns to histogram, by index from 0 or header name, comma-separated "
                  "(default: all; several make one N-D histogram)")
      ->check(non_empty);
  cmd->add_option("--delimiter", h.delimiter,
                  "Text/CSV input: the field delimiter, one character, tab or space (default: ',', ';' or a tab "
                  "where the first row has one, else spaces)")
      ->check(non_empty);
  cmd->add_option("--weights", h.weights,
                  "Weights, one per sample (row): .npy of f4/f8 or raw f32/f64")
      ->check(non_empty);
  cmd->add_option("--bins", h.bins,
                  "Bins: N, or N0,N1,... one per axis/channel, in decimal digits (default 64); or numpy's estimator "
                  "auto, fd, doane, rice, scott, sqrt, stone or sturges (each column's own estimate)")
      ->check(non_empty);
  cmd->add_option(
      "--range", h.range,
      "LO,HI (closed), or one pair per axis/channel; with --integer the integers LO..HI-1 "
      "(default: the data's min and max)")
      ->check(non_empty);
  cmd->add_option("--edges", h.edges, "Bin edges e0,e1,... (once for all axes, or once per axis)")
      ->allow_extra_args(false)
      ->check(non_empty);
  cmd->add_flag("--integer", h.integer, "One bin per integer (default for narrow integer data)");
  cmd->add_option("--channels", h.channels, "Values per row, interleaved (one histogram each)")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--nd", h.nd, "One N-D histogram over the row's values (default for a 2-D .npy)");
  cmd->add_flag("--gray", h.gray, "Convert an image to one luminance channel");
  cmd->add_flag("--flow", h.flow, "Print underflow, overflow and NaN counts");
  cmd->add_flag("--no-bars", h.no_bars, "No bar chart");
  cmd->add_option("--out", h.out, "Write the histogram to FILE.csv or FILE.json")->check(non_empty);
  cmd->add_option("--plot", h.plot, "Draw the histogram to FILE.png or FILE.svg")->check(non_empty);
  cmd->add_option("--title", h.title, "--plot's title (default: the file and its type)")->check(non_empty);
  cmd->add_option("--xlabel", h.x_label, "--plot's x axis label")->check(non_empty);
  cmd->add_option("--ylabel", h.y_label, "--plot's y axis label")->check(non_empty);
  cmd->add_flag("--log", h.log, "--plot bar heights on a log scale (a 2-D plot: log colours)");
  cmd->add_flag("--density", h.density, "--plot densities: each bar over its histogram's in-range total and its width");
  const std::string most = std::to_string(static_cast<int>(kMaxChunkMb));
  cmd->add_option("--chunk-mb", h.chunk_mb, "Read and fill in chunks of this many MiB (at most " + most + ")")
      ->check(number_that([](double v) { return v > 0 && v <= kMaxChunkMb; }, "a number of MiB > 0 and <= " + most))
      ->capture_default_str();
  add_run_options(cmd, h.run);
}

void add_plan(CLI::App& app, plan_args& p) {
  CLI::App* cmd = app.add_subcommand("plan", "Show the policy the planner picks for a job");
  cmd->add_option("--bins", p.bins, "Bins per axis")
      ->check(number_that([](double v) { return v >= 1 && v < 0x1p63; }, "a whole number >= 1"));
  cmd->add_option("--dtype", p.dtype, "Sample type");
  cmd->add_option("--n", p.n, "Samples per column")
      ->check(number_that([](double v) { return v >= 0 && v < 0x1p63; }, "a whole number >= 0"));
  cmd->add_flag("--weights{f64}", p.weights, "A weighted fill; --weights=TYPE for weights of TYPE (f64 without)");
  cmd->add_option("--kind", p.kind, "Axis kind")
      ->check(CLI::IsMember({"regular", "variable", "integer"}));
  cmd->add_option("--channels", p.channels, "Interleaved channels")->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--dims", p.dims, "Axes of an N-D histogram")->check(CLI::Range(1, 32));
  add_run_options(cmd, p.run);
}

/// The message with bytes that are not printable UTF-8 (control bytes, broken sequences: file
/// content quoted in a message) written as \xNN, so that no error prints raw bytes.
std::string printable(const std::string& text) {
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size() && (c >= 0x20 || c == '\t') && c != 0x7f;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 2;
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  return out;
}

int fail(const std::string& message, int code) {
  std::cerr << "tally: error: " << printable(message) << "\n";
  return code;
}

/// "--text bytes" where "--text=bytes" was meant: the mode, a word of its own, would be read as
/// FILE (unless a file has that name). The mode, or empty where the command line has no such slip.
std::string text_mode_as_word(int argc, char** argv) {
  const std::vector<std::string>& modes = text_mode_names();
  for (int i = 1; i + 1 < argc; ++i) {
    std::error_code ec;
    if (std::string(argv[i]) == "--text" && std::find(modes.begin(), modes.end(), argv[i + 1]) != modes.end() &&
        !std::filesystem::exists(argv[i + 1], ec))
      return argv[i + 1];
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally: histograms with numpy's exact semantics, on the CPU and on CUDA GPUs", "tally"};
  app.set_version_flag("--version", std::string(tally::version()));
  app.require_subcommand(1);
  hist_args h;
  plan_args p;
  add_hist(app, h);
  CLI::App* info = app.add_subcommand("info", "Version, backends and devices");
  CLI::App* strategies =
      app.add_subcommand("strategies", "The named strategies: what each is, where it applies, when it is chosen");
  add_plan(app, p);

  if (const std::string mode = text_mode_as_word(argc, argv); !mode.empty())
    return fail("--text " + mode + ": write the mode with '=', --text=" + mode + " (a word of its own is FILE)",
                2);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // An unknown option, or "--range 5 1": a list given as several arguments (say how it is written).
    const std::string what = e.what();
    const std::size_t colon = what.find(": ");
    const std::string first = colon == std::string::npos ? "" : what.substr(colon + 2, what.find(' ', colon + 2) - colon - 2);
    if (first.size() > 1 && first[0] == '-' && !std::isdigit(static_cast<unsigned char>(first[1])) && first[1] != '.')
      return fail("unknown option " + first + " (see tally --help and tally hist --help)", 2);
    return fail(what + " (--range, --bins and --edges take one argument, a comma-separated list: --range LO,HI)", 2);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return fail(e.what(), 2);
  }
  try {
    if (info->parsed()) return run_info();
    if (strategies->parsed()) return run_strategies();
    if (app.got_subcommand("plan")) return run_plan(p);
    return run_hist(h);
  } catch (const usage_error& e) {
    return fail(e.what(), 2);
  } catch (const std::bad_alloc&) {
    return fail("out of memory (try a smaller --chunk-mb or fewer bins)", 1);
  } catch (const std::exception& e) {  // failure, tally::error, and anything from the system
    return fail(e.what(), 1);
  }
}
