// merge_throw_sites_cli in.spv out.spv: runs the C++ port (src/merge_throw_sites.hpp), so that
// tests/igc/check_merge_pass.py can compare it byte for byte with the Python prototype.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "merge_throw_sites.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: merge_throw_sites_cli <in.spv> <out.spv>\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.eof() && in.fail()) {
    std::fprintf(stderr, "merge_throw_sites_cli: cannot read %s\n", argv[1]);
    return 1;
  }
  if (bytes.size() % 4 != 0) {
    std::fprintf(stderr, "merge_throw_sites_cli: %s is not a whole number of words\n", argv[1]);
    return 1;
  }
  std::vector<uint32_t> words(bytes.size() / 4);
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = static_cast<uint32_t>(static_cast<unsigned char>(bytes[4 * i])) |
               static_cast<uint32_t>(static_cast<unsigned char>(bytes[4 * i + 1])) << 8 |
               static_cast<uint32_t>(static_cast<unsigned char>(bytes[4 * i + 2])) << 16 |
               static_cast<uint32_t>(static_cast<unsigned char>(bytes[4 * i + 3])) << 24;
  try {
    words = zex_mts::merge_throw_sites(words);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "merge_throw_sites_cli: %s\n", e.what());
    return 1;
  }
  std::ofstream out(argv[2], std::ios::binary);
  for (uint32_t w : words) {
    const char b[4] = {static_cast<char>(w & 0xFF), static_cast<char>((w >> 8) & 0xFF),
                       static_cast<char>((w >> 16) & 0xFF), static_cast<char>((w >> 24) & 0xFF)};
    out.write(b, 4);
  }
  return out ? 0 : 1;
}
