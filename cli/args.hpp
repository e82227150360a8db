// The parsed command lines of `tally hist` and `tally plan`, as plain values (CLI11 stays in main).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tally/histogram.hpp"

namespace tally_cli {

/// Options every computing command shares.
struct run_args {
  std::string backend = "auto";
  std::string strategy = "auto";
  int threads = 0;
  int counts = 64;
};

struct hist_args {
  std::string file;   // empty: the bundled sample image
  std::string text;   // --text: the mode (groups, letters or bytes); empty: FILE holds numbers
  std::string dtype;  // raw binary input
  std::string column;     // text input: the columns kept ("2", "x,y"; empty: all)
  std::string delimiter;  // text input: the field delimiter (empty: told by the first row)
  std::string key;        // .npz input: the array (empty: the only one)
  std::string weights;
  std::string bins;                // "N" or "N0,N1,..." (one per axis/channel)
  std::string range;               // "LO,HI" or one pair per axis/channel
  std::vector<std::string> edges;  // one list for all axes, or one list per axis
  bool integer = false;
  bool nd = false;
  bool gray = false;
  bool flow = false;
  bool no_bars = false;
  int channels = 0;  // 0: as the file says
  double chunk_mb = 64;
  std::string out;
  std::string plot;
  std::string title, x_label, y_label;  // --plot's labels (empty: tally's own)
  bool log = false;                     // --plot on a log scale
  bool density = false;                 // --plot densities
  run_args run;
};

struct plan_args {
  std::int64_t bins = 4096;
  std::string dtype = "f32";
  std::int64_t n = std::int64_t{1} << 24;
  std::string weights;  // the weights' type; empty: no weights
  std::string kind = "regular";
  int channels = 1;
  int dims = 1;
  run_args run;
};

/// The most threads --threads gives the library: this machine's hardware threads (at least 1).
int machine_threads();
/// The library options the shared flags ask for; throws usage_error for unknown names.
/// --threads above machine_threads() is capped at it.
tally::options to_options(const run_args& run);
/// "a,b,c" split at its commas (an empty text is one empty item).
std::vector<std::string> split_commas(const std::string& text);
/// Parses "1,2.5,-3" into numbers; `what` names the option in the message of the usage_error.
std::vector<double> parse_numbers(const std::string& text, const std::string& what);
/// The dtype named by `name`, as a usage_error when it is unknown.
tally::dtype parse_dtype(const std::string& name);

}  // namespace tally_cli
