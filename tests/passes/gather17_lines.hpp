// The source lines of tests/kernels/igc_bench/gather17.cl's 17 checks, in order: the lines ZEX_THROW records
// at level 2. Shared by tests/passes and tests/igc.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

inline std::vector<uint32_t> gather17_lines(const std::string& source) {
  std::ifstream f(source);
  std::vector<uint32_t> lines;
  std::string l;
  for (uint32_t n = 1; std::getline(f, l); ++n)
    if (l.find("ZEXB_CHECK(j, n);") != std::string::npos) lines.push_back(n);
  return lines;
}
