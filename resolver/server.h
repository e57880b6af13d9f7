// Server: the process around the query engines (resolver/query/query_engine.h) — N worker threads
// that share one cache and one in-flight table, their sockets, signals, SIGHUP reload,
// graceful shutdown, systemd notifications and the warm-restart save.
//
//   Worker i:  EventLoop ── UdpListener(s), TcpListener(s)   (SO_REUSEPORT when N > 1)
//                       └── Upstream (its own c-ares channel), QueryEngine
//   Shared:    cache::Cache (sharded), Inflight (one mutex), Stats (atomics)
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "resolver/config.h"
#include "resolver/net/file_watch.h"
#include "resolver/ops/systemd.h"
#include "resolver/query/query_engine.h"
#include "resolver/tap/dnstap_writer.h"

namespace hg::resolver {

class Control;
class Metrics;
class PeriodicSaver;

/// The daemon: sockets, threads, signals.
class Server {
 public:
  /// Binds every listen address on every worker and creates the upstream channels.
  /// Errors are one line saying what failed and how to fix it.
  static Checked<std::unique_ptr<Server>> create(Config config);
  ~Server();

  /// Runs until SIGTERM/SIGINT; SIGHUP re-reads the upstream file. Returns the exit code.
  int run();
  /// The bound addresses (ports chosen by the kernel when 0 was asked), one per --listen.
  std::vector<Endpoint> bound() const;
  Shared& shared() noexcept { return *shared_; }

 private:
  struct Worker;
  Server() = default;
  static void start_fleet(Shared& shared, Worker& wk, bool control);
  void on_signal();
  /// Re-reads the upstream file; `why` starts the log lines ("SIGHUP", or the file watch's
  /// "upstream-file changed", which says each complaint only once).
  void reload_upstreams(const char* why = "SIGHUP");
  // Routing (resolver/query/local_names.h): forward zones, hosts files, special-use names.
  /// What reading the hosts files gave: per file its new table, or why it was not read.
  struct HostsReads {
    std::vector<std::string> paths;
    std::vector<Checked<HostsTable::Read>> reads;
  };
  static HostsReads read_hosts_files(const std::vector<std::string>& paths);
  /// The routing of the settings in force (configuration and runtime links) and the hosts
  /// files as `reads` found them (a file not read keeps its previous table; no reads at all,
  /// when a link changed: the tables in force); says each malformed line once.
  Checked<std::shared_ptr<const Routing>> build_routing(const char* why, HostsReads reads);
  /// Gives every worker `r` (on its own loop, or directly before run()): forward upstreams
  /// for its server sets (kept across reloads when the servers are the same).
  void install_routing(Worker& w, const std::shared_ptr<const Routing>& r);
  void apply_routing(const std::shared_ptr<const Routing>& r, bool direct);
  /// SIGHUP (forward zones and hosts files re-read from --config) or a hosts file change.
  /// The files are read and the tables built on hosts_builder_; the new routing is applied
  /// on worker 0 when they are ready.
  void reload_routing(const char* why, bool reread_config);
  void start_hosts_build(const char* why);
  void hosts_builder_main();
  void on_hosts_read(const char* why, HostsReads& reads);
  /// Runtime links (resolver/query/links.h), from the control socket: checks `next` (no server is
  /// our own listen address, at most 64 default upstreams), then puts its forward zones and
  /// default-route servers in force through the same swaps as a reload. The error says why
  /// nothing changed.
  std::optional<std::string> on_links(const LinkTable& next, const std::string& what);
  /// Gives every worker the default upstreams: base_upstreams_ and the default-route links'
  /// servers. `message` is logged when the last worker has switched.
  void push_default_upstreams(std::string message);
  /// Watches the hosts files and the upstream file (when upstreams come from it).
  void watch_files();
  void on_file_changed(const std::string& path);
  /// --dnstap: opens the writer (start-up), and on SIGHUP re-reads the config file's dnstap
  /// keys and reopens when they changed or the file was rotated away.
  std::optional<std::string> open_dnstap(const Config& c);
  void reload_dnstap();
  /// SIGHUP: the shadow-ttl zones become those of the --config file (unless given on the
  /// command line).
  void reload_shadow_ttls();
  void begin_shutdown();
  /// Polls until no client waits (or `give_up`), then cancels upstreams and stops the loops.
  void finish_shutdown(MonoTime give_up);
  // systemd notifications and the watchdog (resolver/ops/systemd.h), and the warm-restart save
  // at stop (resolver/ops/warm_restart.h).
  void start_systemd();
  void status_tick();
  void open_reply_sockets();
  void beat(Worker* w, Millis every);
  void watchdog_tick(Millis every);
  /// Runs `done` on worker 0 once every worker has run the tasks posted to it before this call.
  void after_all_workers(std::function<void()> done);
  std::string status_text() const;
  void save_at_exit();

  std::unique_ptr<Shared> shared_;
  // Declared before workers_: outlives the engines that point at it.
  std::shared_ptr<DnstapWriter> dnstap_;
  std::vector<std::unique_ptr<Worker>> workers_;
  /// --dnssec validate/require: whether the default upstreams deliver DNSSEC records; on
  /// worker 0's loop (declared after workers_: destroyed before the loops).
  std::unique_ptr<DnssecProbe> dnssec_probe_;
  // On worker 0's loop; declared after workers_ so they are destroyed before it.
  std::unique_ptr<Control> control_;
  std::unique_ptr<Metrics> metrics_;
  int signal_fd_ = -1;
  /// One per worker and listen address: the socket the worker sends its UDP answers from
  /// (UdpListener::open_reply_sockets); closed after the workers have stopped.
  std::vector<int> reply_fds_;
  bool stopping_ = false;
  SystemdNotifier notifier_;
  std::size_t loaded_from_file_ = 0;
  /// --cache-save-interval (resolver/ops/warm_restart.h): runs from run() until the loops stop.
  std::unique_ptr<PeriodicSaver> saver_;
  bool watchdog_withheld_ = false;
  // Routing (worker 0's loop only).
  std::vector<ForwardZone> forward_zones_;
  std::vector<std::string> hosts_files_;
  /// The last good read per file, as its table (resolver/query/hosts_table.h).
  std::map<std::string, std::shared_ptr<const HostsTable>> hosts_read_;
  std::set<std::string> hosts_reported_;  // "PATH:LINE: what", said once
  /// Re-reads of the hosts files run here, off the loops that answer queries (a 64 MiB file
  /// takes seconds); the result is posted to worker 0. One at a time: a change meanwhile
  /// starts one more when it ends.
  std::thread hosts_builder_;
  struct HostsJob {
    const char* why;
    std::vector<std::string> paths;
  };
  std::mutex hosts_mu_;
  std::condition_variable hosts_cv_;
  std::optional<HostsJob> hosts_job_;                        // guarded by hosts_mu_
  bool hosts_quit_ = false;                                  // guarded by hosts_mu_
  bool hosts_building_ = false, hosts_build_again_ = false;  // worker 0's loop
  std::shared_ptr<const Routing> routing_;
  /// The configured default upstreams (--upstream, or the upstream file's last good read);
  /// the links' servers are added to them (worker 0's loop only, as links_).
  std::vector<Endpoint> base_upstreams_;
  LinkTable links_;
  std::unique_ptr<FileWatch> watch_;
  bool hosts_reload_pending_ = false, upstream_reload_pending_ = false;
  std::string upstream_complaint_;  // the last thing said about an unusable upstream file
  int next_board_id_ = 1 << 20;     // UpstreamBoard ids of forward upstreams
};

}  // namespace hg::resolver
