# cmake -DIN=<file.spv> -DOUT=<file.cpp> -DNAME=<function> -P embed_spirv.cmake
# Writes a C++ file holding the device library's words, so that zex carries it with no file at run
# time. An absent IN (zex built without device/) gives an empty library; zex::Module then says so.
set(words "")
set(count 0)
if(EXISTS "${IN}")
  file(READ "${IN}" hex HEX)
  string(LENGTH "${hex}" n)
  math(EXPR rem "${n} % 8")
  if(NOT rem EQUAL 0)
    message(FATAL_ERROR "${IN}: size is not a multiple of 4 bytes")
  endif()
  # Little-endian bytes b0 b1 b2 b3 -> word 0xb3b2b1b0.
  string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
  math(EXPR count "${n} / 8")
endif()
file(WRITE "${OUT}.tmp"
"// Generated from ${IN} by src/spirv/embed_spirv.cmake. Do not edit.\n"
"#include <zex/module.hpp>\n"
"namespace zex {\nnamespace detail {\nnamespace {\n"
"const uint32_t kWords[] = {${words} 0u};\n"
"}  // namespace\n"
"const std::vector<uint32_t>& ${NAME}() {\n"
"  static const std::vector<uint32_t> words(kWords, kWords + ${count});\n"
"  return words;\n}\n"
"}  // namespace detail\n}  // namespace zex\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
