# hg_check_layers(): fails the configure step when a source file includes a header from a
# folder above its own in the dependency order
#
#   base  <-  wire, dnstap  <-  cache  <-  resolver  <-  tools
#
# (a folder may include its own headers and those of folders to its left). Tests may include
# anything. The check reads every #include "folder/..." line, so a new upward arrow fails the
# build on the machine that adds it, not in a later review.
function(hg_check_layers)
  set(order base wire dnstap cache resolver tools)
  set(rank_base 0)
  set(rank_wire 1)
  set(rank_dnstap 1)
  set(rank_cache 2)
  set(rank_resolver 3)
  set(rank_tools 4)
  set(problems "")
  foreach(folder ${order})
    file(GLOB_RECURSE files ${PROJECT_SOURCE_DIR}/${folder}/*.h ${PROJECT_SOURCE_DIR}/${folder}/*.cc)
    foreach(f ${files})
      file(STRINGS ${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
      foreach(line ${includes})
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/.*" "\\1" target "${line}")
        if(DEFINED rank_${target} AND rank_${target} GREATER rank_${folder})
          file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${f})
          string(APPEND problems "\n  ${rel}: ${line}  (${folder}/ must not include ${target}/)")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "dependency arrows point up (base <- wire <- cache <- resolver <- tools):${problems}")
  endif()
endfunction()
