// DnstapWriter: hourglassd's dnstap output (--dnstap), a Frame Streams file or socket with
// content type "protobuf:dnstap.Dnstap", written by libfstrm's I/O thread.
//
// Workers never wait for it. Each worker thread owns one fstrm input queue (a bounded
// single-producer ring) and one batch: write() encodes the message as a Frame Streams frame
// at the end of the batch, and flush() -- called by the worker at the end of each event-loop
// iteration, and by write() when the batch is full -- offers the batch to the queue as one
// entry. When the queue is full the batch's messages are dropped and counted
// (hourglass_dnstap_dropped_total), never retried. The I/O thread drains the queues and
// writes the batches as they are (the sink drops the length fstrm puts in front of each
// entry: the batch already holds whole frames).
//
// Targets:
//   PATH       a Frame Streams file, created or truncated at open (as fstrm's own file writer
//              does). SIGHUP opens it again only if the path no longer names the file being
//              written (it was renamed or deleted for rotation), so a reload never truncates
//              what is being recorded.
//   unix:PATH  a Frame Streams socket (e.g. fstrm_capture -u PATH): bidirectional handshake
//              (READY/ACCEPT/START); when the reader is absent, the I/O thread retries every
//              second and what arrives meanwhile is discarded by fstrm.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dnstap/codec.h"
#include "resolver/checked.h"

struct fstrm_iothr;
struct fstrm_iothr_queue;

namespace hg::resolver {

/// Totals over every writer the daemon opened (they survive SIGHUP reopens).
struct DnstapCounters {
  std::atomic<uint64_t> written{0};  ///< frames handed to the I/O thread's queues
  std::atomic<uint64_t> dropped{0};  ///< frames dropped because a queue was full
};

class DnstapWriter {
 public:
  struct Options {
    std::string target;          ///< "PATH" or "unix:PATH"
    std::string identity;        ///< Dnstap.identity; empty: none
    std::string version;         ///< Dnstap.version
    unsigned queues = 1;         ///< one per worker thread
    unsigned queue_size = 2048;  ///< batches per queue, a power of 2 from 2 to 16384
  };

  /// Opens the target (a file is created now, so that a bad path fails here with a message
  /// naming it) and starts the I/O thread.
  static Checked<std::unique_ptr<DnstapWriter>> open(const Options& options,
                                                     DnstapCounters& counters);
  /// Flushes what is queued, writes the STOP frame, closes, joins the I/O thread.
  ~DnstapWriter();
  DnstapWriter(const DnstapWriter&) = delete;
  DnstapWriter& operator=(const DnstapWriter&) = delete;

  /// A batch holds up to this many bytes of frames; a larger frame is an entry of its own.
  static constexpr std::size_t kBatch = 4096;

  /// Encodes `m` with the writer's identity and version (m.identity and m.version are ignored)
  /// into the batch of `queue`, which only the calling thread may use. Never blocks: a full
  /// queue drops the message and counts it. The frame reaches the file at the next flush().
  void write(unsigned queue, const dnstap::Message& m) noexcept;
  /// Offers the batch of `queue` (the calling thread's) to the I/O thread; no-op when empty.
  void flush(unsigned queue) noexcept;

  const Options& options() const noexcept { return options_; }
  /// For a file target: whether PATH still names the file being written. Always true for a
  /// socket.
  bool still_current() const noexcept;

 private:
  explicit DnstapWriter(const Options& options, DnstapCounters& counters);
  void write_alone(unsigned queue, const dnstap::Message& m) noexcept;

  // The frames a queue's worker has written and not yet offered to the I/O thread.
  struct Batch {
    uint8_t* buf = nullptr;  // a pool slot of kBatch bytes, or none yet
    std::size_t used = 0;
    uint64_t frames = 0;
  };
  static constexpr unsigned kOutputQueue = 64;  // batches the I/O thread takes per pass

  Options options_;
  std::vector<uint8_t> prefix_;  // identity and version as encoded at the start of each frame
  class FramePool;

  DnstapCounters& counters_;
  // Destroyed after iothr_ (declared before it): the I/O thread returns frames to them.
  std::vector<std::unique_ptr<FramePool>> pools_;
  fstrm_iothr* iothr_ = nullptr;
  std::vector<fstrm_iothr_queue*> queues_;
  std::vector<Batch> batches_;  // one per queue
  uint64_t file_dev_ = 0;
  uint64_t file_ino_ = 0;
};

/// Checks a --dnstap value; nullopt when usable, else what is allowed. For a file, its
/// directory must exist.
std::optional<std::string> check_dnstap_target(std::string_view target);

/// Now, from the realtime clock (dnstap times are wall-clock).
dnstap::Timestamp dnstap_now() noexcept;
dnstap::Timestamp dnstap_time(int64_t ns_since_epoch) noexcept;

/// Sets family, address and port of one side of `m` from a sockaddr (AF_INET/AF_INET6;
/// anything else leaves them unset). The address span points into `sa`.
void dnstap_set_query_peer(dnstap::Message& m, const sockaddr* sa) noexcept;
void dnstap_set_response_peer(dnstap::Message& m, const sockaddr* sa) noexcept;

}  // namespace hg::resolver
