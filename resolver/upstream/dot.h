// DNS over TLS to the upstream (RFC 7858), beside c-ares behind Upstream (docs/dot.md).
//
// What is here:
//  - TlsTarget and the `tls://ADDR[:PORT][#AUTH-NAME]` syntax of --upstream and --forward,
//    and the `sha256/BASE64` SPKI pins of --tls-pin (RFC 7858 §4.2, RFC 7469's pin form).
//  - dot::StreamReader: the 2-byte length-prefixed framing of a DNS stream (RFC 1035 §4.2.2,
//    RFC 7766), reassembling messages from whatever chunks TLS records hand over.
//  - dot::pad_query: EDNS(0) Padding (RFC 7830) of a query to 128-octet blocks (RFC 8467).
//  - dot::Pending: the queries of one server by ID, with their deadlines and send order.
//  - DotChannel: one server's TLS connection over an EventLoop (OpenSSL, non-blocking),
//    kept and shared by every query to it, reconnected with TLS session resumption.
//
// Strict profile (RFC 8310 §5): with an authentication name the certificate chain must
// verify against the system CA store (plus --tls-ca-file) and name that host (or IP); with
// --tls-pin the server's SPKI must also match a pin. A server that fails is never asked in
// clear: its queries fail (Upstream sends them to the next server, or the client gets
// SERVFAIL with EDE 22), and it is not dialled again for a while.
//
// Thread: a DotChannel lives on its EventLoop's thread, like the Upstream that owns it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "resolver/checked.h"
#include "resolver/net/endpoint.h"
#include "resolver/net/event_loop.h"

namespace hg::resolver {

struct UpstreamServerStats;

/// One upstream reached over TLS.
struct TlsTarget {
  Endpoint endpoint{};
  /// The name the certificate must carry (a host name, or an IP address literal); empty
  /// when the server is authenticated by --tls-pin alone.
  std::string auth_name{};
  friend bool operator==(const TlsTarget&, const TlsTarget&) = default;
};

/// Whether `text` uses the tls:// scheme (then parse_tls_upstream decides).
bool is_tls_spec(std::string_view text) noexcept;
/// Parses "tls://ADDR[:PORT][#AUTH-NAME]" (port 853 by default; IPv6 as [ADDR]:PORT). The
/// name is checked for the characters of a host name or IP literal.
Checked<TlsTarget> parse_tls_upstream(std::string_view text);
/// "tls://ADDR:PORT#NAME" (or without "#NAME").
std::string to_string(const TlsTarget& t);

using SpkiPin = std::array<uint8_t, 32>;
/// Parses "sha256/BASE64" (the SHA-256 of the DER SubjectPublicKeyInfo, 44 base64 chars).
Checked<SpkiPin> parse_tls_pin(std::string_view text);

/// Everything the DoT transport needs to know, shared by every Upstream of the process.
struct DotSettings {
  std::vector<TlsTarget> targets{};
  std::string ca_file{};            ///< added to the system CA store (empty: none)
  std::vector<SpkiPin> pins{};      ///< when not empty, a server's SPKI must match one
  Millis idle_timeout{10'000};      ///< an idle connection is closed after this long
  std::size_t max_in_flight = 128;  ///< queries written and unanswered per connection
  /// After a certificate is refused, the server is not dialled again for this long.
  Millis auth_holdoff{10'000};
  /// Servers whose AD bit is passed on (--trust-ad): each must be a target with an
  /// auth_name, whose certificate is checked. Every other answer has AD cleared (Upstream).
  std::vector<Endpoint> trust_ad{};
  const TlsTarget* find(const Endpoint& e) const noexcept;
  /// Whether `e` is a target with an auth_name that is listed in trust_ad.
  bool trusts_ad(const Endpoint& e) const noexcept;
};

namespace dot {

/// Reassembles length-prefixed DNS messages from a byte stream. A length under 12 (no DNS
/// header fits) is a protocol error: the stream is unusable from then on.
class StreamReader {
 public:
  /// Appends bytes read from the stream.
  void feed(std::span<const uint8_t> bytes);
  /// The next complete message (valid until the next feed()/next()), or nullopt when more
  /// bytes are needed or the stream is broken.
  std::optional<std::span<uint8_t>> next();
  bool broken() const noexcept { return broken_; }
  /// Bytes held: at most one partial message plus what the last feed() brought.
  std::size_t buffered() const noexcept { return buf_.size() - start_; }
  void reset() noexcept;

 private:
  std::vector<uint8_t> buf_;
  std::size_t start_ = 0;
  bool broken_ = false;
};

/// Adds an EDNS(0) Padding option (RFC 7830) to the query in buf[0, len) so that its length
/// is a multiple of `block` (RFC 8467 §4.1: 128 for queries). The query must end with its
/// OPT record (the last additional record); `buf` must have room for len + 4 + block - 1
/// bytes. Returns the new length, or `len` unchanged when there is no OPT record at the end,
/// the OPT already has options, or the room is missing.
std::size_t pad_query(std::span<uint8_t> buf, std::size_t len, std::size_t block = 128);

/// The queries of one DoT server, by ID: their framed bytes, deadlines and order.
class Pending {
 public:
  struct Entry {
    std::vector<uint8_t> framed;  ///< 2-byte length + message
    MonoTime deadline{};
    uint64_t seq = 0;
    MonoTime written_at{};    ///< when it was last written
    uint8_t connections = 0;  ///< connections it was written to
    bool written = false;     ///< on the current connection
  };
  /// False when `id` is already pending.
  bool add(uint16_t id, std::span<const uint8_t> message, MonoTime deadline);
  /// Removes and returns the entry of `id` (an answer came).
  std::optional<Entry> take(uint16_t id);
  Entry* find(uint16_t id);
  /// Removes the entries whose deadline is at or before `now`; returns their IDs. When
  /// `earliest_written` is given, lowers it to the earliest written_at of those that were
  /// written on the current connection.
  std::vector<uint16_t> expire(MonoTime now, MonoTime* earliest_written = nullptr);
  std::optional<MonoTime> next_deadline();
  /// The next entry not yet written on the current connection, in send order.
  std::optional<uint16_t> next_unwritten();
  /// The connection died: written entries go back to the unwritten queue (in their send
  /// order, ahead of the rest) unless they have been on `max_connections` already; those
  /// are removed and their IDs returned.
  std::vector<uint16_t> connection_lost(uint8_t max_connections);
  /// Removes everything; returns the IDs.
  std::vector<uint16_t> take_all();
  std::size_t size() const noexcept { return entries_.size(); }
  std::size_t written() const noexcept { return written_; }
  void mark_written(uint16_t id, MonoTime now = {});

 private:
  std::unordered_map<uint16_t, Entry> entries_;
  std::deque<std::pair<uint64_t, uint16_t>> by_deadline_;  // (seq, id); deadlines ascend
  std::deque<std::pair<uint64_t, uint16_t>> unwritten_;
  std::size_t written_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace dot

/// One server's TLS connection, kept and shared: queries are pipelined (each framed with
/// its length), answers matched by ID in any order, at most max_in_flight written and
/// unanswered at a time. Connects when a query comes and no connection is open; closes
/// after idle_timeout without queries, when a connection or handshake takes longer than a
/// query's lifetime, and when queries time out on a connection silent for that long. A connection
/// that dies has its unanswered queries written again on the next one (once), a refused certificate
/// fails them all.
class DotChannel {
 public:
  enum class Event : uint8_t {
    Answer,        ///< `message` is the server's answer for the ID
    NetworkError,  ///< no connection could carry it (refused, reset, handshake failure)
    AuthFailed,    ///< the certificate or pin was refused
    Timeout,       ///< its deadline passed without an answer
    Cancelled,     ///< cancel_all()
  };
  /// Called on the loop thread, never from inside send(). For Answer, `message` is mutable
  /// and valid only during the call.
  using Sink = std::function<void(uint16_t id, Event event, std::span<uint8_t> message)>;

  /// `ctx` is an SSL_CTX* from make_context() (shared by the servers of an Upstream).
  DotChannel(EventLoop& loop, std::shared_ptr<void> ctx, const DotSettings& settings,
             TlsTarget target, std::shared_ptr<UpstreamServerStats> stats, Millis lifetime,
             Sink sink);
  /// Closes the connection; no Sink calls for what is pending.
  ~DotChannel();
  DotChannel(const DotChannel&) = delete;
  DotChannel& operator=(const DotChannel&) = delete;

  /// The client context for `settings`: TLS >= 1.2, the system CA store plus ca_file,
  /// client session cache for resumption. Fails naming what could not be loaded.
  static Checked<std::shared_ptr<void>> make_context(const DotSettings& settings);

  /// Queues `message` (a complete query, ID `id` unique among this channel's) and writes it
  /// as soon as a connection allows. False, with nothing queued, while the server is held
  /// off after a refused certificate: the caller fails the query itself.
  bool send(uint16_t id, std::span<const uint8_t> message);
  /// Every pending query gets Cancelled (before this returns); the connection stays.
  void cancel_all();
  /// Forgets every pending query without a Sink call; returns their IDs (for the owner's
  /// bookkeeping before it destroys the channel).
  std::vector<uint16_t> abandon();
  std::size_t pending() const noexcept { return pending_.size(); }
  bool connected() const noexcept { return state_ == State::Open; }

 private:
  enum class State : uint8_t { Idle, Connecting, Handshaking, Open };
  void kick();
  void connect();
  void on_fd(FdEvents ev);
  void continue_connect();
  void continue_handshake();
  void handshake_done();
  void flush();
  void read_all();
  void fill_writes();
  void close_connection();
  /// The connection died: if it was open, its queries go to the next one (once) or fail
  /// with NetworkError; if it never opened, connect_failed().
  void connection_failed(const std::string& why);
  /// No connection could be made: every pending query fails with NetworkError.
  void connect_failed(const std::string& why);
  void auth_failed(const std::string& why);
  void fail(const std::vector<uint16_t>& ids, Event event);
  void arm_timer();
  void on_timer();
  void log_once(const std::string& what);

  EventLoop& loop_;
  std::shared_ptr<void> ctx_;
  const DotSettings& settings_;
  TlsTarget target_;
  std::shared_ptr<UpstreamServerStats> stats_;
  Millis lifetime_;
  Sink sink_;
  State state_ = State::Idle;
  int fd_ = -1;
  void* ssl_ = nullptr;        // SSL*
  void* session_ = nullptr;    // SSL_SESSION* kept for resumption
  std::vector<uint8_t> wbuf_;  // framed queries not yet taken by SSL_write
  std::size_t wstart_ = 0;
  std::size_t msg_end_ = 0;    // end in wbuf_ of the message being written (one record each)
  std::size_t retry_len_ = 0;  // SSL_write must be retried with the same length
  std::vector<uint8_t> rbuf_;
  dot::StreamReader reader_;
  dot::Pending pending_;
  uint64_t written_on_connection_ = 0;
  TimerId timer_{};
  MonoTime timer_at_{};
  MonoTime idle_since_{};
  MonoTime connect_started_{};  // the connection attempt in progress began
  MonoTime last_read_{};        // bytes last came from the server on this connection (or min)
  MonoTime held_off_until_{};
  std::string last_logged_;
  bool kick_scheduled_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  friend struct DotSessionHook;
};

}  // namespace hg::resolver
