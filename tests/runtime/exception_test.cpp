// zex::KernelException's messages (docs/design.md, "Debug levels and messages"), from hand-made infos: no device needed. The
// end-to-end tests in stream_test.cpp check the same texts on real reports.
#include <zex/exception.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

zex::KernelExceptionInfo info(int level) {
  zex::KernelExceptionInfo i;
  i.debug_level = level;
  i.kernel_name = "vadd";
  i.device_name = "dev0";
  i.launch_id = 7;
  if (level >= 1) {
    i.name = "BoundsError";
    i.reason = "Out-of-bounds array access";
  }
  if (level >= 2) {
    i.global_id = std::array<uint64_t, 3>{1000, 0, 0};
    i.group_id = std::array<uint64_t, 3>{3, 0, 0};
    i.local_id = std::array<uint64_t, 3>{232, 0, 0};
    i.frames = {{"vadd", "/src/k.cl", 8}, {"caller", "/src/k.cl", 20}};
  }
  return i;
}

}  // namespace

TEST(KernelExceptionMessage, Level0) {
  zex::KernelException e(info(0));
  EXPECT_STREQ(e.what(),
               "KernelException: An exception was thrown in kernel 'vadd' on dev0\n"
               "Hint: launch with debug_level=1 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=1) to see "
               "the exception's name and reason.");
  EXPECT_EQ(e.name(), "");
  EXPECT_EQ(e.reason(), "");
  EXPECT_FALSE(e.global_id().has_value());
  EXPECT_TRUE(e.frames().empty());
}

TEST(KernelExceptionMessage, Level1) {
  zex::KernelException e(info(1));
  EXPECT_STREQ(e.what(),
               "KernelException: A BoundsError was thrown in kernel 'vadd' on dev0: Out-of-bounds array access\n"
               "Hint: launch with debug_level=2 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=2) to see "
               "the work-item that threw and a stacktrace.");
  EXPECT_EQ(e.name(), "BoundsError");
  EXPECT_EQ(e.reason(), "Out-of-bounds array access");
  EXPECT_EQ(e.kernel_name(), "vadd");
  EXPECT_EQ(e.device_name(), "dev0");
  EXPECT_EQ(e.debug_level(), 1);
  EXPECT_EQ(e.launch_id(), 7u);
}

TEST(KernelExceptionMessage, Level2) {
  zex::KernelException e(info(2));
  EXPECT_STREQ(e.what(),
               "KernelException: A BoundsError was thrown in kernel 'vadd' on dev0: Out-of-bounds array access\n"
               "Thrown by work-item (1000, 0, 0) in work-group (3, 0, 0).\n"
               "Stacktrace:\n"
               " [1] vadd at /src/k.cl:8\n"
               " [2] caller at /src/k.cl:20");
  ASSERT_TRUE(e.local_id().has_value());
  EXPECT_EQ((*e.local_id())[0], 232u);
  ASSERT_EQ(e.frames().size(), 2u);
  EXPECT_EQ(e.frames()[0].function, "vadd");
  EXPECT_EQ(e.frames()[0].line, 8u);
}

TEST(KernelExceptionMessage, VowelNamesTakeAn) {
  auto i = info(1);
  i.name = "ArgumentError";
  i.reason = "";
  zex::KernelException e(i);
  EXPECT_EQ(std::string(e.what()).rfind(
                "KernelException: An ArgumentError was thrown in kernel 'vadd' on dev0\nHint:", 0),
            0u)
      << e.what();
}

TEST(KernelExceptionMessage, IsARuntimeError) {
  try {
    throw zex::KernelException(info(1));
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("BoundsError"), std::string::npos);
  }
}

TEST(KernelExceptionMessage, ValuesCountAndLaunchSiteAtLevel1) {
  auto i = info(1);
  i.values = {1000, 1000};
  i.value_kind = ZEX_VALUES_BOUNDS;
  i.thrower_count = 280;
  i.launch_site = zex::SourceLocation{"/home/me/src/host.cpp", 42};
  zex::KernelException e(i);
  EXPECT_STREQ(e.what(),
               "KernelException: A BoundsError was thrown in kernel 'vadd' (launched at host.cpp:42) on dev0: "
               "Out-of-bounds array access: index 1000, length 1000\n"
               "280 work-items threw; the first to claim the report is shown.\n"
               "Hint: launch with debug_level=2 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=2) to see "
               "the work-item that threw and a stacktrace.");
  EXPECT_EQ(e.values(), (std::vector<uint64_t>{1000, 1000}));
  EXPECT_EQ(e.thrower_count(), 280u);
  ASSERT_TRUE(e.launch_site().has_value());
  EXPECT_EQ(e.launch_site()->file, "/home/me/src/host.cpp") << "the exception keeps the full path";
  EXPECT_EQ(e.launch_site()->line, 42u);
}

// ZEX_VALUES_MEMORY (memory checks, issue 27): the values continue the reason's sentence.
TEST(KernelExceptionMessage, MemoryValuesContinueTheReason) {
  auto i = info(1);
  i.name = "OutOfBoundsAccess";
  i.reason = "read of argument 'a'";
  i.values = {4096, 4096};
  i.value_kind = ZEX_VALUES_MEMORY;
  zex::KernelException e(i);
  EXPECT_NE(std::string(e.what()).find("read of argument 'a' at byte offset 4096 of an allocation of 4096 bytes\n"),
            std::string::npos)
      << e.what();
  i.reason.clear();  // no reason: labelled after a colon, as other values
  EXPECT_NE(std::string(zex::KernelException(i).what()).find(": at byte offset 4096 of an allocation of 4096 bytes"),
            std::string::npos);
  i.values = {7};  // one value: plain
  EXPECT_NE(std::string(zex::KernelException(i).what()).find(": value 7"), std::string::npos);
}

TEST(KernelExceptionMessage, PlainValuesOneThrowerAndNoSite) {
  auto i = info(2);
  i.values = {7, 3};
  zex::KernelException two(i);
  EXPECT_EQ(std::string(two.what()).rfind(
                "KernelException: A BoundsError was thrown in kernel 'vadd' on dev0: Out-of-bounds array access: "
                "values 7, 3\nThrown by work-item",
                0),
            0u)
      << two.what();
  i.values = {5};
  i.value_kind = ZEX_VALUES_BOUNDS;  // a bounds kind with one value is labelled plainly
  zex::KernelException one(i);
  EXPECT_NE(std::string(one.what()).find("access: value 5\n"), std::string::npos) << one.what();
  EXPECT_EQ(one.thrower_count(), 1u);
  EXPECT_FALSE(one.launch_site().has_value());
}

TEST(KernelExceptionMessage, Level0ShowsNoValuesOrCountButTheSite) {
  auto i = info(0);
  i.values = {1, 2};  // never set at level 0 by the decoder; the message ignores them anyway
  i.thrower_count = 9;
  i.launch_site = zex::SourceLocation{"host.cpp", 7};
  zex::KernelException e(i);
  EXPECT_STREQ(e.what(),
               "KernelException: An exception was thrown in kernel 'vadd' (launched at host.cpp:7) on dev0\n"
               "Hint: launch with debug_level=1 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=1) to see "
               "the exception's name and reason.");
}

// The hints speak the caller's language (zex::format_kernel_exception): the way to pick a debug level
// in C++, C, Python and Julia. Everything else in the message is the same.
TEST(KernelExceptionMessage, HintsSpeakTheCallersLanguage) {
  const zex::KernelExceptionInfo i0 = info(0), i1 = info(1);
  EXPECT_EQ(zex::format_kernel_exception(i1), zex::KernelException(i1).what());
  EXPECT_EQ(zex::format_kernel_exception(i1, zex::Language::Cpp), zex::KernelException(i1).what());
  struct Case {
    zex::Language lang;
    const char* knob;
  } cases[] = {
      {zex::Language::Cpp, "LaunchConfig::debug_level"},
      {zex::Language::C, "zex_launch_config_t.debug_level"},
      {zex::Language::Python, "the debug_level= keyword of stream.launch(...)"},
      {zex::Language::Julia, "the debug_level= keyword of the launch"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(zex::format_kernel_exception(i0, c.lang),
              "KernelException: An exception was thrown in kernel 'vadd' on dev0\n"
              "Hint: launch with debug_level=1 (" + std::string(c.knob) +
                  " or ZEX_DEBUG_LEVEL=1) to see the exception's name and reason.");
    EXPECT_EQ(zex::format_kernel_exception(i1, c.lang),
              "KernelException: A BoundsError was thrown in kernel 'vadd' on dev0: Out-of-bounds array access\n"
              "Hint: launch with debug_level=2 (" + std::string(c.knob) +
                  " or ZEX_DEBUG_LEVEL=2) to see the work-item that threw and a stacktrace.");
  }
  // Level 2 has no hint: the same text in every language.
  EXPECT_EQ(zex::format_kernel_exception(info(2), zex::Language::Python),
            zex::format_kernel_exception(info(2), zex::Language::Cpp));
}

// Frames of a numbered throw site (ABI version 3) come at level 1; a frame without a line says so, and a
// chain longer than the frames kept says how long it was.
TEST(KernelExceptionMessage, SiteFramesAtLevel1WithUnknownLinesAndDepth) {
  auto i = info(1);
  i.frames = {{"get", "/src/k.cl", 12}, {"helper", "", 0}};
  i.frame_depth = 30;
  zex::KernelException e(i);
  EXPECT_STREQ(e.what(),
               "KernelException: A BoundsError was thrown in kernel 'vadd' on dev0: Out-of-bounds array access\n"
               "Stacktrace:\n"
               " [1] get at /src/k.cl:12\n"
               " [2] helper (line unknown: the module has no debug information)\n"
               "(30 frames; the innermost 2 are shown)\n"
               "Hint: launch with debug_level=2 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=2) to see "
               "the work-item that threw.");
  EXPECT_EQ(e.frame_depth(), 30u);
  ASSERT_EQ(e.frames().size(), 2u);
  // A depth that is not more than the frames shown adds nothing.
  i.frame_depth = 2;
  EXPECT_EQ(std::string(zex::KernelException(i).what()).find("frames;"), std::string::npos);
}
