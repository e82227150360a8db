// Every failure: one "tally: error:" line, exit code 2 (usage) or 1 (anything else), no crash,
// and no output file, not even a partial or temporary one.
#include <gtest/gtest.h>

#include <stb_image_write.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "harness.hpp"
#include "plot_check.hpp"

namespace cli_test {
namespace {

constexpr int kUsage = 2, kFailure = 1;

/// Runs `tally hist ARGS --out DIR/out.csv --plot DIR/out.png` (without --plot where this build
/// draws no plots: that would be the error) expecting `code`, then checks the message and that
/// the directory holds exactly `files` (none of the outputs).
void expect_failure(const scratch& dir, std::vector<std::string> args, int code,
                    const std::string& says, const std::vector<std::string>& files) {
  args.insert(args.begin(), "hist");
  args.insert(args.end(), {"--out", dir.path("out.csv")});
  if (tally_cli::plots_available()) args.insert(args.end(), {"--plot", dir.path("out.png")});
  const outcome o = tally(args);
  EXPECT_EQ(o.code, code) << o.err;
  EXPECT_EQ(o.err.rfind("tally: error: ", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
  EXPECT_EQ(dir.listing(), files);
}

TEST(Errors, MissingOrUnreadableFile) {
  scratch dir;
  expect_failure(dir, {dir.path("nope.npy")}, kFailure, "cannot open", {});
  expect_failure(dir, {dir.path("")}, kFailure, "is a directory", {});
}

TEST(Errors, TruncatedNpy) {
  scratch dir;
  std::string bytes = npy("<f8", {10}, std::string(10 * 8, '\0'));
  bytes.resize(bytes.size() - 5);
  write_bytes(dir.path("t.npy"), bytes);
  expect_failure(dir, {dir.path("t.npy")}, kFailure, "truncated .npy", {"t.npy"});

  write_bytes(dir.path("h.npy"), npy("<f8", {10}, "").substr(0, 30));  // cut inside the header
  expect_failure(dir, {dir.path("h.npy")}, kFailure, "truncated .npy header", {"h.npy", "t.npy"});
}

TEST(Errors, BadNpyHeaders) {
  scratch dir;
  const std::string data(16, '\0');
  std::string garbled = npy("<f8", {2}, data);
  garbled.replace(garbled.find("'shape'"), 7, "'shope'");
  write_bytes(dir.path("a.npy"), garbled);
  expect_failure(dir, {dir.path("a.npy")}, kFailure, "bad .npy header", {"a.npy"});

  std::string version = npy("<f8", {2}, data);
  version[6] = 9;
  write_bytes(dir.path("b.npy"), version);
  expect_failure(dir, {dir.path("b.npy")}, kFailure, "unsupported .npy format version 9",
                 {"a.npy", "b.npy"});

  write_bytes(dir.path("c.npy"), npy("<c16", {1}, data));
  expect_failure(dir, {dir.path("c.npy")}, kFailure, "unsupported .npy dtype '<c16'",
                 {"a.npy", "b.npy", "c.npy"});

  write_bytes(dir.path("d.npy"), npy("<f8", {2, 2}, std::string(32, '\0'), 1, true));
  expect_failure(dir, {dir.path("d.npy")}, kFailure, "Fortran-order",
                 {"a.npy", "b.npy", "c.npy", "d.npy"});

  // 2^32 + 1 columns do not fit an int (they once wrapped around to one column).
  write_bytes(dir.path("e.npy"), npy("<f8", {0, (std::int64_t{1} << 32) + 1}, ""));
  expect_failure(dir, {dir.path("e.npy")}, kFailure, "4294967297 columns",
                 {"a.npy", "b.npy", "c.npy", "d.npy", "e.npy"});
}

TEST(Errors, RawInputs) {
  scratch dir;
  write_bytes(dir.path("r.bin"), std::string(7, '\1'));
  expect_failure(dir, {dir.path("r.bin"), "--dtype", "f32"}, kFailure, "not a multiple", {"r.bin"});
  expect_failure(dir, {dir.path("r.bin"), "--dtype", "f128"}, kUsage, "f128", {"r.bin"});
  expect_failure(dir, {dir.path("r.bin")}, kUsage, "give --dtype", {"r.bin"});
  expect_failure(dir, {dir.path("r.bin"), "--dtype", "u8", "--channels", "2"}, kFailure,
                 "7 values are not a whole number of 2-value rows", {"r.bin"});
}

// Python refuses a range from data without values (numpy's "autodetected range of [nan, nan]");
// the command says what is missing, for an empty input and for one of NaN alone, from a file
// or a pipe.
TEST(Errors, EmptyAndAllNanInputs) {
  scratch dir;
  write_bytes(dir.path("empty.npy"), npy("<f8", {0}, ""));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::string nans(3 * sizeof(double), '\0');
  for (int i = 0; i < 3; ++i) std::memcpy(nans.data() + i * sizeof(double), &nan, sizeof nan);
  write_bytes(dir.path("nan.npy"), npy("<f8", {3}, nans));
  const std::vector<std::string> both = {"empty.npy", "nan.npy"};
  expect_failure(dir, {dir.path("empty.npy")}, kFailure, "holds no values", both);
  expect_failure(dir, {dir.path("empty.npy"), "--range", "0,1"}, kFailure, "holds no values", both);
  expect_failure(dir, {dir.path("nan.npy")}, kFailure, "every value is NaN", both);
  expect_failure(dir, {dir.path("nan.npy"), "--integer"}, kFailure, "every value is NaN", both);
  const outcome piped = tally_piped({"hist"}, dir.path("nan.npy"));
  EXPECT_EQ(piped.code, kFailure);
  EXPECT_NE(piped.err.find("every value is NaN"), std::string::npos) << piped.err;
  // With a range, NaN samples are counted as NaN, as numpy drops them.
  const outcome ranged = tally({"hist", dir.path("nan.npy"), "--range", "0,1", "--no-bars", "--flow"});
  EXPECT_EQ(ranged.code, 0) << ranged.err;
}

// Text input: the first problem named by line and column; options for text refused elsewhere.
TEST(Errors, TextInputs) {
  scratch dir;
  write_bytes(dir.path("a.csv"), "x,y\n1,2\n3,four\n");
  write_bytes(dir.path("b.csv"), "1,2\n3\n");
  write_bytes(dir.path("c.npy"), npy("<f8", {1}, std::string(8, '\0')));
  const std::vector<std::string> all = {"a.csv", "b.csv", "c.npy"};
  expect_failure(dir, {dir.path("a.csv")}, kFailure, "line 3, column 1: 'four' is not a number", all);
  expect_failure(dir, {dir.path("b.csv")}, kFailure, "line 2: 1 field where the first row has 2", all);
  expect_failure(dir, {dir.path("a.csv"), "--column", "z"}, kUsage, "--column z: no such column", all);
  expect_failure(dir, {dir.path("a.csv"), "--column", "2"}, kUsage, "columns 0 to 1", all);
  expect_failure(dir, {dir.path("b.csv"), "--column", "x"}, kUsage, "no header", all);
  expect_failure(dir, {dir.path("a.csv"), "--delimiter", "ab"}, kUsage, "one character", all);
  expect_failure(dir, {dir.path("c.npy"), "--column", "0"}, kUsage, "is for text and CSV input", all);
}

// --text: a file that is not there or not readable, options it has no use for, a mode it does
// not know or one written as a word of its own (which would be FILE), and no FILE at all.
TEST(Errors, TextMode) {
  scratch dir;
  write_bytes(dir.path("a.txt"), "abc\n");
  const std::vector<std::string> only = {"a.txt"};
  const std::string in = dir.path("a.txt");
  expect_failure(dir, {"--text", dir.path("nope.txt")}, kFailure, "nope.txt: cannot open", only);
  expect_failure(dir, {"--text=bytes", dir.path("")}, kFailure, "is a directory", only);
  if (geteuid() != 0) {  // root reads any file
    write_bytes(dir.path("locked.txt"), "abc");
    std::filesystem::permissions(dir.path("locked.txt"), std::filesystem::perms::none);
    expect_failure(dir, {"--text", dir.path("locked.txt")}, kFailure, "locked.txt: cannot open",
                   {"a.txt", "locked.txt"});
    std::filesystem::remove(dir.path("locked.txt"));
  }
  const std::vector<std::vector<std::string>> misfits = {
      {"--bins", "7"}, {"--range", "0,1"}, {"--edges", "0,1"}, {"--integer"}, {"--dtype", "u8"}, {"--key", "x"},
      {"--column", "0"}, {"--delimiter", ","}, {"--gray"}, {"--channels", "2"}, {"--nd"}, {"--weights", in}};
  for (const std::vector<std::string>& misfit : misfits) {
    std::vector<std::string> args = {"--text", in};
    args.insert(args.end(), misfit.begin(), misfit.end());
    expect_failure(dir, args, kUsage,
                   misfit[0] + " does not go with --text, which reads FILE as bytes into fixed bins", only);
  }
  expect_failure(dir, {"--text=words", in}, kUsage, "--text: words not in {groups,letters,bytes}", only);
  expect_failure(dir, {"--text", "bytes", in}, kUsage, "--text bytes: write the mode with '=', --text=bytes",
                 only);
  expect_failure(dir, {in, "--text", "letters"}, kUsage, "--text=letters", only);
  expect_failure(dir, {"--text"}, kUsage, "--text counts the text of FILE, or of standard input where it is piped",
                 only);
}

TEST(Errors, BadOptions) {
  scratch dir;
  write_bytes(dir.path("a.npy"), npy("<f8", {2}, std::string(16, '\0')));
  const std::vector<std::string> only = {"a.npy"};
  const std::string in = dir.path("a.npy");
  expect_failure(dir, {in, "--bogus"}, kUsage, "unknown option --bogus", only);
  expect_failure(dir, {in, "--range", "0", "1"}, kUsage, "a comma-separated list", only);
  expect_failure(dir, {in, "--bins", "0"}, kUsage, "--bins", only);
  expect_failure(dir, {in, "--bins", "ten"}, kUsage, "not a number", only);
  expect_failure(dir, {in, "--range", "1,0"}, kUsage, "LO < HI", only);
  expect_failure(dir, {in, "--range", "0,1,2"}, kUsage, "pairs", only);
  expect_failure(dir, {in, "--edges", "0,1", "--bins", "3"}, kUsage, "--edges", only);
  expect_failure(dir, {in, "--bins", "2,3"}, kUsage, "one for all or one for each", only);
  expect_failure(dir, {in, "--gray"}, kUsage, "--gray", only);
  expect_failure(dir, {in, "--strategy", "fastest"}, kUsage, "fastest", only);
  expect_failure(dir, {in, "--counts", "16"}, kUsage, "--counts", only);

  const outcome o = tally({"hist", in, "--out", dir.path("x.txt")});
  EXPECT_EQ(o.code, kUsage);
  EXPECT_NE(o.err.find(".csv or .json"), std::string::npos) << o.err;
  EXPECT_EQ(tally({}).code, kUsage);
}

// `--chunk-mb nan` was taken (and ran 150x slower), `--chunk-mb 0` answered with DBL_MAX's 309
// digits: every number option takes finite values in its range, and says so briefly.
TEST(Errors, NumberOptionsTakeFiniteValuesInRange) {
  scratch dir;
  write_bytes(dir.path("a.npy"), npy("<f8", {2}, std::string(16, '\0')));
  const std::string in = dir.path("a.npy");
  for (const char* mb : {"nan", "inf", "-inf", "0", "-1", "1e7", ""})
    expect_failure(dir, {in, "--chunk-mb", mb}, kUsage,
                   "--chunk-mb: '" + std::string(mb) + "' is not a number of MiB > 0 and <= 1048576", {"a.npy"});
  expect_failure(dir, {in, "--threads", "-1"}, kUsage, "--threads: '-1' is not a number of threads >= 0", {"a.npy"});
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"hist", in, "--chunk-mb", "0"}, {"hist", in, "--threads", "-1"}, {"plan", "--bins", "0"}, {"plan", "--n", "-1"}}) {
    const outcome o = tally(args);
    EXPECT_EQ(o.code, kUsage) << o.err;
    EXPECT_LT(o.err.size(), 100u) << o.err;
  }
  const outcome small = tally({"hist", in, "--chunk-mb", "1e-6", "--bins", "2"});
  EXPECT_EQ(small.code, 0) << small.err;
}

// `--bins ""` was the default 64 bins and `--bins 0x10` 16: bins are decimal digits, and no
// option takes an empty value for "left out".
TEST(Errors, BinsAreDecimalCountsAndValuesAreNotEmpty) {
  scratch dir;
  write_bytes(dir.path("a.npy"), npy("<f8", {2}, std::string(16, '\0')));
  const std::string in = dir.path("a.npy");
  for (const char* bins : {"0x10", "1e1", "+5", " 5", "16.0", "-3", "4,", "99999999999999999999"})
    expect_failure(dir, {in, "--bins", bins}, kUsage,
                   "--bins: '" + std::string(bins).substr(std::string(bins) == "4," ? 2 : 0) +
                       "' is not a number of bins",
                   {"a.npy"});
  for (const char* option : {"--bins", "--range", "--edges", "--dtype", "--weights"})
    expect_failure(dir, {in, option, ""}, kUsage, std::string(option) + ": an empty value", {"a.npy"});
  for (const char* option : {"--out", "--plot"}) {
    const outcome o = tally({"hist", in, option, ""});
    EXPECT_EQ(o.code, kUsage) << o.err;
    EXPECT_NE(o.err.find(std::string(option) + ": an empty value"), std::string::npos) << o.err;
  }
  EXPECT_EQ(tally({"hist", ""}).code, kUsage);
  const outcome o = tally({"hist", in, "--bins", "010", "--no-bars"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("10 bins"), std::string::npos) << o.out;
}

// stb_image checks no CRC: a damaged PNG decoded silently. Each chunk's CRC is checked.
TEST(Errors, DamagedPngsAreRefused) {
  scratch dir;
  const unsigned char rgb[12] = {1, 2, 3, 40, 50, 60, 7, 8, 9, 200, 100, 0};
  ASSERT_TRUE(stbi_write_png(dir.path("good.png").c_str(), 2, 2, 3, rgb, 2 * 3));
  const std::string good = read_bytes(dir.path("good.png"));
  EXPECT_EQ(tally({"hist", dir.path("good.png")}).code, 0);
  std::string header = good, end = good, data = good;
  header[29] ^= 1;                  // IHDR's CRC (signature 8, length 4, type 4, 13 bytes)
  end[end.size() - 1] ^= 1;         // IEND's CRC, the file's last byte
  data[data.size() - 12 - 5] ^= 1;  // a byte of the IDAT chunk's data (before its CRC and IEND)
  write_bytes(dir.path("header.png"), header);
  write_bytes(dir.path("end.png"), end);
  write_bytes(dir.path("data.png"), data);
  std::vector<std::string> files = {"data.png", "end.png", "good.png", "header.png"};
  expect_failure(dir, {dir.path("header.png")}, kFailure, "header.png: damaged PNG: the CRC of its 'IHDR' chunk", files);
  expect_failure(dir, {dir.path("end.png")}, kFailure, "end.png: damaged PNG: the CRC of its 'IEND' chunk", files);
  expect_failure(dir, {dir.path("data.png")}, kFailure, "data.png: damaged PNG: the CRC of its 'IDAT' chunk", files);
}

TEST(Errors, LibraryErrorsAreReported) {
  scratch dir;
  write_bytes(dir.path("a.npy"), npy("<f8", {2}, std::string(16, '\0')));
  // The library checks edges: decreasing.
  expect_failure(dir, {dir.path("a.npy"), "--edges", "0,2,1"}, kFailure, "must not decrease", {"a.npy"});
}

TEST(Errors, BinsBeyondTheMemoryAreRefusedBeforeAnyIsAllocated) {
  scratch dir;
  std::string ten;
  for (std::int32_t v = 0; v < 10; ++v) ten.append(reinterpret_cast<const char*>(&v), sizeof v);
  write_bytes(dir.path("a.npy"), npy("<i4", {10}, ten));
  // 2^62 integer bins: more than any machine's memory; the report is refused at once.
  expect_failure(dir, {dir.path("a.npy"), "--integer", "--range", "0,4611686018427387904"}, kFailure,
                 "(use fewer bins) needs", {"a.npy"});
}

// Each error says what is wrong in the user's own terms, with stb's own reason for an image.
TEST(Errors, MessagesSayWhatIsWrong) {
  scratch dir;
  write_bytes(dir.path("a.npy"), npy("<f8", {2}, std::string(16, '\0')));
  const std::string a = dir.path("a.npy");
  expect_failure(dir, {a, "--range", "5", "1"}, kUsage, "--range LO,HI", {"a.npy"});
  expect_failure(dir, {a, "--range", "5,1"}, kUsage, "LO < HI", {"a.npy"});
  expect_failure(dir, {a, "--range", "0,1e999"}, kUsage, "'1e999' is not a number", {"a.npy"});
  expect_failure(dir, {a, "--integer", "--range", "-9e18,9e18"}, kFailure, "more bins than fit in memory", {"a.npy"});
  expect_failure(dir, {a, "--integer", "--range", "0.5,3"}, kUsage, "whole numbers", {"a.npy"});
  // A PNG header of 2^30 x 2^30 pixels: stb says "too large", not "unknown image type".
  std::string png = "\x89PNG\r\n\x1a\n";
  png += std::string("\0\0\0\x0d", 4) + "IHDR" + std::string("\x40\0\0\0\x40\0\0\0\x08\x02\0\0\0", 13) +
         "\xd7\xf6\x79\xe9";  // the chunk's CRC
  write_bytes(dir.path("huge.png"), png);
  expect_failure(dir, {dir.path("huge.png")}, kFailure, "huge.png: cannot decode the image: too large",
                 {"a.npy", "huge.png"});
  // File content quoted in a message is escaped, never printed raw.
  std::string header = "{'descr': '<\x01\x02\xff\xfe', 'fortran_order': False, 'shape': (2,), }";
  header += std::string(128 - 10 - header.size() - 1, ' ') + "\n";
  std::string bad = std::string("\x93NUMPY\x01\x00", 8);
  bad += static_cast<char>(header.size());
  bad += '\0';
  write_bytes(dir.path("raw.npy"), bad + header + std::string(16, '\0'));
  const outcome raw = tally({"hist", dir.path("raw.npy")});
  EXPECT_EQ(raw.code, kFailure);
  EXPECT_NE(raw.err.find("'<\\x01\\x02\\xff\\xfe'"), std::string::npos) << raw.err;
  for (unsigned char c : raw.err) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << raw.err;
  const outcome plan = tally({"plan", "--weights=f16"});
  EXPECT_EQ(plan.code, kUsage);
  EXPECT_NE(plan.err.find("weights are f32 or f64"), std::string::npos) << plan.err;
}

TEST(Errors, SubnormalRangesAreNumbers) {
  scratch dir;
  std::vector<double> v{0.0, 5e-321, 1e-320};
  write_bytes(dir.path("a.npy"), npy("<f8", {3}, bytes_of(v)));
  const outcome o = tally({"hist", dir.path("a.npy"), "--range", "0,1e-320", "--bins", "2"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("in bins 3"), std::string::npos) << o.out;
}

TEST(Errors, WeightsThatDoNotFit) {
  scratch dir;
  write_bytes(dir.path("a.npy"), npy("<f8", {3}, std::string(24, '\0')));
  write_bytes(dir.path("w.npy"), npy("<f8", {2}, std::string(16, '\0')));
  write_bytes(dir.path("w.bin"), std::string(5, '\0'));
  write_bytes(dir.path("i.npy"), npy("<i4", {3}, std::string(12, '\0')));
  const std::vector<std::string> inputs = {"a.npy", "i.npy", "w.bin", "w.npy"};
  expect_failure(dir, {dir.path("a.npy"), "--weights", dir.path("w.npy")}, kFailure,
                 "2 weights for 3 samples", inputs);
  expect_failure(dir, {dir.path("a.npy"), "--weights", dir.path("w.bin")}, kFailure,
                 "(f32) or 24 (f64)", inputs);
  expect_failure(dir, {dir.path("a.npy"), "--weights", dir.path("i.npy")}, kFailure,
                 "weights must be f4 or f8", inputs);
}

TEST(Errors, FailedRunKeepsTheOldOutputAndLeavesNoTemporaryFile) {
  scratch dir;
  write_bytes(dir.path("out.csv"), "previous\n");
  std::string truncated = npy("<f8", {4}, std::string(32, '\0'));
  truncated.pop_back();
  write_bytes(dir.path("t.npy"), truncated);
  expect_failure(dir, {dir.path("t.npy")}, kFailure, "truncated", {"out.csv", "t.npy"});
  EXPECT_EQ(read_bytes(dir.path("out.csv")), "previous\n");

  // An output that cannot be written: neither it nor the other output appears.
  REQUIRE_PLOTS();
  write_bytes(dir.path("ok.npy"), npy("<f8", {1}, std::string(8, '\0')));
  const outcome o = tally({"hist", dir.path("ok.npy"), "--out", dir.path("x.json"), "--plot",
                           dir.path("missing/p.svg")});
  EXPECT_EQ(o.code, kFailure);
  EXPECT_NE(o.err.find("cannot write"), std::string::npos) << o.err;
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"ok.npy", "out.csv", "t.npy"}));

  // A plot target that is a directory: the --out file, committed first, must not appear either.
  std::filesystem::create_directory(dir.path("p.svg"));
  const outcome d = tally({"hist", dir.path("ok.npy"), "--out", dir.path("x.json"), "--plot",
                           dir.path("p.svg")});
  EXPECT_EQ(d.code, kFailure);
  EXPECT_NE(d.err.find("is a directory"), std::string::npos) << d.err;
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"ok.npy", "out.csv", "p.svg", "t.npy"}));
}

}  // namespace
}  // namespace cli_test

namespace cli_test {
namespace {

// Estimated percentiles are interpolated in bins, so they may pass the data's extremes; the report
// keeps them within the exact min and max it prints.
TEST(Report, EstimatedPercentilesStayWithinTheExactExtremes) {
  scratch dir;
  std::vector<std::int64_t> v;
  for (int i = 0; i < 10; ++i) v.push_back(i);
  write_bytes(dir.path("a.npy"), npy("<i8", {10}, bytes_of(v)));
  // Integer bins are [k - 0.5, k + 0.5) as values: p1 interpolates to -0.4 in the first.
  const outcome o = tally({"hist", dir.path("a.npy"), "--integer", "--range", "0,10"});
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* p : {"p1 ", "p99 "}) {
    const std::size_t at = o.out.find(p);
    ASSERT_NE(at, std::string::npos) << o.out;
    const double value = std::stod(o.out.substr(at + std::strlen(p)));
    EXPECT_GE(value, 0.0) << o.out;
    EXPECT_LE(value, 9.0) << o.out;
  }
}

}  // namespace
}  // namespace cli_test
