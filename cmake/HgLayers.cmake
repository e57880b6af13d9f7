# hg_check_layers(): fails the configure step when a source file breaks the layering rules of
# docs/architecture.md §1. Three checks, each over every #include line of the product folders
# (tests may include anything):
#
# 1. Folders. A folder includes its own headers and those of folders to its left:
#
#      base  <-  wire, dnstap  <-  cache, dnssec  <-  resolver  <-  tools
#
# 2. The rooms of resolver/. A room includes its own headers and those of rooms of a lower
#    rank, never a sibling's of the same rank:
#
#      net  <-  upstream, tap, fleet  <-  query  <-  ops  <-  the top of resolver/
#
#    net/ (event loop, sockets) knows no DNS: it includes nothing of wire/, cache/ or dnstap/.
#    Of the files at the top of resolver/ a room may include only the kit (checked.h, text.h,
#    log.h, cli_doc.h) and, from query/ and ops/, the settings (config.h and
#    routing_settings.h); never server.h. The rest of the top (server, main) may include any
#    room.
#
#    The settings sit between the rooms that read them and those below: config.{h,cc}, the
#    config_*.{h,cc} it is split into, and routing_settings.{h,cc} include the kit, each other and the rooms below query/ (net,
#    upstream, tap, fleet), never query/, ops/ or server.h. So no room reaches itself
#    through the settings record.
#
# 3. c-ares. Only the upstream's .cc files (resolver/upstream/*.cc) include <ares.h> (or any
#    <ares_*.h>); no header does, so nothing else compiles against c-ares.
#
# The check reads every #include line, so a new upward arrow fails the build on the machine
# that adds it, not in a later review. tests/layers/ shows each rule failing on a small tree.

# The checks over the tree at `root` (a source tree's top: base/, wire/, ... resolver/).
function(hg_check_layers_in root)
  set(order base wire dnstap dnssec cache resolver tools)
  set(rank_base 0)
  set(rank_wire 1)
  set(rank_dnstap 1)
  set(rank_cache 2)
  set(rank_dnssec 2)
  set(rank_resolver 3)
  set(rank_tools 4)
  # The rooms of resolver/ (resolver/ROOM/...).
  set(room_rank_net 0)
  set(room_rank_upstream 1)
  set(room_rank_tap 1)
  set(room_rank_fleet 1)
  set(room_rank_query 2)
  set(room_rank_ops 3)
  set(kit checked.h text.h log.h cli_doc.h)
  set(settings config.h config_keys.h config_cli.h config_writers.h routing_settings.h)
  set(settings_readers query ops)
  # The settings include rooms below the lowest reader only.
  set(settings_max_room_rank 1)
  set(no_dns_rooms net)
  set(problems "")
  foreach(folder ${order})
    file(GLOB_RECURSE files ${root}/${folder}/*.h ${root}/${folder}/*.cc)
    foreach(f ${files})
      file(RELATIVE_PATH rel ${root} ${f})
      # This file's room: resolver/ROOM/name, or "" for the top of resolver/ and other folders.
      set(room "")
      if(rel MATCHES "^resolver/([a-z_]+)/")
        set(room ${CMAKE_MATCH_1})
        if(NOT DEFINED room_rank_${room})
          string(APPEND problems "\n  ${rel}: resolver/${room}/ is not a room of the order"
                 " (add it to cmake/HgLayers.cmake and docs/architecture.md §1)")
          continue()
        endif()
      endif()
      file(STRINGS ${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
      foreach(line ${includes})
        # Rule 3: <ares.h> only in resolver/upstream/*.cc.
        if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<ares(_[a-z_]+)?\\.h>")
          if(NOT rel MATCHES "^resolver/upstream/[^/]+\\.cc$")
            string(APPEND problems "\n  ${rel}: ${line}  (only resolver/upstream/*.cc include"
                   " c-ares's headers)")
          endif()
          continue()
        endif()
        if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/([^\"]*)\"")
          continue()
        endif()
        set(target ${CMAKE_MATCH_1})
        set(target_rest ${CMAKE_MATCH_2})
        # Rule 1: folders.
        if(DEFINED rank_${target} AND rank_${target} GREATER rank_${folder})
          string(APPEND problems "\n  ${rel}: ${line}  (${folder}/ must not include ${target}/)")
        endif()
        if(room STREQUAL "")
          # Rule 2b: the settings at the top of resolver/.
          if(rel MATCHES "^resolver/(config|config_[a-z]+|routing_settings)\\.(h|cc)$" AND target STREQUAL "resolver")
            if(target_rest MATCHES "^([a-z_]+)/")
              set(to ${CMAKE_MATCH_1})
              if(NOT DEFINED room_rank_${to} OR room_rank_${to} GREATER settings_max_room_rank)
                string(APPEND problems "\n  ${rel}: ${line}  (the settings must not include"
                       " resolver/${to}/: they include only net/, upstream/, tap/ and fleet/,"
                       " the rooms below their readers query/ and ops/)")
              endif()
            elseif(NOT target_rest IN_LIST kit AND NOT target_rest IN_LIST settings)
              string(APPEND problems "\n  ${rel}: ${line}  (the settings must not include"
                     " the top of resolver/ but the kit and each other)")
            endif()
          endif()
          continue()
        endif()
        # Rule 2: the rooms of resolver/.
        if(room IN_LIST no_dns_rooms AND target MATCHES "^(wire|cache|dnstap)$")
          string(APPEND problems "\n  ${rel}: ${line}  (resolver/${room}/ knows no DNS: it"
                 " must not include ${target}/)")
        endif()
        if(NOT target STREQUAL "resolver")
          continue()
        endif()
        if(target_rest MATCHES "^([a-z_]+)/")
          set(to ${CMAKE_MATCH_1})
          if(to STREQUAL room)
            continue()
          endif()
          if(NOT DEFINED room_rank_${to})
            string(APPEND problems "\n  ${rel}: ${line}  (resolver/${to}/ is not a room of the"
                   " order)")
          elseif(NOT room_rank_${to} LESS room_rank_${room})
            string(APPEND problems "\n  ${rel}: ${line}  (resolver/${room}/ must not include"
                   " resolver/${to}/: net <- upstream, tap, fleet <- query <- ops <- top)")
          endif()
        elseif(target_rest IN_LIST kit)
          # the kit: every room may include it
        elseif(target_rest IN_LIST settings AND room IN_LIST settings_readers)
          # the settings, read from query/ and ops/
        else()
          string(APPEND problems "\n  ${rel}: ${line}  (resolver/${room}/ must not include the"
                 " top of resolver/ but the kit (checked.h, text.h, log.h, cli_doc.h) and, from"
                 " query/ and ops/, the settings (config.h, routing_settings.h))")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "dependency arrows point up (docs/architecture.md §1):${problems}")
  endif()
endfunction()

# The checks over this project's sources.
function(hg_check_layers)
  hg_check_layers_in(${PROJECT_SOURCE_DIR})
endfunction()
