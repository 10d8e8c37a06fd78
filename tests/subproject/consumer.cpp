// A program of a project that added zex with add_subdirectory() (tests/subproject/CMakeLists.txt).
//   subproject_consumer <kernels.spv>
// End to end on whatever driver the loader finds (CTest points it at zex-cpu): a kernel that throws
// is caught with its name and reason, and the stream then runs a clean launch. Exit 0 on success.
#include <zex/zex.hpp>

#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: subproject_consumer <kernels.spv>\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> spv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    zex::Context ctx;
    zex::Device dev = ctx.device(0);
    zex::Module mod(dev, spv);  // linked with the prebuilt device library
    zex::Kernel k = mod.kernel("throw_odd_name");
    zex::Kernel noop = mod.kernel("noop");
    zex::Stream stream(dev);
    zex::LaunchConfig cfg;
    cfg.groups = {1};
    cfg.group_size = {1};
    cfg.debug_level = 1;
    stream.launch(k, cfg);
    try {
      stream.synchronize();
      std::cerr << "subproject_consumer: no KernelException\n";
      return 1;
    } catch (const zex::KernelException& e) {
      if (e.name() != "Bad\\x09Name\\x01" || e.reason() != "reason with a newline\\x0a") {
        std::cerr << "subproject_consumer: unexpected exception: " << e.what() << "\n";
        return 1;
      }
      std::cout << "subproject_consumer: caught: " << e.what() << "\n";
    }
    stream.launch(noop, cfg);
    stream.synchronize();
  } catch (const std::exception& e) {
    std::cerr << "subproject_consumer: " << e.what() << "\n";
    return 1;
  }
  std::cout << "subproject_consumer: ok\n";
  return 0;
}
