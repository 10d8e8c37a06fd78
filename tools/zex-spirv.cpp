// zex-spirv: zex's SPIR-V steps as a command, for compiler writers and zex's own benchmarks and tests.
//
//   zex-spirv merge    in.spv -o out.spv   the throw-site merge alone (src/spirv/passes/merge_throw_sites.cpp)
//   zex-spirv link     in.spv -o out.spv   exactly what zex::Module hands the driver: validate, merge,
//                                          link the device library, one variable per built-in, validate
//              [--no-merge]                 ... without the merge (the per-site module, for comparisons)
//              [--no-strings]               ... without the string wrapping (for comparisons only: the
//                                               strings then land where NEO 22.43's host cannot read them)
//              [--library lib.spv]          ... with another device library than the embedded one
//              [--times]                    ... and the seconds each step took, on stderr
//              [--check-memory]             ... with the memory checks (ModuleOptions::check_memory), and
//                                          what they checked, on stderr
//   zex-spirv validate in.spv              the validation zex::Module does (debug information set aside)
//   zex-spirv kernels  in.spv              the kernel names, one a line
//   zex-spirv calls    in.spv              for each imported function: its import name and call count
//   zex-spirv strings  in.spv              the strings zex wrapped (in a linked module): name and bytes
//   zex-spirv wrap     in.spv -o out.spv   the string wrapping alone (src/spirv/passes/strings.cpp)
//   zex-spirv throws   in.spv -o out.spv   the throw paths and the convergence at barriers alone
//                                          (throw_paths.cpp, barrier_throws.cpp), unvalidated
//   zex-spirv stop     in.spv -o out.spv   `link`, then the stop checks of stop_on_throw launches
//                                          (passes/stop_on_throw.cpp), validated
//   zex-spirv sites    in.spv              the throw paths `link` numbers: one line per id, then its
//                                          frames (what the host prints for a report of that id)
//
// Exit status: 0 done, 1 the module was refused (the message says why), 2 usage.
#include "spirv/spirv.hpp"

#include "spirv/passes/passes.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: zex-spirv merge <in.spv> -o <out.spv>\n"
               "       zex-spirv link <in.spv> -o <out.spv> [--no-merge] [--no-strings] [--library <lib.spv>] [--times] [--check-memory]\n"
               "       zex-spirv validate <in.spv>\n"
               "       zex-spirv kernels <in.spv>\n"
               "       zex-spirv calls <in.spv>\n"
               "       zex-spirv strings <in.spv>\n"
               "       zex-spirv wrap <in.spv> -o <out.spv>\n"
               "       zex-spirv throws <in.spv> -o <out.spv>\n"
               "       zex-spirv stop <in.spv> -o <out.spv>\n"
               "       zex-spirv sites <in.spv> [--library <lib.spv>]\n");
  return 2;
}

std::vector<uint32_t> read_spirv(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  return zex::detail::spirv_words(bytes.data(), bytes.size());
}

void write_spirv(const std::string& path, const std::vector<uint32_t>& words) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string cmd = argv[1];
  std::string in, out, library;
  bool merge = true, strings = true, times = false, check_memory = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      out = argv[++i];
    else if (a == "--library" && i + 1 < argc)
      library = argv[++i];
    else if (a == "--no-merge")
      merge = false;
    else if (a == "--no-strings")
      strings = false;
    else if (a == "--times")
      times = true;
    else if (a == "--check-memory")
      check_memory = true;
    else if (in.empty() && (a.empty() || a[0] != '-'))
      in = a;
    else
      return usage();
  }
  if (in.empty()) return usage();
  const bool writes = cmd == "merge" || cmd == "link" || cmd == "wrap" || cmd == "throws" || cmd == "stop";
  if (writes != !out.empty() || (cmd != "link" && (!merge || !strings || times || check_memory || (!library.empty() && cmd != "sites")))) return usage();
  try {
    const std::vector<uint32_t> words = read_spirv(in);
    if (cmd == "merge") {
      write_spirv(out, zex::passes::merge_throw_sites(words));
    } else if (cmd == "wrap") {
      write_spirv(out, zex::passes::wrap_zex_strings(words));
    } else if (cmd == "throws") {
      write_spirv(out, zex::passes::run_on_words(words, [](zex::passes::Module& m) {
                    const bool numbered = zex::passes::number_throw_paths(m, nullptr);
                    return zex::passes::converge_throws_at_barriers(m) || numbered;
                  }));
    } else if (cmd == "stop") {
      const std::vector<uint32_t> stopped = zex::detail::spirv_with_stop_checks(zex::detail::link_module(words).words);
      zex::detail::validate_spirv(stopped, "the module with stop checks");
      write_spirv(out, stopped);
    } else if (cmd == "link") {
      std::vector<uint32_t> lib;
      if (!library.empty()) lib = read_spirv(library);
      zex::detail::LinkSteps steps;
      zex::detail::MemoryCheckInfo memory;
      write_spirv(out, zex::detail::link_module(words, library.empty() ? nullptr : &lib, merge, strings,
                                                times ? &steps : nullptr, check_memory ? &memory : nullptr).words);
      if (check_memory) {
        std::fprintf(stderr, "memory checks: %zu accesses checked (%zu by an earlier check of the same pointer); unchecked: %zu loaded pointers, %zu from integers, %zu untraced, %zu __local\n",
                     memory.checked, memory.merged, memory.loaded, memory.from_integer, memory.untraced, memory.local);
        for (const zex::detail::MemoryCheckedKernel& k : memory.kernels) {
          std::fprintf(stderr, "  %s: %u parameters, bounds for", k.name.c_str(), k.user_params);
          for (uint32_t b : k.bounded) std::fprintf(stderr, " %u", b);
          std::fprintf(stderr, "%s\n", k.bounded.empty() ? " none" : "");
        }
      }
      for (const auto& [step, seconds] : steps) std::fprintf(stderr, "%8.3f s  %s\n", seconds, step.c_str());
    } else if (cmd == "sites") {
      std::vector<uint32_t> lib;
      if (!library.empty()) lib = read_spirv(library);
      const zex::detail::SiteTable sites = zex::detail::link_module(words, library.empty() ? nullptr : &lib).sites;
      for (size_t k = 0; k < sites.size(); ++k) {
        const zex::detail::ThrowSite& s = sites[k];
        std::printf("%zu %s: %s (%u frames)\n", k + 1, s.name.c_str(), s.reason.c_str(), s.depth);
        for (const zex::Frame& f : s.frames)
          if (f.line)
            std::printf("  %s at %s:%u\n", f.function.c_str(), f.file.c_str(), f.line);
          else
            std::printf("  %s (line unknown)\n", f.function.c_str());
      }
    } else if (cmd == "validate") {
      zex::detail::validate_spirv(words, "the module's SPIR-V");
    } else if (cmd == "kernels") {
      for (const std::string& k : zex::detail::spirv_kernel_names(words)) std::printf("%s\n", k.c_str());
    } else if (cmd == "calls") {
      const zex::passes::Module m = zex::passes::parse(words);
      std::map<uint32_t, size_t> count;
      for (const zex::passes::Instruction& i : m.insts)
        if (i.opcode == spv::OpFunctionCall) ++count[i.word(3)];
      for (const auto& [id, name] : zex::passes::imported_functions(m)) std::printf("%s %zu\n", name.c_str(), count[id]);
    } else if (cmd == "strings") {
      // One line each: the name, then the bytes as a C string literal (NULs and non-printables escaped).
      for (const auto& [name, bytes] : zex::detail::spirv_zex_strings(words)) {
        std::printf("%s \"", name.c_str());
        for (unsigned char c : bytes)
          if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            std::putchar(c);
          else
            std::printf("\\x%02x", c);
        std::printf("\"\n");
      }
    } else {
      return usage();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zex-spirv %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
  return 0;
}
