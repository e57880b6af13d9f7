# The layering check (cmake/HgLayers.cmake) fails on each kind of broken rule and passes on a
# tree that keeps them, and on this repository.
#
#   cmake -DHG_SOURCE=<repo> -DWORK=<scratch dir> -P layers_test.cmake
#
# Each case writes a small tree under WORK (a clean one, plus one offending #include), runs
# check_tree.cmake on it in a child cmake and checks the exit status and the message naming
# the file and the rule.
cmake_minimum_required(VERSION 3.25)

set(failures 0)

# A tree that keeps every rule: one file per room, each including what it may.
function(write_clean_tree dir)
  file(REMOVE_RECURSE ${dir})
  file(WRITE ${dir}/base/bytes.h "#pragma once\n")
  file(WRITE ${dir}/wire/name.h "#include \"base/bytes.h\"\n")
  file(WRITE ${dir}/cache/cache.h "#include \"wire/name.h\"\n")
  file(WRITE ${dir}/resolver/checked.h "#pragma once\n")
  file(WRITE ${dir}/resolver/net/event_loop.h "#include \"resolver/checked.h\"\n#include <sys/epoll.h>\n")
  file(WRITE ${dir}/resolver/upstream/upstream.h "#include \"resolver/net/event_loop.h\"\n#include \"wire/name.h\"\n")
  file(WRITE ${dir}/resolver/upstream/upstream.cc "#include \"resolver/upstream/upstream.h\"\n#include <ares.h>\n")
  file(WRITE ${dir}/resolver/fleet/redis_config.h "#pragma once\n")
  file(WRITE ${dir}/resolver/fleet/fleet_cache.h "#include \"resolver/fleet/redis_config.h\"\n#include \"resolver/net/event_loop.h\"\n")
  file(WRITE ${dir}/resolver/tap/dnstap_writer.h "#include \"resolver/checked.h\"\n")
  file(WRITE ${dir}/resolver/query/query_engine.h "#include \"resolver/upstream/upstream.h\"\n#include \"resolver/fleet/fleet_cache.h\"\n#include \"resolver/tap/dnstap_writer.h\"\n#include \"cache/cache.h\"\n#include \"resolver/config.h\"\n#include \"resolver/routing_settings.h\"\n")
  file(WRITE ${dir}/resolver/ops/control.h "#include \"resolver/query/query_engine.h\"\n#include \"resolver/config.h\"\n")
  file(WRITE ${dir}/resolver/routing_settings.h "#include \"resolver/checked.h\"\n#include \"resolver/net/event_loop.h\"\n#include \"resolver/upstream/upstream.h\"\n")
  file(WRITE ${dir}/resolver/config.h "#include \"resolver/routing_settings.h\"\n#include \"resolver/fleet/redis_config.h\"\n#include \"resolver/tap/dnstap_writer.h\"\n")
  file(WRITE ${dir}/resolver/config.cc "#include \"resolver/config.h\"\n#include \"resolver/fleet/fleet_cache.h\"\n")
  file(WRITE ${dir}/resolver/server.cc "#include \"resolver/ops/control.h\"\n#include \"resolver/config.h\"\n")
  file(WRITE ${dir}/tools/ctl.cc "#include \"resolver/ops/control.h\"\n")
  # Third-party and socket headers, each in its place.
  file(WRITE ${dir}/resolver/net/bound_socket.cc "#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\n")
  file(WRITE ${dir}/resolver/fleet/redis_conn.cc "#include <hiredis/hiredis.h>\n")
  file(WRITE ${dir}/resolver/upstream/dot.cc "#include <openssl/ssl.h>\n#include <sys/socket.h>\n")
  file(WRITE ${dir}/base/endpoint.h "#include <netinet/in.h>\n")
  # hourglass-rehearse's rooms: common <- trace <- replay, plan <- project <- report.
  file(WRITE ${dir}/tools/rehearse/common/cli_util.h "#include \"base/endpoint.h\"\n")
  file(WRITE ${dir}/tools/rehearse/trace/trace.h "#include \"tools/rehearse/common/cli_util.h\"\n#include \"wire/name.h\"\n")
  file(WRITE ${dir}/tools/rehearse/replay/engine.h "#include \"tools/rehearse/trace/trace.h\"\n#include \"cache/cache.h\"\n")
  file(WRITE ${dir}/tools/rehearse/plan/dns_client.h "#include \"tools/rehearse/common/cli_util.h\"\n#include \"resolver/upstream/upstream.h\"\n")
  file(WRITE ${dir}/tools/rehearse/plan/watch.cc "#include \"tools/rehearse/plan/dns_client.h\"\n#include <arpa/inet.h>\n")
  file(WRITE ${dir}/tools/rehearse/project/project.h "#include \"tools/rehearse/replay/engine.h\"\n")
  file(WRITE ${dir}/tools/rehearse/report/ticket.cc "#include \"tools/rehearse/project/project.h\"\n#include \"tools/rehearse/plan/dns_client.h\"\n")
  file(WRITE ${dir}/tools/rehearse/main.cc "#include \"tools/rehearse/report/ticket.h\"\n#include \"tools/rehearse/common/cli_util.h\"\n")
endfunction()

# Runs the check on `dir`; `expect` is PASS or the text the failure message must contain.
function(expect_check name dir expect)
  execute_process(COMMAND ${CMAKE_COMMAND} -DHG_SOURCE=${HG_SOURCE} -DROOT=${dir}
                          -P ${HG_SOURCE}/tests/layers/check_tree.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "[ \t\r\n]+" " " err "${err}")
  if(expect STREQUAL "PASS")
    if(NOT rc EQUAL 0)
      message(SEND_ERROR "${name}: the check failed on a tree that keeps the rules:\n${err}")
      math(EXPR failures "${failures} + 1")
    else()
      message(STATUS "ok   ${name}: passes")
    endif()
  else()
    string(FIND "${err}" "${expect}" at)
    if(rc EQUAL 0)
      message(SEND_ERROR "${name}: the check passed, expected it to fail with: ${expect}")
      math(EXPR failures "${failures} + 1")
    elseif(at EQUAL -1)
      message(SEND_ERROR "${name}: the check failed without \"${expect}\":\n${err}")
      math(EXPR failures "${failures} + 1")
    else()
      message(STATUS "ok   ${name}: fails with \"${expect}\"")
    endif()
  endif()
  set(failures ${failures} PARENT_SCOPE)
endfunction()

# One case: the clean tree plus `file` holding `text`.
function(expect_fail name file text expect)
  set(dir ${WORK}/${name})
  write_clean_tree(${dir})
  file(APPEND ${dir}/${file} "${text}\n")
  expect_check(${name} ${dir} "${expect}")
  set(failures ${failures} PARENT_SCOPE)
endfunction()

write_clean_tree(${WORK}/clean)
expect_check(clean ${WORK}/clean PASS)
expect_check(this_repository ${HG_SOURCE} PASS)

# Folders.
expect_fail(wire_includes_cache wire/name.h "#include \"cache/cache.h\""
            "wire/name.h: #include \"cache/cache.h\" (wire/ must not include cache/)")
expect_fail(resolver_includes_tools resolver/config.h "#include \"tools/ctl.h\""
            "(resolver/ must not include tools/)")
# net/ knows no DNS.
expect_fail(net_includes_wire resolver/net/event_loop.h "#include \"wire/name.h\""
            "resolver/net/event_loop.h: #include \"wire/name.h\" (resolver/net/ knows no DNS")
expect_fail(net_includes_cache resolver/net/event_loop.h "#include \"cache/cache.h\""
            "(resolver/net/ knows no DNS: it must not include cache/)")
expect_fail(net_includes_upstream resolver/net/event_loop.h
            "#include \"resolver/upstream/upstream.h\""
            "(resolver/net/ must not include resolver/upstream/")
expect_fail(net_includes_config resolver/net/event_loop.h "#include \"resolver/config.h\""
            "resolver/net/event_loop.h: #include \"resolver/config.h\" (resolver/net/ must not include the top")
# The order of the rooms, and no sideways arrows between rooms of one rank.
expect_fail(upstream_includes_query resolver/upstream/upstream.h
            "#include \"resolver/query/query_engine.h\""
            "(resolver/upstream/ must not include resolver/query/")
expect_fail(fleet_includes_upstream resolver/fleet/fleet_cache.h
            "#include \"resolver/upstream/upstream.h\""
            "(resolver/fleet/ must not include resolver/upstream/")
expect_fail(query_includes_ops resolver/query/query_engine.h "#include \"resolver/ops/control.h\""
            "(resolver/query/ must not include resolver/ops/")
expect_fail(ops_includes_server resolver/ops/control.h "#include \"resolver/server.h\""
            "(resolver/ops/ must not include the top of resolver/")
expect_fail(upstream_reads_config resolver/upstream/upstream.h "#include \"resolver/config.h\""
            "(resolver/upstream/ must not include the top of resolver/")
# The settings (config.h, routing_settings.h) sit below query/, their lowest reader.
expect_fail(config_includes_query resolver/config.h "#include \"resolver/query/query_engine.h\""
            "resolver/config.h: #include \"resolver/query/query_engine.h\" (the settings must not include resolver/query/")
expect_fail(settings_cc_include_ops resolver/config.cc "#include \"resolver/ops/control.h\""
            "(the settings must not include resolver/ops/")
# config.cc's parts (the key table, TOML, the command line) are the settings too.
expect_fail(config_part_includes_query resolver/config_keys.cc
            "#include \"resolver/query/query_engine.h\""
            "resolver/config_keys.cc: #include \"resolver/query/query_engine.h\" (the settings must not include resolver/query/")
expect_fail(config_part_includes_server resolver/config_toml.cc "#include \"resolver/server.h\""
            "resolver/config_toml.cc: #include \"resolver/server.h\" (the settings must not include the top")
expect_fail(routing_settings_includes_query resolver/routing_settings.h
            "#include \"resolver/query/query_engine.h\""
            "resolver/routing_settings.h: #include \"resolver/query/query_engine.h\" (the settings must not include")
expect_fail(settings_include_server resolver/config.h "#include \"resolver/server.h\""
            "(the settings must not include the top of resolver/ but the kit and each other)")
expect_fail(fleet_reads_config resolver/fleet/fleet_cache.h "#include \"resolver/config.h\""
            "(resolver/fleet/ must not include the top of resolver/")
expect_fail(unknown_room resolver/misc/helper.h "#include \"resolver/net/event_loop.h\""
            "resolver/misc/ is not a room of the order")
# c-ares.
expect_fail(ares_in_upstream_header resolver/upstream/upstream.h "#include <ares.h>"
            "resolver/upstream/upstream.h: #include <ares.h> (only resolver/upstream/*.cc include")
expect_fail(ares_in_query resolver/query/query_engine.cc "#include <ares.h>"
            "resolver/query/query_engine.cc: #include <ares.h>")
expect_fail(ares_dns_in_server resolver/server.cc "#  include <ares_dns.h>"
            "resolver/server.cc: # include <ares_dns.h> (only resolver/upstream/*.cc")
expect_fail(ares_in_tools tools/ctl.cc "#include <ares.h>" "tools/ctl.cc: #include <ares.h>")
# hourglass-rehearse: no resolver/ (but plan's DnsClient), and its rooms in order.
expect_fail(rehearse_replay_includes_resolver tools/rehearse/replay/engine.h
            "#include \"resolver/net/endpoint.h\""
            "tools/rehearse/replay/engine.h: #include \"resolver/net/endpoint.h\" (tools/rehearse/ must not include resolver/")
expect_fail(rehearse_top_includes_resolver tools/rehearse/main.cc "#include \"resolver/config.h\""
            "tools/rehearse/main.cc: #include \"resolver/config.h\" (tools/rehearse/ must not include resolver/")
expect_fail(rehearse_plan_watch_includes_resolver tools/rehearse/plan/watch.cc
            "#include \"resolver/upstream/upstream.h\""
            "tools/rehearse/plan/watch.cc: #include \"resolver/upstream/upstream.h\" (tools/rehearse/ must not include resolver/")
expect_fail(rehearse_trace_includes_replay tools/rehearse/trace/trace.h
            "#include \"tools/rehearse/replay/engine.h\""
            "(tools/rehearse/trace/ must not include tools/rehearse/replay/")
expect_fail(rehearse_common_includes_trace tools/rehearse/common/cli_util.h
            "#include \"tools/rehearse/trace/trace.h\""
            "(tools/rehearse/common/ must not include tools/rehearse/trace/")
expect_fail(rehearse_replay_includes_plan tools/rehearse/replay/engine.h
            "#include \"tools/rehearse/plan/dns_client.h\""
            "(tools/rehearse/replay/ must not include tools/rehearse/plan/")
expect_fail(rehearse_project_includes_report tools/rehearse/project/project.h
            "#include \"tools/rehearse/report/ticket.h\""
            "(tools/rehearse/project/ must not include tools/rehearse/report/")
expect_fail(rehearse_unknown_room tools/rehearse/misc/helper.h "#include \"base/bytes.h\""
            "tools/rehearse/misc/ is not a room of hourglass-rehearse")
# Third-party and socket headers.
expect_fail(hiredis_in_query resolver/query/query_engine.h "#include <hiredis/hiredis.h>"
            "resolver/query/query_engine.h: #include <hiredis/hiredis.h> (only resolver/fleet/ includes hiredis)")
expect_fail(openssl_in_cache cache/cache.h "#include <openssl/evp.h>"
            "cache/cache.h: #include <openssl/evp.h> (only")
expect_fail(openssl_in_fleet_cache resolver/fleet/fleet_cache.h "#include <openssl/hmac.h>"
            "resolver/fleet/fleet_cache.h: #include <openssl/hmac.h> (only")
expect_fail(socket_in_query resolver/query/query_engine.h "#include <sys/socket.h>"
            "resolver/query/query_engine.h: #include <sys/socket.h> (socket headers only in resolver/net/")
expect_fail(netinet_in_replay tools/rehearse/replay/engine.h "#include <netinet/in.h>"
            "tools/rehearse/replay/engine.h: #include <netinet/in.h> (socket headers only")
expect_fail(arpa_in_wire wire/name.h "#include <arpa/inet.h>"
            "wire/name.h: #include <arpa/inet.h> (socket headers only")

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} layering case(s) went wrong")
endif()
