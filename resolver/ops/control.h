// Control: the unix control socket (`--control PATH`) that hourglass-ctl talks to — cache
// statistics, a dump of every cached answer with its TTLs counting down, flushes, and
// per-zone TTL caps changed at run time (docs/architecture.md §5).
//
// Protocol: line based, one request per line, any number of requests per connection.
//
//   client:  COMMAND [ARGS...] '\n'          (at most 4096 bytes; '\r' before '\n' ignored)
//   server:  zero or more lines, each '\n'-terminated, then one empty line
//
// Reply lines are never empty, so the empty line always ends a reply. A failed request is
// answered by the single line "error: ..." naming what was wrong. Lines starting with ';'
// are comments (dump's per-entry headers, the counts at the end), as in dig output.
//
// The commands, their arguments and one line of help each are the table in
// resolver/ops/control_commands.h (`help` prints it). Replies worth knowing the shape of:
//
//   stats                     "key value" lines: cache.*, server.* counters, inflight.*
//   dump [NAME]               per cached answer a "; " header line (name, class, type, DO/CD,
//                             rcode, fresh or stale, time left), then its records in dig form
//                             with the TTLs left at this instant
//   flush, flush-zone         → "flushed N"
//   ttl-cap, ttl-cap-clear    → "ok: ..."; ttl-caps: "ZONE SECONDS" per cap in force
//   shadow, drain             resolver/ops/shadow_control.h
//   route NAME                which rule answers NAME (resolver/query/local_names.h)
//   link IFACE ...            → "ok: link IFACE dns=... domains=... default-route=..."; links:
//                             one such line per link (resolver/query/links.h)
//   save                      → "saved N answers to PATH (B bytes)"
//                             (resolver/ops/warm_restart.h)
//
// Served on one worker's event loop (worker 0) through StreamServer: non-blocking, at most
// 16 connections, idle ones closed after 30 s. A dump is rendered in chunks as the client
// reads it, so a large cache does not stall the loop or sit in memory as text; it walks a
// snapshot taken when the command arrived (entries evicted meanwhile stay alive until the
// dump ends).
//
// The socket file is created with mode 0660 (connecting needs write permission: the owner
// and the group may control the daemon). At start a stale socket left by a crashed daemon is
// replaced, but a live one — another process accepts connections on it — or any file that is
// not a socket is left alone and the start fails. The file is removed at exit if it is still
// ours.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "resolver/checked.h"
#include "resolver/net/event_loop.h"
#include "resolver/net/stream_server.h"
#include "resolver/query/shared.h"

namespace hg::resolver {

class Control {
 public:
  /// The reply to one request line. `text` holds complete lines; `more`, when set, appends
  /// further lines in chunks and returns false after the last one. Neither includes the
  /// empty line that ends the reply on the socket.
  struct Output {
    std::string text;
    std::function<bool(std::string& out)> more{};
  };

  /// Creates the unix socket at `path` and serves it on `loop` (the caller runs the loop on
  /// the thread that calls this). The error names the path, what failed and what to do.
  static Checked<std::unique_ptr<Control>> open(EventLoop& loop, Shared& shared,
                                                const std::string& path);
  /// Stops serving and removes the socket file if it is still the one we created.
  ~Control();
  Control(const Control&) = delete;
  Control& operator=(const Control&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::size_t connections() const noexcept { return server_ ? server_->connections() : 0; }

  /// Runs one request line (without its '\n') against `shared` at `now`.
  static Output execute(Shared& shared, std::string_view line, MonoTime now);
  /// The same with any chunked part collected: the whole reply as one string.
  static std::string execute_all(Shared& shared, std::string_view line, MonoTime now);

  static constexpr std::size_t kMaxLine = 4096;

 private:
  Control(std::string path, dev_t dev, ino_t ino) : path_(std::move(path)), dev_(dev), ino_(ino) {}

  std::string path_;
  dev_t dev_;
  ino_t ino_;
  std::unique_ptr<StreamServer> server_;
};

/// What a cache entry answers and how long it has left, as `dump` and `drain` print it:
/// "QNAME CLASS TYPE[ do][ cd] RCODE[ nodata] fresh, expires in Ns" or "... stale, expired Ns
/// ago, servable stale for Ns more" (no newline; " nodata" only with `with_kind`).
std::string describe_entry(const cache::Entry& e, MonoTime now, Millis stale_max, bool with_kind);

}  // namespace hg::resolver
