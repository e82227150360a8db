// Process running through the shell with every argument single-quoted; scratch directories.
#include "harness.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace cli_test {
namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs `prefix` then tally with `args` in one shell; its standard input is the file `piped`
/// through a pipe, or /dev/null where none is given.
outcome run_tally(const std::string& prefix, const std::vector<std::string>& args, const std::string& piped = "") {
  scratch io;
  std::string command = (piped.empty() ? "" : "cat " + quoted(piped) + " | ") + prefix + quoted(TALLY_EXE);
  for (const auto& a : args) command += " " + quoted(a);
  command += " >" + quoted(io.path("stdout")) + " 2>" + quoted(io.path("stderr")) + (piped.empty() ? " </dev/null" : "");
  const int status = std::system(command.c_str());
  outcome o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = read_bytes(io.path("stdout"));
  o.err = read_bytes(io.path("stderr"));
  return o;
}

}  // namespace

outcome tally(const std::vector<std::string>& args) { return run_tally("", args); }

outcome tally_piped(const std::vector<std::string>& args, const std::string& input) {
  return run_tally("", args, input);
}

outcome tally_limited(const std::vector<std::string>& args, std::uint64_t address_space_kib) {
  return run_tally("ulimit -s 8192 && ulimit -v " + std::to_string(address_space_kib) + " && exec ", args);
}

scratch::scratch() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    dir_ = fs::temp_directory_path() / ("tally-cli-test-" + std::to_string(rd()));
    if (fs::create_directory(dir_)) return;
  }
  throw std::runtime_error("cannot create a scratch directory");
}

scratch::~scratch() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<std::string> scratch::listing() const {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string npy(const std::string& descr, const std::vector<std::int64_t>& shape,
                const std::string& data, int major, bool fortran) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': (";
  for (std::int64_t d : shape) dict += std::to_string(d) + ", ";
  if (!shape.empty())
    dict.erase(dict.size() - (shape.size() == 1 ? 1 : 2));  // numpy writes (3,) but (3, 2)
  dict += "), }";
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t len = dict.size();
  for (std::size_t k = 0; k < prefix - 8; ++k) out += static_cast<char>((len >> (8 * k)) & 0xff);
  return out + dict + data;
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    std::string cell;
    while (std::getline(fields, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace cli_test
