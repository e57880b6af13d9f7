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
#    log.h) and, from query/ and ops/, the settings (config.h and
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
# 4. The rooms of tools/rehearse/ (hourglass-rehearse), each its own library:
#
#      common  <-  trace  <-  replay, plan  <-  project  <-  report
#
#    A room includes its own headers and those of rooms of a lower rank, never a sibling's of
#    the same rank; main.cc at the top includes any room. No file of tools/rehearse/ includes
#    resolver/ (Endpoint, Checked and the resolv.conf reader are in base/), so the trace
#    readers, replay and project link without the daemon. The one exception is plan's
#    DnsClient (plan/dns_client.h), which asks servers through the daemon's c-ares Upstream.
#
# 5. Third-party and system headers that belong to one place:
#    - <hiredis/...> only in resolver/fleet/ (the shared cache on Redis);
#    - <openssl/...> only where the cryptography lives: DNS over TLS
#      (resolver/upstream/dot.cc), the fleet's MAC (resolver/fleet/fleet_auth.cc) and
#      DNSSEC's digests and signatures (dnssec/crypto.cc, denial.cc, trust_anchor.cc);
#    - socket headers (<sys/socket.h>, <netinet/...>, <arpa/inet.h>) only in resolver/net/,
#      base/endpoint.{h,cc} and the files listed in hg_socket_users below, each of which
#      handles addresses or sockets itself. A new file that needs them is added there on
#      purpose, in review, not by accident.
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
  set(kit checked.h text.h log.h)
  set(settings config.h config_keys.h config_cli.h config_writers.h routing_settings.h)
  set(settings_readers query ops)
  # The settings include rooms below the lowest reader only.
  set(settings_max_room_rank 1)
  set(no_dns_rooms net)
  # The rooms of tools/rehearse/ (tools/rehearse/ROOM/...).
  set(rehearse_rank_common 0)
  set(rehearse_rank_trace 1)
  set(rehearse_rank_replay 2)
  set(rehearse_rank_plan 2)
  set(rehearse_rank_project 3)
  set(rehearse_rank_report 4)
  set(rehearse_resolver_users tools/rehearse/plan/dns_client.h)
  # Rule 5: where OpenSSL and the socket headers may be included.
  set(openssl_users resolver/upstream/dot.cc resolver/fleet/fleet_auth.cc dnssec/crypto.cc
      dnssec/denial.cc dnssec/trust_anchor.cc)
  set(hg_socket_users
      base/endpoint.h base/endpoint.cc
      resolver/config.cc resolver/routing_settings.cc
      resolver/ops/control.cc resolver/ops/metrics.cc resolver/ops/shadow_control.cc
      resolver/ops/systemd.cc
      resolver/query/fair_share.h resolver/query/fair_share.cc resolver/query/hosts_table.cc
      resolver/query/links.cc resolver/query/local_names.cc resolver/query/query_engine.cc
      resolver/tap/dnstap_writer.h resolver/tap/dnstap_writer.cc
      resolver/upstream/upstream.h resolver/upstream/upstream.cc
      resolver/upstream/upstream_sockets.cc resolver/upstream/cares_compat.cc
      resolver/upstream/dot.cc
      tools/bench/bench_udp.h tools/ctl/client.cc tools/ctl/main.cc
      tools/rehearse/plan/watch.cc)
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
      # This file's room of tools/rehearse/, or "" for its top (main.cc).
      set(rroom "")
      if(rel MATCHES "^tools/rehearse/([a-z_]+)/")
        set(rroom ${CMAKE_MATCH_1})
        if(NOT DEFINED rehearse_rank_${rroom})
          string(APPEND problems "\n  ${rel}: tools/rehearse/${rroom}/ is not a room of"
                 " hourglass-rehearse (add it to cmake/HgLayers.cmake)")
          continue()
        endif()
      endif()
      file(STRINGS ${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
      foreach(line ${includes})
        # Rule 5: hiredis, OpenSSL and the socket headers, each in its own place.
        if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<hiredis/")
          if(NOT rel MATCHES "^resolver/fleet/")
            string(APPEND problems "\n  ${rel}: ${line}  (only resolver/fleet/ includes"
                   " hiredis)")
          endif()
          continue()
        endif()
        if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<openssl/")
          if(NOT rel IN_LIST openssl_users)
            string(APPEND problems "\n  ${rel}: ${line}  (only ${openssl_users} include"
                   " OpenSSL)")
          endif()
          continue()
        endif()
        if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<(sys/socket\\.h|netinet/[a-z0-9_/]+\\.h|arpa/inet\\.h)>")
          if(NOT rel MATCHES "^resolver/net/" AND NOT rel IN_LIST hg_socket_users)
            string(APPEND problems "\n  ${rel}: ${line}  (socket headers only in resolver/net/"
                   " and the files listed in cmake/HgLayers.cmake hg_socket_users)")
          endif()
          continue()
        endif()
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
        # Rule 4: hourglass-rehearse's rooms, and none of resolver/.
        if(rel MATCHES "^tools/rehearse/")
          if(target STREQUAL "resolver" AND NOT rel IN_LIST rehearse_resolver_users)
            string(APPEND problems "\n  ${rel}: ${line}  (tools/rehearse/ must not include"
                   " resolver/: what it shares with the daemon is in base/)")
          elseif(target STREQUAL "tools" AND target_rest MATCHES "^rehearse/([a-z_]+)/"
                 AND NOT rroom STREQUAL "")
            set(to ${CMAKE_MATCH_1})
            if(NOT DEFINED rehearse_rank_${to})
              string(APPEND problems "\n  ${rel}: ${line}  (tools/rehearse/${to}/ is not a"
                     " room of hourglass-rehearse)")
            elseif(NOT to STREQUAL rroom AND NOT rehearse_rank_${to} LESS rehearse_rank_${rroom})
              string(APPEND problems "\n  ${rel}: ${line}  (tools/rehearse/${rroom}/ must not"
                     " include tools/rehearse/${to}/: common <- trace <- replay, plan <- project"
                     " <- report)")
            endif()
          endif()
          continue()
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
                 " top of resolver/ but the kit (checked.h, text.h, log.h) and, from"
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
