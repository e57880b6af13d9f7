# shellcheck shell=bash
# tools/bench/peers.sh — sourced (not run) by the bench scripts that run dnsdist beside
# hourglassd or read dnsperf's per-query lines: dnsdist's bench config, and the latency
# percentiles of one or more dnsperf -v outputs. Loopback only.

# dnsdist_write_conf FILE PORT UPSTREAM-PORT: a dnsdist config answering on 127.0.0.1:PORT
# from a 200,000-entry packet cache, forwarding to 127.0.0.1:UPSTREAM-PORT; no security
# polling (it would query the outside), the backend up by hand (no health checks: a bench
# may pause dnsdist, and a missed check must not mark the backend down).
dnsdist_write_conf() {
  cat >"$1" <<EOC
setSecurityPollSuffix("")
setLocal("127.0.0.1:$2")
setACL({"127.0.0.0/8"})
newServer({address="127.0.0.1:$3", checkName="bench.test.", checkType="SOA"})
getServer(0):setUp()
pc = newPacketCache(200000, {maxTTL=86400})
getPool(""):setCache(pc)
EOC
}

# latency_stats DNSPERF-OUTPUT...: "p50 p99 p99.9 max count slow" in ms over every per-query
# line (dnsperf -v) of the files, slow = over 0.4 ms; "- - - - 0 0" when there is none.
latency_stats() {
  awk '$1 == ">" { print $NF * 1000 }' "$@" | sort -g |
    awk '{ v[NR] = $1; if ($1 > 0.4) slow++ }
         END { if (NR == 0) { print "- - - - 0 0"; exit }
               i50 = int(NR * 0.50); i99 = int(NR * 0.99); i999 = int(NR * 0.999)
               if (i50 < 1) i50 = 1; if (i99 < 1) i99 = 1; if (i999 < 1) i999 = 1
               printf "%.3f %.3f %.3f %.3f %d %d\n", v[i50], v[i99], v[i999], v[NR], NR, slow }'
}
