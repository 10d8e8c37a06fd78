// libFuzzer target for the CPER decoder (common/cper.hpp): a record from a driver's Info Log
// is as hostile as a report. The input is the record itself, copied into a vector of exactly its size,
// so a read past it is an ASan report (docs/reliability.md, "Fuzzing the report decoder").
#include "common/cper.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "cper_fuzz: invariant violated: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cper = zex::detail::cper;
  const std::vector<uint8_t> in(data, data + size);
  const cper::Record r = cper::decode(in.data(), in.size());
  if (r.sections.size() > cper::kMaxSections) fail("more sections than kMaxSections");
  if (r.valid && !r.recognized) fail("valid but not recognized");
  if (r.valid != r.problem.empty()) fail("valid exactly when no problem is named");
  if (!r.recognized && !r.sections.empty()) fail("sections of an unrecognized record");
  const std::string s = cper::summarize(r);
  if (s.empty()) fail("empty summary");
  return 0;
}
