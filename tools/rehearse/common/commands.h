// The subcommands of hourglass-rehearse. Each takes the arguments after its own name and
// returns the process exit status (0 success, 1 the command's own "no" such as watch's "not
// all flipped", 2 a usage, input or start-up error).
#pragma once

namespace hg::rehearse {

int run_replay(int argc, char** argv);   // replay.cc: traces through the cache, before/after
int run_synth(int argc, char** argv);    // synth.cc: generated Poisson/Zipf traces
int run_plan(int argc, char** argv);     // plan.cc: the linger report for a cut-over
int run_watch(int argc, char** argv);    // watch.cc: poll resolvers until they flip
int run_inspect(int argc, char** argv);  // inspect.cc: what a trace holds, read speed
int run_project(int argc, char** argv);  // project.cc: authoritative load at other TTLs
int run_report(int argc, char** argv);   // ticket.cc: one HTML + JSON for the change ticket

}  // namespace hg::rehearse
