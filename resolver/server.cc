#include "resolver/server.h"

#include <fmt/core.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "resolver/fleet/fleet_auth.h"
#include "resolver/log.h"
#include "resolver/ops/control.h"
#include "resolver/ops/metrics.h"
#include "resolver/ops/warm_restart.h"
#include "resolver/upstream/cares_compat.h"

namespace hg::resolver {

namespace {

constexpr Millis kStatusEvery{5000};              // systemd STATUS= updates
constexpr std::size_t kMaxDefaultUpstreams = 64;  // Upstream's limit

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "hourglass";
  return buf;
}

}  // namespace

// --- Server ----------------------------------------------------------------------------

struct Server::Worker {
  explicit Worker(int i) : index(i) {}
  int index;
  EventLoop loop;
  std::unique_ptr<Upstream> upstream;
  /// One Upstream per forward server set of the routing in force (index = set), and those
  /// of earlier routings still finishing queries.
  struct Forward {
    std::vector<Endpoint> servers;
    int board_id = 0;
    std::unique_ptr<Upstream> up;
  };
  std::vector<Forward> forward;
  std::vector<Forward> retired;
  std::unique_ptr<QueryEngine> engine;
  std::unique_ptr<FleetCache> fleet;  // after engine: destroyed before it
  std::vector<std::unique_ptr<UdpListener>> udp;
  std::vector<std::unique_ptr<TcpListener>> tcp;
  std::vector<uint8_t> tcp_out = std::vector<uint8_t>(kMaxTcpAnswer);
  std::thread thread;
  std::atomic<int64_t> heartbeat_ms{0};  ///< loop.now() at its last watchdog heartbeat
};

namespace {
// The DNS-over-TLS settings of an Upstream: the tls:// upstreams of the configuration and
// `extra` (a routing's forward servers); nullptr when there are none.
std::shared_ptr<const DotSettings> dot_settings(const Config& c, std::span<const TlsTarget> extra) {
  if (c.tls_upstreams.empty() && extra.empty()) return nullptr;
  auto d = std::make_shared<DotSettings>();
  d->targets = c.tls_upstreams;
  d->targets.insert(d->targets.end(), extra.begin(), extra.end());
  d->ca_file = c.tls_ca_file;
  for (const std::string& p : c.tls_pins)
    if (auto pin = parse_tls_pin(p)) d->pins.push_back(pin.value());
  d->trust_ad = c.trust_ad;
  return d;
}
}  // namespace

// The fleet (--redis): one FleetCache per worker on its own loop; worker 0's also applies
// the fleet's flush and ttl-cap messages and serves `hourglass-ctl ... --fleet`.
void Server::start_fleet(Shared& shared, Worker& wk, bool control) {
  const Config& c = shared.config;
  FleetCache::Settings fs;
  fs.redis = c.redis;
  fs.lock_ttl = c.upstream_timeout;
  fs.wait_max = c.client_timeout;
  fs.keep_after_expiry = c.stale_max;
  fs.control = control;
  FleetApplier applier;
  if (control) {
    applier.apply = [&shared, loop = &wk.loop](const fleet::FleetMessage& m) {
      apply_fleet_message(shared, m, loop->now());
    };
  }
  wk.fleet = std::make_unique<FleetCache>(wk.loop, fs, shared.fleet_stats, wk.engine->fleet_hooks(),
                                          applier);
  wk.engine->set_fleet(wk.fleet.get());
  if (control) shared.fleet_control = wk.fleet.get();
  wk.fleet->start();
}

Checked<std::unique_ptr<Server>> Server::create(Config config) {
  using R = Checked<std::unique_ptr<Server>>;
  std::unique_ptr<Server> srv(new Server());
  // DNSSEC (docs/dnssec.md): the trust anchors, read before anything depends on the mode.
  std::shared_ptr<dnssec::TrustAnchors> anchors;
  if (config.dnssec != Config::Dnssec::Off) {
    const char* mode = config.dnssec == Config::Dnssec::Require ? "require" : "validate";
    auto read = dnssec::load_trust_anchors(config.trust_anchor_file);
    if (!read) {
      if (config.dnssec_given)
        return R::failure(fmt::format("--dnssec {}: {}", mode, read.error()));
      // The default mode without anchors: validation off, said once.
      log::print(log::Level::Warning,
                 "dnssec: not validating: {} (or give --trust-anchor FILE; --dnssec off "
                 "silences this)",
                 read.error());
      config.dnssec = Config::Dnssec::Off;
    } else {
      anchors = std::make_shared<dnssec::TrustAnchors>(std::move(*read));
      for (const std::string& zone : config.insecure_domains)
        if (auto z = wire::Name::from_text(zone)) anchors->add_insecure(*z);
      log::print(log::Level::Info,
                 "dnssec: validating (--dnssec {}) from {} trust anchor record(s) in {}{}", mode,
                 anchors->count(), config.trust_anchor_file,
                 anchors->insecure().empty()
                     ? std::string()
                     : fmt::format(", {} insecure domain(s)", anchors->insecure().size()));
    }
  }
  srv->shared_ = std::make_unique<Shared>(config);
  Shared& shared = *srv->shared_;
  shared.anchors = anchors;
  {
    const auto now = std::chrono::time_point_cast<Millis>(std::chrono::steady_clock::now());
    for (const auto& cap : config.ttl_caps) {
      auto zone = wire::Name::from_text(cap.zone);
      if (!zone) return R::failure("--ttl-cap " + cap.zone + ": not a valid zone name");
      shared.cache.set_ttl_cap(*zone, static_cast<uint32_t>(cap.cap.count()), now);
    }
    std::vector<std::pair<wire::Name, uint32_t>> shadow;
    for (const auto& st : config.shadow_ttls) {
      auto zone = wire::Name::from_text(st.zone);
      if (!zone) return R::failure("--shadow-ttl " + st.zone + ": not a valid zone name");
      shadow.emplace_back(*zone, static_cast<uint32_t>(st.cap.count()));
    }
    shared.shadow.replace(shadow, now);
    // Warm restart: the saved cache goes in before any socket is bound (after the caps, so
    // they apply to it).
    srv->loaded_from_file_ = load_cache_file(shared, now);
  }
  if (config.redis.enabled()) {
    // Said once at start: what this instance trusts in Redis.
    if (config.redis.fleet_key.empty()) {
      log::print(log::Level::Warning,
                 "fleet: no --fleet-key-file: the Redis at {} is trusted; anyone who can write "
                 "to it controls this instance's answers and caches",
                 config.redis.target);
    } else {
      std::string why;
      if (!fleet::FleetAuth::create(fleet::bytes(config.redis.fleet_key), &why))
        return R::failure("--fleet-key-file " + config.redis.key_file + ": " + why);
      log::print(log::Level::Warning,
                 "fleet: values and messages in Redis authenticated with HMAC-SHA256 (key from "
                 "{}); what does not verify is ignored",
                 config.redis.key_file);
    }
  }
  const unsigned n = std::max(1u, config.threads);
  {
    // Descriptors: every worker's full TCP tables, its sockets, the operations endpoints.
    const uint64_t per_worker =
        config.listen.size() * (TcpListener::Settings{}.max_connections + 3) +
        config.upstreams.size() * 2 + 16;
    const uint64_t wanted = n * per_worker + 2 * Metrics::kMaxConnections + 64;
    const FdLimit fds = raise_fd_limit(wanted);
    if (fds.now < wanted)
      log::print(log::Level::Warning,
                 "hourglassd: warning: the descriptor limit (RLIMIT_NOFILE) is {}, below the {} "
                 "full connection tables may need; when it runs out, idle TCP connections are "
                 "closed to make room. Raise the hard limit (LimitNOFILE= in the unit, or "
                 "ulimit -Hn)",
                 fds.now, wanted);
  }
  std::vector<Endpoint> listen = config.listen;
  for (unsigned i = 0; i < n; ++i) {
    auto wk = std::make_unique<Worker>(static_cast<int>(i));
    Worker* worker = wk.get();
    UpstreamOptions uo;
    uo.servers = config.upstreams;
    // Retransmissions follow each server's RTO (docs/upstream.md) for the whole deadline and
    // a fifth more, so an answer that comes just after the client's SERVFAIL is still cached.
    uo.lifetime = Millis{config.upstream_timeout.count() * 6 / 5};
    uo.use_0x20 = config.use_0x20;
    uo.board = &shared.upstream_board;
    uo.worker = static_cast<int>(i);
    uo.dot = dot_settings(config, {});
    auto up = Upstream::create(wk->loop, uo);
    if (!up) return R::failure(up.error());
    wk->upstream = std::move(up.value());
    wk->engine = std::make_unique<QueryEngine>(
        shared, wk->loop,
        [worker](std::span<const uint8_t> q, Upstream::Callback done) {
          if (worker->engine->dnstap() != nullptr) [[unlikely]] {
            dnstap_forward(*worker->engine, *worker->upstream, q, std::move(done));
            return;
          }
          worker->upstream->send(q, std::move(done));
        },
        wk->index);
    if (config.redis.enabled()) start_fleet(shared, *wk, i == 0);
    for (Endpoint& addr : listen) {
      QueryEngine* engine = wk->engine.get();
      auto open_udp = [&] {
        return UdpListener::open(
            wk->loop, addr, /*first_of_port=*/i == 0,
            [engine](std::span<const uint8_t> q, const UdpPeer& peer, std::span<uint8_t> out) {
              Route route;
              route.udp = peer;
              return engine->on_query(q, peer.sa(), route, out).size;
            });
      };
      auto open_tcp = [&] {
        TcpListener::Settings ts;
        ts.max_per_source = config.tcp_max_per_source;
        ts.allow = config.allow;
        ts.counters = &shared.tcp_conns;
        return TcpListener::open(
            wk->loop, addr, n > 1, ts,
            [engine, worker](std::span<const uint8_t> q, const std::shared_ptr<TcpConnection>& c) {
              Route route;
              route.tcp = c;
              route.is_tcp = true;
              const auto res =
                  engine->on_query(q, c->peer().sockaddr_ptr(), route, worker->tcp_out);
              if (res.size > 0) {
                c->answer(std::span<const uint8_t>(worker->tcp_out.data(), res.size));
              } else if (!res.deferred) {
                c->no_answer();
              }
            });
      };
      // A port of 0 asks the kernel for a UDP port; TCP and the other workers then use the
      // same. The kernel chose it free for UDP only: if TCP cannot have it (another program's
      // connection holds it), give it back and ask again, a few times.
      const bool any_port = addr.port() == 0;
      for (int attempt = 1;; ++attempt) {
        auto udp = open_udp();
        if (!udp) return R::failure(udp.error());
        addr.set_port(udp.value()->local().port());
        auto tcp = open_tcp();
        if (tcp) {
          wk->udp.push_back(std::move(udp.value()));
          wk->tcp.push_back(std::move(tcp.value()));
          break;
        }
        if (!any_port || attempt == 16) return R::failure(tcp.error());
        addr.set_port(0);
      }
    }
    srv->workers_.push_back(std::move(wk));
  }
  srv->open_reply_sockets();
  srv->forward_zones_ = config.forward_zones;
  srv->hosts_files_ = config.hosts_files;
  {
    auto routing = srv->build_routing("start-up", read_hosts_files(srv->hosts_files_));
    if (!routing) return R::failure(routing.error());
    srv->apply_routing(routing.value(), /*direct=*/true);
  }
  shared.set_upstreams_now(config.upstreams);
  srv->base_upstreams_ = config.upstreams;
  if (shared.anchors != nullptr) {
    // Whether the default upstreams deliver DNSSEC records: asked now, on worker 0's loop
    // (its first iteration sends), and again whenever they change.
    UpstreamOptions uo;
    uo.lifetime = Millis{config.upstream_timeout.count() * 6 / 5};
    uo.use_0x20 = config.use_0x20;
    uo.dot = dot_settings(config, {});
    srv->dnssec_probe_ = std::make_unique<DnssecProbe>(srv->workers_[0]->loop, shared.anchors,
                                                       config.dnssec == Config::Dnssec::Require,
                                                       std::move(uo), shared.dnssec_upstreams);
    srv->dnssec_probe_->start(config.upstreams);
  }
  {
    auto watch = FileWatch::open(srv->workers_[0]->loop,
                                 [s = srv.get()](const std::string& p) { s->on_file_changed(p); });
    if (!watch) return R::failure(watch.error());
    srv->watch_ = std::move(watch.value());
    srv->watch_files();
  }
  if (auto err = srv->open_dnstap(config)) return R::failure(*err);
  // Operations (docs/architecture.md §5): the control socket and the metrics endpoint, on worker
  // 0's loop.
  if (!config.control_path.empty()) {
    auto ctl = Control::open(srv->workers_[0]->loop, shared, config.control_path);
    if (!ctl) return R::failure(ctl.error());
    srv->control_ = std::move(ctl.value());
    shared.links_changed = [s = srv.get()](const LinkTable& next, const std::string& what) {
      return s->on_links(next, what);
    };
    log::print(log::Level::Info, "control socket on {}", srv->control_->path());
  }
  if (config.metrics) {
    auto m = Metrics::open(srv->workers_[0]->loop, shared, *config.metrics);
    if (!m) return R::failure(m.error());
    srv->metrics_ = std::move(m.value());
    log::print(log::Level::Info, "metrics on {} (http://{}/metrics)",
               srv->metrics_->local().to_string(), srv->metrics_->local().to_string());
  }
  return srv;
}

Server::~Server() {
  for (auto& w : workers_) {
    if (w->thread.joinable()) {
      w->loop.stop();
      w->thread.join();
    }
  }
  if (signal_fd_ >= 0) ::close(signal_fd_);
  for (const int fd : reply_fds_) {
    outbox::send_held_now(fd);  // this thread's held answers; the workers have stopped
    ::close(fd);
  }
}

void Server::open_reply_sockets() {
  if (workers_.empty()) return;
  for (std::size_t a = 0; a < workers_[0]->udp.size(); ++a) {
    std::vector<int> receivers;
    for (const auto& w : workers_)
      receivers.push_back(w->udp[a]->fd());
    const Endpoint& local = workers_[0]->udp[a]->local();
    auto fds = UdpListener::open_reply_sockets(local, receivers);
    if (!fds) {
      // Not fatal: the listeners answer from their own sockets, at a little more CPU each.
      log::print(log::Level::Notice,
                 "hourglassd: note: UDP answers on {} go out from the listening sockets: {}",
                 local.to_string(), fds.error());
      continue;
    }
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      reply_fds_.push_back(fds.value()[i]);
      workers_[i]->udp[a]->set_reply_socket(fds.value()[i]);
    }
  }
}

std::vector<Endpoint> Server::bound() const {
  std::vector<Endpoint> out;
  if (workers_.empty()) return out;
  for (const auto& u : workers_[0]->udp)
    out.push_back(u->local());
  return out;
}

int Server::run() {
  // Signals arrive through a signalfd on worker 0's loop; block them in every thread first
  // (threads inherit the mask), and ignore SIGPIPE (a client closing mid-write is normal).
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  signal_fd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  Worker& main = *workers_[0];
  if (signal_fd_ < 0 ||
      !main.loop.add_fd(signal_fd_, Interest::Read, [this](FdEvents) { on_signal(); })) {
    log::print(log::Level::Error, "hourglassd: cannot watch signals: {}", std::strerror(errno));
    return 1;
  }

  const Config& c = shared_->config;
  std::string addrs, ups;
  for (const auto& e : bound())
    addrs += (addrs.empty() ? "" : " ") + e.to_string();
  for (const auto& e : c.upstreams) {
    std::string text = e.to_string();
    for (const TlsTarget& t : c.tls_upstreams)  // DNS over TLS: say so
      if (t.endpoint == e) text = to_string(t);
    ups += (ups.empty() ? "" : " ") + text;
  }
  log::print(log::Level::Info,
             "hourglassd {}: listening on {} (udp+tcp); upstreams {}{}; cache {} bytes, ttl min "
             "{}s max {}s negative max {}s, stale max {}s ttl {}s; client timeout {}ms, upstream "
             "timeout {}ms; threads {}",
             HG_VERSION, addrs, ups,
             c.upstreams_from_file ? " (from " + c.upstream_file + ")" : std::string(),
             c.cache_size, c.cache_min_ttl.count(), c.cache_max_ttl.count(),
             c.negative_max_ttl.count(), c.stale_max.count(), c.stale_ttl.count(),
             c.client_timeout.count(), c.upstream_timeout.count(), workers_.size());
  for (const auto& w : c.warnings)
    log::print(log::Level::Warning, "warning: {}", w);
  // A c-ares older than 1.18 stopped Upstream::create; a newer one than tested is said once.
  if (const auto p = cares::library_problem(); p && !p->fatal)
    log::print(log::Level::Warning, "{}", p->message);

  for (std::size_t i = 1; i < workers_.size(); ++i) {
    Worker* w = workers_[i].get();
    w->thread = std::thread([w] { w->loop.run(); });
  }
  start_systemd();
  if (!c.cache_file.empty() && c.cache_save_interval.count() > 0)
    saver_ = std::make_unique<PeriodicSaver>(*shared_, c.cache_save_interval);
  main.loop.run();
  if (hosts_builder_.joinable()) {  // a re-read in progress ends; its result is not applied
    {
      std::lock_guard lock(hosts_mu_);
      hosts_quit_ = true;
    }
    hosts_cv_.notify_one();
    hosts_builder_.join();
  }
  saver_.reset();  // a periodic save in progress finishes before the final one
  for (std::size_t i = 1; i < workers_.size(); ++i) {
    workers_[i]->loop.stop();
    if (workers_[i]->thread.joinable()) workers_[i]->thread.join();
  }
  if (dnstap_) {
    // Flush and close the dnstap output (STOP frame) before saying we stopped.
    for (auto& w : workers_)
      w->engine->set_dnstap(nullptr);
    dnstap_.reset();
    log::print(log::Level::Info, "hourglassd: dnstap closed; {} messages written, {} dropped",
               shared_->dnstap.written.load(), shared_->dnstap.dropped.load());
  }
  const auto& s = shared_->stats;
  log::print(log::Level::Info,
             "hourglassd: stopped; queries udp {} tcp {}, hits {}, misses {}, stale {}, coalesced "
             "{}, upstream queries {} failures {}, servfail {}",
             s.queries_udp.load(), s.queries_tcp.load(), s.hits.load(), s.misses.load(),
             s.stale_answers.load(), s.coalesced.load(), s.upstream_queries.load(),
             s.upstream_failures.load(), s.servfail.load());
  save_at_exit();
  return 0;
}

void Server::on_signal() {
  signalfd_siginfo info;
  while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (info.ssi_signo == SIGHUP) {
      const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now().time_since_epoch());
      notifier_.send(fmt::format("RELOADING=1\nMONOTONIC_USEC={}\nSTATUS=reloading", usec.count()));
      reload_upstreams();
      reload_dnstap();
      reload_shadow_ttls();
      reload_routing("SIGHUP", /*reread_config=*/true);
      // Each worker switches channels in a task posted to it; READY=1 follows them all.
      if (notifier_.enabled())
        after_all_workers([this] { notifier_.send("READY=1\nSTATUS=" + status_text()); });
    } else if (!stopping_) {
      begin_shutdown();
    }
  }
}

void Server::reload_upstreams(const char* why) {
  const Config& c = shared_->config;
  if (!c.upstreams_from_file) {
    log::print(log::Level::Info, "{}: upstreams come from --upstream, nothing to re-read", why);
    return;
  }
  // From the file watch, a complaint is said once (a file being rewritten may be seen
  // half-written several times); SIGHUP always answers.
  const bool watched = std::string_view(why) != "SIGHUP";
  auto complain = [&](const std::string& text) {
    if (watched && text == upstream_complaint_) return;
    upstream_complaint_ = text;
    log::print(log::Level::Warning, "{}: keeping the current upstreams: {}", why, text);
  };
  auto rc = read_resolv_conf(c.upstream_file);
  if (!rc) {
    complain(rc.error());
    return;
  }
  if (rc->nameservers.empty()) {
    complain(c.upstream_file + " " + no_nameserver_reason(rc.value(), c.upstream_file));
    return;
  }
  if (auto loop = find_forwarding_loop(bound(), rc->nameservers, local_interface_addresses())) {
    complain(describe(*loop, c.upstream_file));
    return;
  }
  upstream_complaint_.clear();
  if (watched && rc->nameservers == base_upstreams_) return;  // nothing changed
  base_upstreams_ = rc->nameservers;
  std::string ups;
  for (const auto& e : rc->nameservers)
    ups += (ups.empty() ? "" : " ") + e.to_string();
  push_default_upstreams(fmt::format("{}: upstreams now {} (from {})", why, ups, c.upstream_file));
}

void Server::push_default_upstreams(std::string message) {
  // The configured servers first, then the default-route links' ones (LinkTable):
  // the order only breaks ties between servers not measured yet (docs/upstream.md).
  std::vector<Endpoint> servers = links_.default_upstreams(base_upstreams_);
  if (servers.size() > kMaxDefaultUpstreams) {
    // Only a larger upstream file can do this (on_links refuses it): its servers come first.
    log::print(log::Level::Warning,
               "{}: {} default upstreams with the links' servers; using the first {}", message,
               servers.size(), kMaxDefaultUpstreams);
    servers.resize(kMaxDefaultUpstreams);
  }
  if (servers.size() > base_upstreams_.size())
    message += fmt::format(" and {} from links", servers.size() - base_upstreams_.size());
  shared_->set_upstreams_now(servers);
  // Each worker switches its own channel on its own thread; the last one to do so logs it,
  // so the line means "new queries now go to the new servers".
  auto remaining = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  auto shared_message = std::make_shared<const std::string>(std::move(message));
  if (dnssec_probe_) workers_[0]->loop.post([this, servers] { dnssec_probe_->start(servers); });
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([wp, servers, remaining, shared_message] {
      if (auto err = wp->upstream->reload_servers(servers))
        log::print(log::Level::Warning, "{}: worker {}: {}", *shared_message, wp->index, *err);
      if (remaining->fetch_sub(1) == 1) log::print(log::Level::Info, "{}", *shared_message);
    });
  }
}

std::optional<std::string> Server::on_links(const LinkTable& next, const std::string& what) {
  // A hook handing hourglassd its own address back (a resolv.conf that already points here)
  // would make every query of the link loop.
  const std::vector<Endpoint> locals = local_interface_addresses();
  for (const auto& [name, l] : next.links()) {
    if (auto loop = find_forwarding_loop(bound(), l.servers, locals))
      return fmt::format(
          "link {}: --dns {} is this hourglassd's own listen address {}, so every query would "
          "come back to it; give the network's real servers",
          name, loop->upstream.to_string(), loop->listen.to_string());
  }
  const std::size_t defaults = next.default_upstreams(base_upstreams_).size();
  if (defaults > kMaxDefaultUpstreams)
    return fmt::format(
        "{}: the default upstreams would be {} servers with the default-route links' ones, "
        "at most {}; give fewer --dns or --default-route no",
        what, defaults, kMaxDefaultUpstreams);
  LinkTable before = std::move(links_);
  links_ = next;
  auto r = build_routing(what.c_str(), HostsReads{});  // the hosts tables in force
  if (!r) {
    links_ = std::move(before);
    return r.error();
  }
  const bool defaults_changed =
      links_.default_upstreams(base_upstreams_) != before.default_upstreams(base_upstreams_);
  log::print(log::Level::Info, "{}: {} links in force; routing now {} forward zones", what,
             links_.size(), r.value()->forward_rules().size());
  apply_routing(r.value(), /*direct=*/false);
  if (defaults_changed) {
    std::string ups;
    for (const auto& e : base_upstreams_)
      ups += (ups.empty() ? "" : " ") + e.to_string();
    push_default_upstreams(fmt::format("{}: upstreams now {}", what, ups));
  }
  return std::nullopt;
}

void Server::reload_shadow_ttls() {
  const Config& c = shared_->config;
  if (c.config_file.empty()) return;
  if (c.shadow_ttls_from_cli) {
    log::print(log::Level::Info,
               "SIGHUP: shadow-ttl comes from the command line, nothing to re-read");
    return;
  }
  auto read = read_shadow_ttls(c.config_file);
  if (!read) {
    log::print(log::Level::Warning, "SIGHUP: keeping the current shadow-ttl zones: {}",
               read.error());
    return;
  }
  std::vector<std::pair<wire::Name, uint32_t>> zones;
  std::string text;
  for (const auto& st : read.value()) {
    auto zone = wire::Name::from_text(st.zone);
    if (!zone) {
      log::print(log::Level::Warning,
                 "SIGHUP: keeping the current shadow-ttl zones: {}: not a zone name", st.zone);
      return;
    }
    zones.emplace_back(*zone, static_cast<uint32_t>(st.cap.count()));
    text += fmt::format("{}{}={}", text.empty() ? "" : " ", zone->lowercased().to_text(),
                        st.cap.count());
  }
  shared_->shadow.replace(zones, workers_[0]->loop.now());
  log::print(log::Level::Info, "SIGHUP: shadow-ttl now {} (from {})", text.empty() ? "none" : text,
             c.config_file);
}

void Server::begin_shutdown() {
  stopping_ = true;
  notifier_.send("STOPPING=1\nSTATUS=shutting down");
  log::print(log::Level::Info,
             "hourglassd: shutting down: no new queries; answering the {} in flight",
             shared_->inflight.size());
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([wp] {
      for (auto& u : wp->udp)
        u->pause();
      for (auto& t : wp->tcp)
        t->pause();
    });
  }
  // Waiters are answered by their deadlines (at most the upstream timeout); then c-ares is
  // cancelled (any waiter left gets SERVFAIL) and the loops stop.
  Worker& main = *workers_[0];
  const MonoTime give_up = main.loop.now() + shared_->config.upstream_timeout + Millis{200};
  main.loop.add_timer(Millis{0}, [this, give_up] { finish_shutdown(give_up); });
}

void Server::finish_shutdown(MonoTime give_up) {
  Worker& main = *workers_[0];
  if (shared_->inflight.waiters() > 0 && main.loop.now() < give_up) {
    main.loop.add_timer(Millis{20}, [this, give_up] { finish_shutdown(give_up); });
    return;
  }
  // Two phases: first every worker cancels its upstream queries (their waiters, on any
  // worker, get SERVFAIL; TCP answers are posted to their connection's loop), and only when
  // all have done so do the loops close their connections and stop — so no answer is posted
  // to a loop that has already stopped.
  auto remaining = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([this, wp, remaining] {
      if (wp->index == 0 && dnssec_probe_) dnssec_probe_->cancel();
      wp->upstream->cancel_all();
      for (auto& f : wp->forward)
        if (f.up) f.up->cancel_all();
      for (auto& f : wp->retired)
        f.up->cancel_all();
      if (remaining->fetch_sub(1) != 1) return;
      for (auto& other : workers_) {
        Worker* op = other.get();
        op->loop.post([op] {
          for (auto& t : op->tcp)
            t->close_all();
          op->loop.stop();
        });
      }
    });
  }
}

// --- routing: forward zones, hosts files, special-use names -------------------------------

Server::HostsReads Server::read_hosts_files(const std::vector<std::string>& paths) {
  HostsReads out;
  out.paths = paths;
  for (const std::string& path : paths)
    out.reads.push_back(HostsTable::read(path));
  return out;
}

Checked<std::shared_ptr<const Routing>> Server::build_routing(const char* why, HostsReads reads) {
  Routing::Input in;
  in.forward = forward_zones_;
  // The runtime links' zones after the configured ones (resolver/query/links.h: the configured
  // zone wins when both name the same one).
  for (ForwardZone& f : links_.forward_zones(forward_zones_))
    in.forward.push_back(std::move(f));
  in.no_special = shared_->config.no_special_zones;
  in.single_label_forward = shared_->config.single_label_forward;
  for (const std::string& text : shared_->config.local_records) {
    auto rec = parse_local_record(text);  // checked when the configuration was read
    if (rec) in.records.push_back(std::move(rec.value()));
  }
  std::size_t said = 0, unsaid = 0;
  for (std::size_t i = 0; i < reads.paths.size(); ++i) {
    const std::string& path = reads.paths[i];
    auto& read = reads.reads[i];
    if (!read) {
      const std::string text = "hosts file " + read.error();
      if (hosts_reported_.insert(text).second)
        log::print(log::Level::Warning, "{}: {}{}", why, text,
                   hosts_read_.contains(path) ? "; keeping what it said before" : "");
    } else {
      for (const std::string& e : read->errors) {
        // Said once per line and text, however often the file is re-read.
        if (hosts_reported_.size() > 10000) hosts_reported_.clear();
        if (!hosts_reported_.insert(fmt::format("{}:{}", path, e)).second) continue;
        if (said++ < 20) {
          log::print(log::Level::Warning, "{}: hosts file {}:{}; line skipped", why, path, e);
        } else {
          ++unsaid;
        }
      }
      hosts_read_[path] = std::move(read->table);
    }
    if (auto it = hosts_read_.find(path); it != hosts_read_.end()) in.tables.push_back(it->second);
  }
  // No reads (a link changed): the hosts files' tables in force, as they are.
  if (reads.paths.empty()) {
    for (const std::string& path : hosts_files_)
      if (auto it = hosts_read_.find(path); it != hosts_read_.end())
        in.tables.push_back(it->second);
  }
  if (unsaid > 0)
    log::print(log::Level::Warning, "{}: and {} more malformed hosts lines", why, unsaid);
  return Routing::build(in);
}

void Server::install_routing(Worker& w, const std::shared_ptr<const Routing>& r) {
  std::vector<Worker::Forward> next;
  for (const auto& servers : r->server_sets()) {
    auto same = std::find_if(w.forward.begin(), w.forward.end(), [&](const Worker::Forward& f) {
      return f.up && f.servers == servers;
    });
    if (same != w.forward.end()) {
      next.push_back(std::move(*same));
      continue;
    }
    // Exactly the default upstreams' settings: health, RTT, EDNS and 0x20 state per server.
    const Config& config = shared_->config;
    UpstreamOptions uo;
    uo.servers = servers;
    uo.lifetime = Millis{config.upstream_timeout.count() * 6 / 5};
    uo.use_0x20 = config.use_0x20;
    uo.board = &shared_->upstream_board;
    uo.worker = next_board_id_++;
    uo.dot = dot_settings(config, r->tls_targets());
    auto up = Upstream::create(w.loop, uo);
    if (!up) {
      // Cannot happen for servers parse_forward_spec accepted; answer SERVFAIL rather than
      // send the zone's names to the default upstreams.
      log::print(log::Level::Error, "worker {}: forward servers: {}", w.index, up.error());
      uo.servers.clear();
      up = Upstream::create(w.loop, uo);
      if (!up) {  // c-ares itself failed: keep the index, the sender answers SERVFAIL
        next.push_back(Worker::Forward{servers, uo.worker, nullptr});
        continue;
      }
    }
    next.push_back(Worker::Forward{servers, uo.worker, std::move(up.value())});
  }
  for (auto& f : w.forward)
    if (f.up) w.retired.push_back(std::move(f));
  w.forward = std::move(next);
  // Upstreams no longer used go when their last query has ended (checked at each install).
  std::erase_if(w.retired, [&](Worker::Forward& f) {
    if (f.up->in_flight() > 0) return false;
    auto empty = std::make_shared<UpstreamTable>();
    empty->worker = f.board_id;
    shared_->upstream_board.publish(std::move(empty));
    return true;
  });
  Worker* wp = &w;
  w.engine->set_routing(r, [wp](uint32_t set, std::span<const uint8_t> q, Upstream::Callback done) {
    if (set >= wp->forward.size() || !wp->forward[set].up) {
      wp->loop.add_timer(Millis{0},
                         [done = std::move(done)] { done(UpstreamStatus::Internal, {}); });
      return;
    }
    Upstream& up = *wp->forward[set].up;
    if (wp->engine->dnstap() != nullptr) [[unlikely]] {
      dnstap_forward(*wp->engine, up, q, std::move(done));
      return;
    }
    up.send(q, std::move(done));
  });
}

void Server::apply_routing(const std::shared_ptr<const Routing>& r, bool direct) {
  // Cached answers of a zone whose route changed came from the wrong servers: flush them.
  if (routing_) {
    std::vector<wire::Name> changed;
    auto servers_of = [](const Routing& t, const wire::Name& z) -> const std::vector<Endpoint>* {
      for (const auto& f : t.forward_rules())
        if (f.zone == z) return &t.server_sets()[f.set];
      return nullptr;
    };
    for (const auto& f : routing_->forward_rules()) {
      const auto* now = servers_of(*r, f.zone);
      if (now == nullptr || *now != routing_->server_sets()[f.set]) changed.push_back(f.zone);
    }
    for (const auto& f : r->forward_rules())
      if (servers_of(*routing_, f.zone) == nullptr) changed.push_back(f.zone);
    for (const auto& z : changed)
      shared_->cache.flush_zone(z);
  }
  routing_ = r;
  shared_->set_routing(r);
  for (auto& w : workers_) {
    Worker* wp = w.get();
    if (direct) {
      install_routing(*wp, r);
    } else {
      wp->loop.post([this, wp, r] { install_routing(*wp, r); });
    }
  }
}

void Server::reload_routing(const char* why, bool reread_config) {
  if (reread_config) {
    auto settings = reread_routing_settings(shared_->config);
    if (!settings) {
      log::print(log::Level::Warning, "{}: keeping the forward zones and hosts files: {}", why,
                 settings.error());
      return;
    }
    for (const ForwardZone& f : settings->first) {
      if (auto loop = find_forwarding_loop(bound(), f.servers, local_interface_addresses())) {
        log::print(log::Level::Warning, "{}: keeping the forward zones and hosts files: {}", why,
                   describe(*loop, "forward " + f.zone));
        return;
      }
    }
    const bool same = settings->first == forward_zones_ && settings->second == hosts_files_;
    forward_zones_ = std::move(settings->first);
    hosts_files_ = std::move(settings->second);
    if (!same) watch_files();
  }
  start_hosts_build(why);
}

void Server::start_hosts_build(const char* why) {
  if (hosts_building_) {  // the one running may have read the file before this change
    hosts_build_again_ = true;
    return;
  }
  hosts_building_ = true;
  if (!hosts_builder_.joinable()) hosts_builder_ = std::thread([this] { hosts_builder_main(); });
  {
    std::lock_guard lock(hosts_mu_);
    hosts_job_ = HostsJob{why, hosts_files_};
  }
  hosts_cv_.notify_one();
}

void Server::hosts_builder_main() {
  // Reading and parsing run here: a 100,000-name file took 160-230 ms, which worker 0's
  // queries waited for when it ran on its loop. Behind the loops for the CPU: nice 10, a tenth
  // of a loop's weight, so on a busy core queries come first. Not 19: that lets any ordinary
  // work on the machine starve a reload (in CI a 50,000-name reload waited over a minute
  // behind a compiler at nice 10). The thread lives until shutdown, so worker 0 never waits
  // for it to end; it only hands it a job under a mutex.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  std::unique_lock lock(hosts_mu_);
  while (true) {
    hosts_cv_.wait(lock, [this] { return hosts_quit_ || hosts_job_.has_value(); });
    if (hosts_quit_) return;
    const HostsJob job = std::move(*hosts_job_);
    hosts_job_.reset();
    lock.unlock();
    // What the previous build left in malloc's free lists (its growing vectors, the file's
    // text; the tables it replaced) goes back to the system before the next one grows.
    (void)::malloc_trim(0);
    auto reads = std::make_shared<HostsReads>(read_hosts_files(job.paths));
    // The routing (which reports and keeps per-file state) is made on worker 0.
    workers_[0]->loop.post([this, why = job.why, reads] { on_hosts_read(why, *reads); });
    lock.lock();
  }
}

void Server::on_hosts_read(const char* why, HostsReads& reads) {
  hosts_building_ = false;
  if (stopping_) return;
  // The settings may have changed meanwhile (SIGHUP): then these reads are stale. A file
  // changed while it was read is read once more, after this (newer) result is applied, so
  // a file rewritten without pause still gets its tables in.
  const bool stale = reads.paths != hosts_files_;
  if (!stale) {
    auto r = build_routing(why, std::move(reads));
    if (!r) {
      log::print(log::Level::Warning, "{}: keeping the routing in force: {}", why, r.error());
    } else {
      log::print(log::Level::Info,
                 "{}: routing now {} forward zones ({} server sets), {} names from {} hosts "
                 "files and the built-in loopback PTRs",
                 why, r.value()->forward_rules().size(), r.value()->server_sets().size(),
                 r.value()->hosts_names(), hosts_files_.size());
      apply_routing(r.value(), /*direct=*/false);
    }
  }
  if (!stale && !hosts_build_again_) return;
  hosts_build_again_ = false;
  start_hosts_build(why);
}

void Server::watch_files() {
  std::vector<std::string> paths = hosts_files_;
  if (shared_->config.upstreams_from_file) paths.push_back(shared_->config.upstream_file);
  for (const std::string& problem : watch_->set_paths(paths))
    log::print(log::Level::Warning, "warning: {}", problem);
}

void Server::on_file_changed(const std::string& path) {
  // A short pause, so that a writer's steps (truncate, write, rename) end in one re-read.
  constexpr Millis kSettle{50};
  EventLoop& loop = workers_[0]->loop;
  if (shared_->config.upstreams_from_file && path == shared_->config.upstream_file &&
      !upstream_reload_pending_) {
    upstream_reload_pending_ = true;
    loop.add_timer(kSettle, [this] {
      upstream_reload_pending_ = false;
      reload_upstreams("upstream-file changed");
      watch_files();  // a symbolic link may lead elsewhere now
    });
  }
  if (std::find(hosts_files_.begin(), hosts_files_.end(), path) != hosts_files_.end() &&
      !hosts_reload_pending_) {
    hosts_reload_pending_ = true;
    loop.add_timer(kSettle, [this] {
      hosts_reload_pending_ = false;
      reload_routing("hosts file changed", /*reread_config=*/false);
    });
  }
}

// --- dnstap ----------------------------------------------------------------------------

std::optional<std::string> Server::open_dnstap(const Config& c) {
  if (c.dnstap.empty()) return std::nullopt;
  DnstapWriter::Options o;
  o.target = c.dnstap;
  o.identity = c.dnstap_identity.empty() ? host_name() : c.dnstap_identity;
  o.version = std::string("hourglass ") + HG_VERSION;
  o.queues = static_cast<unsigned>(workers_.size());
  auto w = DnstapWriter::open(o, shared_->dnstap);
  if (!w) return w.error();
  dnstap_ = std::move(w.value());
  // Before run(): no worker thread runs yet, so the engines are set directly.
  for (auto& wk : workers_)
    wk->engine->set_dnstap(dnstap_.get());
  log::print(log::Level::Info, "dnstap to {} (identity \"{}\")", o.target, o.identity);
  return std::nullopt;
}

void Server::reload_dnstap() {
  Config& c = shared_->config;
  auto settings = reread_dnstap_settings(c);
  if (!settings) {
    log::print(log::Level::Warning, "SIGHUP: keeping the dnstap settings: {}", settings.error());
    return;
  }
  const auto& [target, identity] = settings.value();
  const bool rotated = dnstap_ && !dnstap_->still_current();
  if (target == c.dnstap && !rotated) {
    if (identity == c.dnstap_identity) return;  // nothing changed
    if (target.substr(0, 5) != "unix:") {
      // Reopening the same file would truncate what it recorded.
      log::print(log::Level::Notice,
                 "SIGHUP: the new dnstap-identity applies when {} is rotated (renamed away) "
                 "and SIGHUP is sent again",
                 target);
      return;
    }
  }

  std::shared_ptr<DnstapWriter> next;
  if (!target.empty()) {
    DnstapWriter::Options o;
    o.target = target;
    o.identity = identity.empty() ? host_name() : identity;
    o.version = std::string("hourglass ") + HG_VERSION;
    o.queues = static_cast<unsigned>(workers_.size());
    auto w = DnstapWriter::open(o, shared_->dnstap);
    if (!w) {
      log::print(log::Level::Warning, "SIGHUP: keeping the dnstap output: {}", w.error());
      return;
    }
    next = std::move(w.value());
  }
  c.dnstap = target;
  c.dnstap_identity = identity;
  // Each worker switches on its own thread; the old writer is flushed and closed when the
  // last worker has let go of it (its shared_ptr copies live in these tasks).
  std::shared_ptr<DnstapWriter> old = std::move(dnstap_);
  dnstap_ = next;
  const std::string what = target.empty() ? std::string("SIGHUP: dnstap off")
                                          : "SIGHUP: dnstap to " + target + " (reopened)";
  auto remaining = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  for (auto& w : workers_) {
    Worker* wp = w.get();
    wp->loop.post([wp, next, old, remaining, what]() mutable {
      wp->engine->set_dnstap(next.get());
      old.reset();
      if (remaining->fetch_sub(1) == 1) log::print(log::Level::Info, "{}", what);
    });
  }
}

// --- systemd and warm restart ------------------------------------------------------------

void Server::start_systemd() {
  notifier_ = SystemdNotifier::from_environment(static_cast<long>(::getpid()));
  if (!notifier_.enabled()) return;
  Worker& main = *workers_[0];
  // Posted, so READY=1 goes out from inside the running loop: every listener is bound and
  // every worker thread started before this point.
  main.loop.post([this] {
    notifier_.send("READY=1\nSTATUS=" + status_text());
    log::print(log::Level::Info, "systemd: READY=1 sent{}",
               notifier_.watchdog()
                   ? fmt::format("; watchdog every {} ms", notifier_.watchdog()->count() / 2000)
                   : std::string());
  });
  main.loop.add_timer(kStatusEvery, [this] { status_tick(); });
  if (const auto wd = notifier_.watchdog()) {
    const Millis interval = std::max(Millis{2}, std::chrono::duration_cast<Millis>(*wd));
    for (std::size_t i = 1; i < workers_.size(); ++i) {
      Worker* w = workers_[i].get();
      w->heartbeat_ms.store(ms_since_epoch(main.loop.update_now()), std::memory_order_relaxed);
      w->loop.post([this, w, interval] { beat(w, interval / 4); });
    }
    main.loop.post([this, interval] { watchdog_tick(interval / 2); });
  }
}

void Server::status_tick() {
  notifier_.send("STATUS=" + status_text());
  workers_[0]->loop.add_timer(kStatusEvery, [this] { status_tick(); });
}

void Server::beat(Worker* w, Millis every) {
  w->heartbeat_ms.store(ms_since_epoch(w->loop.now()), std::memory_order_relaxed);
  w->loop.add_timer(every, [this, w, every] { beat(w, every); });
}

void Server::watchdog_tick(Millis every) {
  // Worker 0 runs this tick, so its own loop is alive; the others prove it by their heartbeat
  // (stamped every quarter interval). One silent for a whole interval withholds the ping.
  Worker& main = *workers_[0];
  const int64_t now = ms_since_epoch(main.loop.now());
  std::vector<int64_t> beats;
  for (std::size_t i = 1; i < workers_.size(); ++i)
    beats.push_back(workers_[i]->heartbeat_ms.load(std::memory_order_relaxed));
  if (auto stuck = stuck_loop(beats, now, every.count() * 2)) {
    if (!watchdog_withheld_) {
      log::print(log::Level::Error,
                 "watchdog: worker {}'s loop has not run for {} ms; WATCHDOG=1 withheld",
                 *stuck + 1, now - beats[*stuck]);
    }
    watchdog_withheld_ = true;
  } else {
    watchdog_withheld_ = false;
    notifier_.send("WATCHDOG=1");
  }
  main.loop.add_timer(every, [this, every] { watchdog_tick(every); });
}

void Server::after_all_workers(std::function<void()> done) {
  auto remaining = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
  EventLoop* main = &workers_[0]->loop;
  for (auto& w : workers_) {
    w->loop.post([remaining, shared_done, main] {
      if (remaining->fetch_sub(1) == 1) main->post([shared_done] { (*shared_done)(); });
    });
  }
}

std::string Server::status_text() const {
  const Stats& s = shared_->stats;
  const uint64_t queries =
      s.queries_udp.load(std::memory_order_relaxed) + s.queries_tcp.load(std::memory_order_relaxed);
  const uint64_t hits = s.hits.load(std::memory_order_relaxed);
  const uint64_t pct = queries == 0 ? 0 : hits * 100 / queries;
  return fmt::format(
      "{} queries, {} hits ({}%), {} stale answers; {} answers cached ({} loaded "
      "from the cache file)",
      queries, hits, pct, s.stale_answers.load(std::memory_order_relaxed),
      shared_->cache.stats().entries, loaded_from_file_);
}

void Server::save_at_exit() {
  const std::string& path = shared_->config.cache_file;
  if (path.empty()) return;
  notifier_.send("STATUS=saving the cache to " + path);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = save_cache_file(*shared_, std::chrono::time_point_cast<Millis>(t0));
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (r.ok) {
    log::print(log::Level::Info, "hourglassd: saved {} answers to {}{} ({} bytes, {:.1f} ms)",
               r.entries, r.path, r.diverted.empty() ? std::string() : " (" + r.diverted + ")",
               r.bytes, ms);
  } else {
    log::print(log::Level::Warning, "hourglassd: cache file {}: not saved: {}", path, r.error);
  }
}

}  // namespace hg::resolver
