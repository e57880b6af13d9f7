# hg_set_warnings(target): the project's warning set, applied per target (never globally),
# so that third-party headers and generated code are not held to it.
function(hg_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Werror -Wshadow -Wconversion -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough)
endfunction()
