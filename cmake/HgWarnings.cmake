# hg_set_warnings(target): the project's warning set, applied per target (never globally),
# so that third-party headers and generated code are not held to it.
function(hg_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Werror -Wshadow -Wconversion -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
  # Not used with g++ 12: -Wnull-dereference and -Wrestrict report false positives deep inside
  # inlined std::shared_ptr and std::string operator+ at -O2/-O3 (GCC bug 105329 and kin),
  # which -Werror turns into a failed Release build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-restrict)
  else()
    target_compile_options(${target} PRIVATE -Wnull-dereference)
  endif()
endfunction()
