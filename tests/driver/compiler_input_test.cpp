// zex-cpu's compiler steps before LLVM: the SPIR-V check, the translation cache, and the options that
// reach PoCL's build.
#include "compiler_test_util.hpp"

namespace zexcpu {
namespace {

// --- spirv_check.cpp ----------------------------------------------------------------------------------

constexpr uint32_t op(uint32_t words, uint32_t opcode) { return words << 16 | opcode; }

TEST(SpirvCheck, AcceptsATranslatedModule) {
  std::vector<uint8_t> spv = read_spirv("basic");
  ASSERT_GT(spv.size(), 20u);
  SpirvFacts facts;
  std::string err;
  EXPECT_TRUE(check_spirv(spv.data(), spv.size(), &facts, &err)) << err;
  EXPECT_GE(facts.version, 0x00010000u);
}

TEST(SpirvCheck, RejectsATruncatedModule) {
  std::vector<uint8_t> spv = read_spirv("basic");
  ASSERT_GT(spv.size(), 100u);
  spv.resize((spv.size() / 2) & ~size_t{3});
  SpirvFacts facts;
  std::string err;
  EXPECT_FALSE(check_spirv(spv.data(), spv.size(), &facts, &err));
  EXPECT_FALSE(err.empty());
}

TEST(SpirvCheck, SpecConstantSizesComeFromTheirLiterals) {
  // OpDecorate %2 SpecId 7; OpDecorate %4 SpecId 9; %1 = OpTypeInt 16 0; %2 = OpSpecConstant %1 5;
  // %3 = OpTypeBool; %4 = OpSpecConstantTrue %3
  std::vector<uint32_t> w = {0x07230203, 0x00010000, 0, 5, 0,
                             op(4, 71), 2, 1, 7,
                             op(4, 71), 4, 1, 9,
                             op(4, 21), 1, 16, 0,
                             op(4, 50), 1, 2, 5,
                             op(2, 20), 3,
                             op(3, 48), 3, 4};
  std::vector<uint8_t> b = words_to_bytes(w);
  SpirvFacts facts;
  std::string err;
  ASSERT_TRUE(check_spirv(b.data(), b.size(), &facts, &err)) << err;
  EXPECT_EQ(facts.spec_sizes[7], 2u);
  EXPECT_EQ(facts.spec_sizes[9], 1u);
}

TEST(SpirvCheck, RejectsAnAlignmentThatIsNotAPowerOfTwo) {
  std::vector<uint32_t> w = {0x07230203, 0x00010000, 0, 5, 0, op(4, 71), 1, 44, 3};
  std::vector<uint8_t> b = words_to_bytes(w);
  SpirvFacts facts;
  std::string err;
  EXPECT_FALSE(check_spirv(b.data(), b.size(), &facts, &err));
  EXPECT_NE(err.find("power of two"), std::string::npos) << err;
}

TEST(SpirvCheck, RejectsAnInstructionPastTheEnd) {
  std::vector<uint32_t> w = {0x07230203, 0x00010000, 0, 5, 0, op(9, 71), 1, 44};
  std::vector<uint8_t> b = words_to_bytes(w);
  SpirvFacts facts;
  std::string err;
  EXPECT_FALSE(check_spirv(b.data(), b.size(), &facts, &err));
  EXPECT_FALSE(err.empty());
}

// --- translation_cache.cpp ----------------------------------------------------------------------------

uint64_t same_hash(std::string_view) { return 42; }

TEST(TranslationCache, KeysWithTheSameHashAreComparedInFull) {
  TranslationCache cache(1 << 20, &same_hash);
  const std::string a = TranslationCache::key("spirv-a", ""), b = TranslationCache::key("spirv-b", "");
  cache.put(a, "bitcode-a");
  std::string out;
  EXPECT_FALSE(cache.get(b, &out)) << "another module with the same hash must not get a's translation";
  EXPECT_TRUE(cache.get(a, &out));
  EXPECT_EQ(out, "bitcode-a");
  cache.put(b, "bitcode-b");
  EXPECT_EQ(cache.entries(), 2u);
  ASSERT_TRUE(cache.get(b, &out));
  EXPECT_EQ(out, "bitcode-b");
  ASSERT_TRUE(cache.get(a, &out));
  EXPECT_EQ(out, "bitcode-a");
}

TEST(TranslationCache, ConstantsArePartOfTheKey) {
  TranslationCache cache(1 << 20, &same_hash);
  cache.put(TranslationCache::key("spirv", std::string("\x07\0\0\0\x01", 5)), "one");
  std::string out;
  EXPECT_FALSE(cache.get(TranslationCache::key("spirv", std::string("\x07\0\0\0\x02", 5)), &out));
  EXPECT_TRUE(cache.get(TranslationCache::key("spirv", std::string("\x07\0\0\0\x01", 5)), &out));
  EXPECT_FALSE(cache.get(TranslationCache::key("spirv", ""), &out));
  // The SPIR-V size is in the key: moving bytes from the module to the constants is another key.
  EXPECT_NE(TranslationCache::key("ab", "c"), TranslationCache::key("a", "bc"));
}

TEST(TranslationCache, EvictsTheLeastRecentlyUsedBeyondItsBudget) {
  TranslationCache cache(4000);
  const std::string k1 = TranslationCache::key("1", ""), k2 = TranslationCache::key("2", ""),
                    k3 = TranslationCache::key("3", "");
  cache.put(k1, std::string(900, 'a'));
  cache.put(k2, std::string(900, 'b'));
  std::string out;
  ASSERT_TRUE(cache.get(k1, &out));  // k2 is now the least recently used
  cache.put(k3, std::string(900, 'c'));
  cache.put(TranslationCache::key("4", ""), std::string(900, 'd'));
  cache.put(TranslationCache::key("5", ""), std::string(900, 'e'));
  EXPECT_FALSE(cache.get(k2, &out));
  EXPECT_TRUE(cache.get(k1, &out));
  EXPECT_EQ(cache.entries(), 4u);
}


TEST(PoclBuild, OnlyOpenClOptionsReachPocl) {
  EXPECT_EQ(opencl_options("-ze-opt-disable -cl-fast-relaxed-math  -g -cl-mad-enable"),
            "-cl-fast-relaxed-math -cl-mad-enable");
  EXPECT_EQ(opencl_options(nullptr), "");
}

}  // namespace
}  // namespace zexcpu
