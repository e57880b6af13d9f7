"""hgbench's parts: process handling (procs), statistics (stats), the config and zone
writers (confs), a small DNS probe (probe), dnsperf's output (dnsperf) and one module per
group of subcommands. Python 3 standard library only."""
