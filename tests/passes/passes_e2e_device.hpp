// The context and device the end-to-end tests of tests/passes/ share (passes_e2e_test.cpp,
// passes_e2e_throws_test.cpp): one per process.
#pragma once

#include <zex/zex.hpp>

namespace passes_test {

struct Device {
  zex::Context ctx;
  zex::Device dev;
  Device() : ctx(), dev(ctx.device(0)) {}
};

inline Device& device() {
  static Device* d = new Device();  // never destroyed: see zex_fixture.hpp's env()
  return *d;
}

}  // namespace passes_test
