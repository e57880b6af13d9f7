# docs/architecture.md §1's map of resolver/ lists every .h and .cc file of resolver/, each in
# the block of its own folder, and no file that is not there.
#
#   cmake -DHG_SOURCE=<repo> -P architecture_map_test.cmake
cmake_minimum_required(VERSION 3.25)

file(READ ${HG_SOURCE}/docs/architecture.md doc)
string(FIND "${doc}" "The files of `resolver/`, one job each:" from)
string(FIND "${doc}" "## 2. " to)
if(from EQUAL -1 OR to EQUAL -1 OR to LESS from)
  message(FATAL_ERROR "docs/architecture.md: the map of resolver/ (§1) was not found")
endif()
math(EXPR len "${to} - ${from}")
string(SUBSTRING "${doc}" ${from} ${len} block)
string(REPLACE ";" "," block "${block}")
string(REPLACE "\n" ";" lines "${block}")

set(listed "")
set(room "")
foreach(line IN LISTS lines)
  if(line MATCHES "^resolver/([a-z_]*)/?[ \t]")
    set(room "${CMAKE_MATCH_1}")
    if(room STREQUAL "")
      set(prefix "resolver/")
    else()
      set(prefix "resolver/${room}/")
    endif()
  elseif(line MATCHES "^  ([a-z_0-9]+)\\.(\\{h,cc\\}|h|cc)[ \t]")
    set(name ${CMAKE_MATCH_1})
    if(CMAKE_MATCH_2 STREQUAL "{h,cc}")
      list(APPEND listed "${prefix}${name}.h" "${prefix}${name}.cc")
    else()
      list(APPEND listed "${prefix}${name}.${CMAKE_MATCH_2}")
    endif()
  endif()
endforeach()

file(GLOB_RECURSE tree RELATIVE ${HG_SOURCE} ${HG_SOURCE}/resolver/*.h ${HG_SOURCE}/resolver/*.cc)
set(missing ${tree})
list(REMOVE_ITEM missing ${listed})
set(stale ${listed})
list(REMOVE_ITEM stale ${tree})
list(LENGTH tree n)
if(missing OR stale)
  message(FATAL_ERROR "docs/architecture.md §1 and resolver/ differ:\n"
                      "  in resolver/ but not in the map: ${missing}\n"
                      "  in the map but not in resolver/: ${stale}")
endif()
message(STATUS "docs/architecture.md §1 lists the ${n} files of resolver/, each in its folder")
