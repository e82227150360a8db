// `tally hist --text`: a file's letters in PMPP's groups of four, its letters, its bytes; every
// count checked against one worked out here by a plain loop over the same bytes.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <random>

#include "harness.hpp"
#include "plot_check.hpp"

namespace cli_test {
namespace {

using json = nlohmann::json;
using counts = std::vector<std::uint64_t>;

/// PMPP's bins (chapter 9's text histogram), as the book lists them.
const std::vector<std::string> kGroups = {"abcd", "efgh", "ijkl", "mnop", "qrst", "uvwx", "yz"};

/// The counts per letter group of `text`, and how many of its bytes are not letters.
std::pair<counts, std::uint64_t> count_groups(const std::string& text) {
  counts c(kGroups.size(), 0);
  std::uint64_t other = 0;
  for (const char byte : text) {
    const char lower = byte >= 'A' && byte <= 'Z' ? static_cast<char>(byte - 'A' + 'a') : byte;
    bool found = false;
    for (std::size_t g = 0; g < kGroups.size() && !found; ++g)
      if (kGroups[g].find(lower) != std::string::npos) {
        ++c[g];
        found = true;
      }
    other += found ? 0 : 1;
  }
  return {c, other};
}

/// `tally hist --text[=MODE] FILE --out DIR/result.json`, parsed; fails the test if the run fails.
json text_json(const scratch& dir, const std::string& mode, const std::string& file,
               const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"hist", mode.empty() ? "--text" : "--text=" + mode, file, "--out",
                                   dir.path("result.json"), "--no-bars"};
  args.insert(args.end(), more.begin(), more.end());
  const outcome o = tally(args);
  EXPECT_EQ(o.code, 0) << o.err;
  return json::parse(read_bytes(dir.path("result.json")));
}

const json& histogram(const json& j) { return j["histograms"][0]; }
counts counts_of(const json& j) { return histogram(j)["counts"].get<counts>(); }
std::uint64_t dropped_of(const json& j) {
  return histogram(j)["samples"].get<std::uint64_t>() - histogram(j)["in_bins"].get<std::uint64_t>();
}

// PMPP's example: "programming massively parallel processors" in its seven bins.
TEST(Text, PmppSentenceInLetterGroups) {
  scratch dir;
  const std::string sentence = "programming massively parallel processors";
  write_bytes(dir.path("pmpp.txt"), sentence + "\n");
  const auto [want, other] = count_groups(sentence + "\n");
  EXPECT_EQ(want, (counts{5, 5, 6, 10, 10, 1, 1}));  // the book's counts
  EXPECT_EQ(other, 4u);                              // three spaces and the newline

  const json j = text_json(dir, "", dir.path("pmpp.txt"));
  EXPECT_EQ(counts_of(j), want);
  EXPECT_EQ(dropped_of(j), other);
  EXPECT_EQ(histogram(j)["samples"], sentence.size() + 1);
  EXPECT_EQ(histogram(j)["axes"][0]["labels"].get<std::vector<std::string>>(),
            (std::vector<std::string>{"a-d", "e-h", "i-l", "m-p", "q-t", "u-x", "y-z"}));
  // The bins over byte codes: a-d is ['a', 'e'), ..., y-z is ['y', 'z' + 1].
  EXPECT_EQ(histogram(j)["axes"][0]["edges"].get<std::vector<double>>(),
            (std::vector<double>{97, 101, 105, 109, 113, 117, 121, 123}));
  EXPECT_EQ(j["format"], "text");
  EXPECT_EQ(j["layout"], "42 bytes");
  EXPECT_EQ(text_json(dir, "groups", dir.path("pmpp.txt")), j);

  const outcome o = tally({"hist", "--text", dir.path("pmpp.txt")});
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* line : {"format   text, 42 bytes\n",
                           "histogram: letter groups, A-Z as a-z; byte codes variable [97, 123], 7 bins\n",
                           "  samples 42   in bins 38   dropped 4 (not letters)\n",
                           "  a-d │████████████████████                      5\n",
                           "  m-p │████████████████████████████████████████ 10\n",
                           "  y-z │████                                      1\n"})
    EXPECT_NE(o.out.find(line), std::string::npos) << line << "\n" << o.out;
  EXPECT_EQ(o.out.find("mean"), std::string::npos) << o.out;  // no summary of byte codes

  const std::string csv = dir.path("pmpp.csv");
  ASSERT_EQ(tally({"hist", "--text", dir.path("pmpp.txt"), "--out", csv}).code, 0);
  const auto rows = csv_rows(read_bytes(csv));
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"channel", "bin_lo", "bin_hi", "count", "label"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"0", "97", "101", "5", "a-d"}));
  EXPECT_EQ(rows[7], (std::vector<std::string>{"0", "121", "123", "1", "y-z"}));
}

// A-Z count as a-z; digits, punctuation, controls and bytes past ASCII (UTF-8, Latin-1) are
// dropped as not letters, bytes next to the letters' codes ('@', '[', '`', '{') included.
TEST(Text, UpperCaseAndNonLetters) {
  scratch dir;
  write_bytes(dir.path("upper.txt"), "PROGRAMMING MASSIVELY PARALLEL PROCESSORS");
  write_bytes(dir.path("lower.txt"), "programming massively parallel processors");
  write_bytes(dir.path("mixed.txt"), "PrOgRaMmInG mAsSiVeLy PaRaLlEl PrOcEsSoRs");
  const json lower = text_json(dir, "", dir.path("lower.txt"));
  EXPECT_EQ(counts_of(lower), (counts{5, 5, 6, 10, 10, 1, 1}));
  for (const char* name : {"upper.txt", "mixed.txt"})
    EXPECT_EQ(counts_of(text_json(dir, "", dir.path(name))), counts_of(lower)) << name;

  std::string others;
  for (int b = 0; b < 256; ++b)
    if (!std::isalpha(b)) others += static_cast<char>(b);
  others += "0123456789 .,;:!?'\"-\t\r\n@[`{ \xc3\xa9t\xc3\xa9 \xe9";  // "été" in UTF-8, Latin-1 'é'
  write_bytes(dir.path("others.txt"), others);
  const auto [want, other] = count_groups(others);
  EXPECT_EQ(want, (counts{0, 0, 0, 0, 1, 0, 0}));  // the 't' of "été"
  const json j = text_json(dir, "", dir.path("others.txt"), {"--flow"});
  EXPECT_EQ(counts_of(j), want);
  EXPECT_EQ(dropped_of(j), other);
  EXPECT_EQ(histogram(j)["flow"]["underflow"], other);  // every non-letter is counted below 'a'

  // One bin per letter.
  const json letters = text_json(dir, "letters", dir.path("mixed.txt"));
  counts per_letter(26, 0);
  for (const char c : std::string("programmingmassivelyparallelprocessors")) ++per_letter[c - 'a'];
  EXPECT_EQ(counts_of(letters), per_letter);
  EXPECT_EQ(histogram(letters)["axes"][0]["labels"][25], "z");
  EXPECT_EQ(histogram(letters)["axes"][0]["kind"], "integer");
  EXPECT_EQ(dropped_of(letters), 3u);
}

// Random bytes, read in small chunks: every mode's counts equal a plain loop's, from a file and
// from a pipe.
TEST(Text, RandomBytesInEveryMode) {
  scratch dir;
  std::mt19937 rng(2024);
  std::string bytes(1'500'000, '\0');
  for (char& b : bytes) b = static_cast<char>(rng() & 0xff);
  // More letters than chance gives, so that every letter bin is well filled.
  for (std::size_t i = 0; i < bytes.size(); i += 3) bytes[i] = static_cast<char>("aZqY m.\n"[rng() % 8]);
  write_bytes(dir.path("random.bin"), bytes);

  counts per_byte(256, 0), per_letter(26, 0);
  std::uint64_t not_letters = 0;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    ++per_byte[b];
    if (b >= 'a' && b <= 'z')
      ++per_letter[b - 'a'];
    else if (b >= 'A' && b <= 'Z')
      ++per_letter[b - 'A'];
    else
      ++not_letters;
  }
  const json all = text_json(dir, "bytes", dir.path("random.bin"), {"--chunk-mb", "0.1"});
  EXPECT_EQ(counts_of(all), per_byte);
  EXPECT_EQ(dropped_of(all), 0u);
  EXPECT_EQ(histogram(all)["axes"][0]["edges"].size(), 257u);
  EXPECT_FALSE(histogram(all)["axes"][0].contains("labels"));

  const json letters = text_json(dir, "letters", dir.path("random.bin"), {"--chunk-mb", "0.1"});
  EXPECT_EQ(counts_of(letters), per_letter);
  EXPECT_EQ(dropped_of(letters), not_letters);

  const auto [groups, other] = count_groups(bytes);
  EXPECT_EQ(other, not_letters);
  EXPECT_EQ(counts_of(text_json(dir, "", dir.path("random.bin"), {"--chunk-mb", "0.1"})), groups);

  const outcome piped =
      tally_piped({"hist", "--text", "--out", dir.path("piped.json"), "--no-bars"}, dir.path("random.bin"));
  ASSERT_EQ(piped.code, 0) << piped.err;
  const json from_pipe = json::parse(read_bytes(dir.path("piped.json")));
  EXPECT_EQ(counts_of(from_pipe), groups);
  EXPECT_EQ(from_pipe["file"], "stdin");

  // The bytes mode's report: one bin per byte value, 7 a line, with the bytes' summary.
  const outcome o = tally({"hist", "--text=bytes", dir.path("random.bin")});
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* line : {"histogram: integer [0, 256), 256 bins\n", "  (7 bins per line)\n",
                           "  samples 1500000   in bins 1500000   dropped 0\n", "  min 0   max 255   (exact)\n"})
    EXPECT_NE(o.out.find(line), std::string::npos) << line << "\n" << o.out;
}

// The bins need no data: an empty file counts nothing in them (other inputs need values).
TEST(Text, EmptyFileCountsNothing) {
  scratch dir;
  write_bytes(dir.path("empty.txt"), "");
  EXPECT_EQ(counts_of(text_json(dir, "", dir.path("empty.txt"))), counts(7, 0));
  EXPECT_EQ(counts_of(text_json(dir, "letters", dir.path("empty.txt"))), counts(26, 0));
  EXPECT_EQ(counts_of(text_json(dir, "bytes", dir.path("empty.txt"))), counts(256, 0));
  const outcome o = tally({"hist", "--text", dir.path("empty.txt")});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("format   text, 0 bytes\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  samples 0   in bins 0   dropped 0 (not letters)\n"), std::string::npos) << o.out;
  const outcome bytes = tally({"hist", "--text=bytes", dir.path("empty.txt")});
  ASSERT_EQ(bytes.code, 0) << bytes.err;
  EXPECT_NE(bytes.out.find("  min -   max -   (no values)\n"), std::string::npos) << bytes.out;
}

// --plot names the bins on the x axis: every text of the model drawn, the groups' names among them.
TEST(Text, PlotNamesTheBins) {
  REQUIRE_PLOTS();
  scratch dir;
  write_bytes(dir.path("pmpp.txt"), "programming massively parallel processors\n");
  const outcome o = tally({"hist", "--text", dir.path("pmpp.txt"), "--plot", dir.path("pmpp.svg")});
  ASSERT_EQ(o.code, 0) << o.err;

  std::vector<double> codes;
  for (const char c : std::string("programmingmassivelyparallelprocessors")) codes.push_back(c);
  tally_cli::hist_result r =
      result_of(dir.path("pmpp.txt"), codes, tally::axis::variable({97, 101, 105, 109, 113, 117, 121, 123}));
  r.input.type = tally::dtype::u8;
  r.named = tally_cli::named_bins{"letter groups, A-Z as a-z", "letter group", "not letters",
                                  {"a-d", "e-h", "i-l", "m-p", "q-t", "u-x", "y-z"}};
  const std::vector<std::string> texts = tally_cli::plot_texts(tally_cli::make_plot_model(r));
  for (const char* text : {"a-d", "y-z", "letter group", "pmpp.txt (u8)"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), text), texts.end()) << text;
  EXPECT_EQ(svg_glyphs(read_bytes(dir.path("pmpp.svg"))), ink_characters(texts)) << ::testing::PrintToString(texts);
}

TEST(Text, HelpDescribesTheModes) {
  const outcome o = tally({"hist", "--help"});
  ASSERT_EQ(o.code, 0) << o.err;
  for (const char* text : {"--text", "a-d, e-h, i-l, m-p, q-t, u-x, y-z", "--text=letters", "--text=bytes"})
    EXPECT_NE(o.out.find(text), std::string::npos) << text << "\n" << o.out;
}

}  // namespace
}  // namespace cli_test
