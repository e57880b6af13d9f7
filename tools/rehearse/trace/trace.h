// Traces for hourglass-rehearse: what a reader of a dnstap or pcap file hands the replay.
//
// A reader yields TraceEvents in file order; TraceMerger merges several readers by time. The
// message bytes of an event are only valid until the next call to next() on the same reader
// (readers reuse one buffer, so a 10-million-query trace is read without an allocation per
// event).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hg::rehearse {

/// Who asked: a client of the recorder (dnstap CLIENT_*, or AUTH_* on an authoritative, whose
/// clients are resolvers; pcap: any query to port 53), or the recorder itself asking its
/// upstream (dnstap FORWARDER_* / RESOLVER_*), which only dnstap can tell apart.
enum class Side : uint8_t { Client, Upstream };
enum class Role : uint8_t { Query, Response };

struct TraceEvent {
  Side side = Side::Client;
  Role role = Role::Query;
  int64_t time_ns = 0;        ///< this message's time, ns since the Unix epoch
  int64_t query_time_ns = 0;  ///< a response's query time when the trace has it, else 0
  bool tcp = false;
  uint8_t family = 0;  ///< 4, 6, or 0 when the trace does not say
  uint16_t client_port = 0;
  std::array<uint8_t, 16> client_addr{};  ///< first 4 bytes for IPv4
  std::span<const uint8_t> message;       ///< DNS wire message
  uint8_t dnstap_type = 0;                ///< dnstap Message.Type (1 AUTH_QUERY .. 14), 0 for pcap
};

enum class ReadStatus : uint8_t { Event, End, Bad };

/// Where and why a trace could not be read: "FILE: offset N: what".
struct TraceError {
  std::string file;
  uint64_t offset = 0;
  std::string what;
  std::string to_string() const;
};

class TraceReader {
 public:
  virtual ~TraceReader() = default;
  /// The next event (ReadStatus::Event), the end of the file, or Bad with error() set. With
  /// skip_bad, corrupt records are counted in skipped() and reading goes on where it can.
  virtual ReadStatus next(TraceEvent& ev) = 0;
  virtual const TraceError& error() const = 0;
  /// What the trace is and which view was used, e.g. "dnstap, client view (CLIENT_*)".
  virtual std::string describe() const = 0;
  /// Records passed over: corrupt ones with skip_bad, TCP or fragments not reassembled, ...
  virtual uint64_t skipped() const = 0;
};

struct TraceOptions {
  bool skip_bad = false;  ///< count and skip corrupt records instead of stopping
  uint16_t port = 53;     ///< pcap: the DNS port
};

/// Merges several readers by time: each next() yields the earliest of the readers' current
/// events (ties: the reader added first). An event's message stays valid until the next call
/// to next() on the merger. Bad from any reader stops the merge with that reader's error.
class TraceMerger : public TraceReader {
 public:
  TraceMerger() = default;
  void add(std::unique_ptr<TraceReader> reader);
  std::size_t size() const { return readers_.size(); }

  ReadStatus next(TraceEvent& ev) override;
  const TraceError& error() const override { return error_; }
  /// One line per reader, joined by "; ".
  std::string describe() const override;
  uint64_t skipped() const override;

 private:
  struct Head {
    std::unique_ptr<TraceReader> reader;
    TraceEvent ev;
    bool live = false;  ///< ev holds this reader's current event
    bool done = false;  ///< reader is at its end
  };
  std::vector<Head> readers_;
  std::size_t last_ = SIZE_MAX;  ///< the reader whose event was handed out last
  bool primed_ = false;
  TraceError error_;
};

/// Opens a trace, choosing the reader by the file's magic bytes (Frame Streams, pcap, pcapng).
/// nullptr with `error` set when the file cannot be opened or is of no known kind.
std::unique_ptr<TraceReader> open_trace(const std::string& path, const TraceOptions& options,
                                        TraceError& error);

/// The same for a trace already in memory (the fuzz target, tests); `name` is used in errors.
/// The bytes must outlive the reader.
std::unique_ptr<TraceReader> open_trace_memory(std::span<const uint8_t> bytes,
                                               const std::string& name, const TraceOptions& options,
                                               TraceError& error);

/// Opens every one of `files` into `merger` (merged by time), as replay and project do; false
/// after printing the error of the first that cannot be read.
bool open_traces(const std::vector<std::string>& files, const TraceOptions& topts,
                 TraceMerger& merger);

}  // namespace hg::rehearse
