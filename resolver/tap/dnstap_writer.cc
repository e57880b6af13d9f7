#include "resolver/tap/dnstap_writer.h"

#include <fcntl.h>
#include <fstrm.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/bytes.h"
#include "base/checked_open.h"
#include "base/wall_clock.h"
#include "resolver/text.h"

// ThreadSanitizer builds (HG_TSAN): a batch crosses to fstrm's I/O thread through fstrm's
// queue, and libfstrm is not instrumented, so TSan sees neither the queue's own copies of
// its slots nor the happens-before the queue gives our buffers. The first are left out
// (called_from_lib); for the second, submit() releases the buffer and the I/O thread's
// write callback acquires it, which is exactly the ordering the queue provides. Nothing of
// this exists in other builds.
#if defined(__SANITIZE_THREAD__)
#define HG_DNSTAP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HG_DNSTAP_TSAN 1
#endif
#endif
#ifdef HG_DNSTAP_TSAN
#include <sanitizer/tsan_interface.h>
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libfstrm.so\n";
}
#endif

namespace hg::resolver {

using text::quote;

namespace {

// The buffer at p goes to (handed_over) or arrives on (taken_over) fstrm's I/O thread.
inline void handed_over(void* p) noexcept {
#ifdef HG_DNSTAP_TSAN
  __tsan_release(p);
#else
  (void)p;
#endif
}
inline void taken_over(void* p) noexcept {
#ifdef HG_DNSTAP_TSAN
  __tsan_acquire(p);
#else
  (void)p;
#endif
}

constexpr std::string_view kContentType = "protobuf:dnstap.Dnstap";
constexpr std::string_view kUnixPrefix = "unix:";

bool is_unix(std::string_view target) {
  return target.substr(0, kUnixPrefix.size()) == kUnixPrefix;
}

// Every dnstap file hourglassd creates: it holds client addresses and the names they asked.
constexpr mode_t kFileMode = S_IRUSR | S_IWUSR;  // 0600

// Workers hand fstrm batches, not single frames: each data entry a worker submits is a run
// of whole Frame Streams data frames (each its 4-byte big-endian length, then the frame),
// built in the worker's batch buffer. fstrm's writer puts its own 4-byte length in front of
// every entry it writes, which would frame the batch once more; so the sink below (our own
// rdwr for both a file and a unix socket) drops those lengths and writes the batches as they
// are. It tells them apart from control frames by their shape: fstrm writes a data entry as
// two pieces, a 4-byte piece holding the (never zero) length of the next piece and then the
// entry; a control frame as one piece that starts with the 4-byte zero escape.
struct Sink {
  enum class Kind : uint8_t { File, Unix };
  static constexpr int kMaxPieces = 1024;  // IOV_MAX on Linux

  Kind kind = Kind::File;
  std::string path;  // the file, or the socket's path
  int fd = -1;
  std::vector<iovec> pieces = std::vector<iovec>(kMaxPieces);

  static fstrm_res open(void* obj) {
    auto* self = static_cast<Sink*>(obj);
    if (self->fd >= 0) return fstrm_res_success;
    if (self->kind == Kind::File) {
      // Reopened after a write error (the file was opened at start): append, never truncate.
      // The same rules as at start: a file another user put there since is not written to.
      const int fd =
          ::open(self->path.c_str(),
                 O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, kFileMode);
      struct stat st = {};
      if (fd >= 0 && (::fstat(fd, &st) != 0 || !base::untrusted_reason(st, self->path).empty())) {
        ::close(fd);
        return fstrm_res_failure;
      }
      self->fd = fd;
      return self->fd >= 0 ? fstrm_res_success : fstrm_res_failure;
    }
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (self->path.size() >= sizeof(sa.sun_path)) return fstrm_res_failure;
    std::memcpy(sa.sun_path, self->path.data(), self->path.size());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fstrm_res_failure;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
      ::close(fd);
      return fstrm_res_failure;
    }
    self->fd = fd;
    return fstrm_res_success;
  }
  static fstrm_res close(void* obj) {
    auto* self = static_cast<Sink*>(obj);
    if (self->fd >= 0) ::close(self->fd);
    self->fd = -1;
    return fstrm_res_success;
  }
  static fstrm_res destroy(void* obj) {
    auto* self = static_cast<Sink*>(obj);
    if (self->fd >= 0) ::close(self->fd);
    delete self;
    return fstrm_res_success;
  }
  // The socket's handshake (ACCEPT, FINISH): exactly `n` bytes, blocking.
  static fstrm_res read(void* obj, void* data, std::size_t n) {
    auto* self = static_cast<Sink*>(obj);
    auto* p = static_cast<uint8_t*>(data);
    while (n > 0) {
      const ssize_t r = ::read(self->fd, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return fstrm_res_failure;
      p += r;
      n -= static_cast<std::size_t>(r);
    }
    return fstrm_res_success;
  }
  // Writes pieces[0, count) whole, retrying after EINTR and short writes.
  bool write_all(int count) {
    iovec* v = pieces.data();
    while (count > 0) {
      ssize_t w = 0;
      if (kind == Kind::File) {
        w = ::writev(fd, v, count);
      } else {
        msghdr msg{};
        msg.msg_iov = v;
        msg.msg_iovlen = static_cast<std::size_t>(count);
        w = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
      }
      if (w < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      auto left = static_cast<std::size_t>(w);
      while (count > 0 && left >= v->iov_len) {
        left -= v->iov_len;
        ++v;
        --count;
      }
      if (count > 0) {
        v->iov_base = static_cast<uint8_t*>(v->iov_base) + left;
        v->iov_len -= left;
      }
    }
    return true;
  }
  static fstrm_res write(void* obj, const iovec* iov, int iovcnt) {
    auto* self = static_cast<Sink*>(obj);
    int n = 0;
    for (int i = 0; i < iovcnt; ++i)
      taken_over(iov[i].iov_base);
    for (int i = 0; i < iovcnt; ++i) {
      if (iov[i].iov_len == 4 && i + 1 < iovcnt) {
        uint32_t be = 0;
        std::memcpy(&be, iov[i].iov_base, 4);
        if (be != 0 && ntohl(be) == iov[i + 1].iov_len) continue;  // fstrm's length: dropped
      }
      if (iov[i].iov_len == 0) continue;
      if (n == kMaxPieces) {
        if (!self->write_all(n)) return fstrm_res_failure;
        n = 0;
      }
      self->pieces[static_cast<std::size_t>(n++)] = iov[i];
    }
    if (n > 0 && !self->write_all(n)) return fstrm_res_failure;
    return fstrm_res_success;
  }
};

// RAII for the fstrm option objects.
struct WriterOptions {
  fstrm_writer_options* p = fstrm_writer_options_init();
  ~WriterOptions() { fstrm_writer_options_destroy(&p); }
};
struct IothrOptions {
  fstrm_iothr_options* p = fstrm_iothr_options_init();
  ~IothrOptions() { fstrm_iothr_options_destroy(&p); }
};

}  // namespace

// Frame buffers for one queue, reused instead of malloc'd per frame: the worker takes them,
// the I/O thread gives them back once written (fstrm's free_func). glibc's per-thread caches
// cannot help with that pattern (every buffer is freed by another thread than the one that
// allocated it), and malloc/free were a fifth of the per-message cost.
//
// Returned buffers travel through a single-producer (I/O thread), single-consumer (worker)
// ring big enough for every slot, so it never overflows. Each slot holds one batch.
class DnstapWriter::FramePool {
 public:
  static constexpr std::size_t kSlot = DnstapWriter::kBatch;
  static constexpr std::size_t kSlotsPerChunk = 16;

  explicit FramePool(std::size_t max_slots) : max_slots_(max_slots) {
    std::size_t cap = 1;
    while (cap < max_slots)
      cap <<= 1;
    ring_.resize(cap);
    mask_ = cap - 1;
    spare_.reserve(1);
  }

  /// Worker thread: a buffer of kSlot bytes, or nullptr.
  uint8_t* take() noexcept {
    if (!spare_.empty()) {
      uint8_t* p = spare_.back();
      spare_.pop_back();
      return p;
    }
    const std::size_t h = head_.load(std::memory_order_relaxed);
    if (h != tail_.load(std::memory_order_acquire)) {
      uint8_t* p = ring_[h & mask_];
      head_.store(h + 1, std::memory_order_relaxed);
      return p;
    }
    if (carved_ == max_slots_) return nullptr;
    if (carved_ % kSlotsPerChunk == 0) {
      chunks_.push_back(std::make_unique_for_overwrite<uint8_t[]>(kSlot * kSlotsPerChunk));
    }
    uint8_t* p = chunks_.back().get() + (carved_ % kSlotsPerChunk) * kSlot;
    ++carved_;
    return p;
  }

  /// fstrm's free_func for pooled frames (the I/O thread, or whoever destroys the iothr).
  static void give_back(void* buf, void* pool) {
    auto* self = static_cast<FramePool*>(pool);
    const std::size_t t = self->tail_.load(std::memory_order_relaxed);
    self->ring_[t & self->mask_] = static_cast<uint8_t*>(buf);
    self->tail_.store(t + 1, std::memory_order_release);
  }
  /// The worker keeps a buffer fstrm did not take (not through the ring: the I/O thread is
  /// its only producer).
  void untake(uint8_t* p) noexcept { spare_.push_back(p); }

 private:
  const std::size_t max_slots_;
  std::vector<uint8_t*> ring_;
  std::size_t mask_ = 0;
  alignas(64) std::atomic<std::size_t> head_{0};  // worker
  alignas(64) std::atomic<std::size_t> tail_{0};  // I/O thread
  alignas(64) std::size_t carved_ = 0;            // worker
  std::vector<std::unique_ptr<uint8_t[]>> chunks_;
  std::vector<uint8_t*> spare_;  // worker
};

std::optional<std::string> check_dnstap_target(std::string_view target) {
  constexpr std::string_view kAllowed =
      "expected the path of a Frame Streams file to write (its directory must exist), or "
      "unix:PATH for a Frame Streams socket of 1 to 107 bytes, e.g. /var/log/hourglass/dnstap "
      "or unix:/run/dnstap.sock";
  if (target.empty()) return std::string(kAllowed);
  if (is_unix(target)) {
    const std::string_view path = target.substr(kUnixPrefix.size());
    if (path.empty() || path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return std::string(kAllowed);
    }
    return std::nullopt;
  }
  const std::string path(target);
  struct stat st = {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return "this is a directory; " + std::string(kAllowed);
  }
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return "the directory " + quote(dir) + " does not exist; " + std::string(kAllowed);
  }
  return std::nullopt;
}

DnstapWriter::DnstapWriter(const Options& options, DnstapCounters& counters)
    : options_(options),
      prefix_(dnstap::encode_prefix(
          {reinterpret_cast<const uint8_t*>(options.identity.data()), options.identity.size()},
          {reinterpret_cast<const uint8_t*>(options.version.data()), options.version.size()})),
      counters_(counters) {}

Checked<std::unique_ptr<DnstapWriter>> DnstapWriter::open(const Options& options,
                                                          DnstapCounters& counters) {
  using R = Checked<std::unique_ptr<DnstapWriter>>;
  std::unique_ptr<DnstapWriter> self(new DnstapWriter(options, counters));

  WriterOptions wopt;
  fstrm_writer_options_add_content_type(wopt.p, kContentType.data(), kContentType.size());
  auto* sink = new Sink;
  if (is_unix(options.target)) {
    sink->kind = Sink::Kind::Unix;
    sink->path = options.target.substr(kUnixPrefix.size());  // connected by the I/O thread
  } else {
    // Client addresses and names: readable by hourglassd's user only, whatever the umask
    // and whatever mode an older file had. O_NOFOLLOW: a symbolic link planted at the path
    // must not make hourglassd truncate what it points at; O_NONBLOCK: a FIFO there must not
    // wedge the start. No O_TRUNC: a file that is already there is truncated only once
    // fstat() shows it is one hourglassd may use (base/checked_open.h: owned by root or
    // its user, writable by no one else) - one another user made would otherwise be filled
    // with the query log for that user to read.
    const int fd = ::open(options.target.c_str(),
                          O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, kFileMode);
    if (fd < 0) {
      const int err = errno;
      delete sink;
      return R::failure("--dnstap " + quote(options.target) + ": cannot create the file (" +
                        (err == ELOOP ? std::string("it is a symbolic link; give the path of the "
                                                    "file itself")
                                      : std::string(std::strerror(err))) +
                        ")");
    }
    struct stat st = {};
    std::string refused;
    if (::fstat(fd, &st) != 0) {
      refused = std::string("cannot stat it (") + std::strerror(errno) + ")";
    } else if (auto why = base::untrusted_reason(st, options.target); !why.empty()) {
      refused = why + "; it was left as it is";
    } else if (::ftruncate(fd, 0) != 0 || ::fchmod(fd, kFileMode) != 0) {
      refused = "cannot empty it or make it mode 0600 (" + std::string(std::strerror(errno)) + ")";
    }
    if (!refused.empty()) {
      ::close(fd);
      delete sink;
      return R::failure("--dnstap " + quote(options.target) + ": " + refused +
                        "; give the path of a file hourglassd may create");
    }
    self->file_dev_ = st.st_dev;
    self->file_ino_ = st.st_ino;
    sink->path = options.target;
    sink->fd = fd;
  }
  fstrm_rdwr* rdwr = fstrm_rdwr_init(sink);
  fstrm_rdwr_set_open(rdwr, &Sink::open);
  fstrm_rdwr_set_close(rdwr, &Sink::close);
  fstrm_rdwr_set_destroy(rdwr, &Sink::destroy);
  fstrm_rdwr_set_write(rdwr, &Sink::write);
  // A read function makes fstrm's writer do the socket's handshake (READY, ACCEPT, START and
  // at the end STOP, FINISH); a file gets START and STOP only.
  if (sink->kind == Sink::Kind::Unix) fstrm_rdwr_set_read(rdwr, &Sink::read);
  fstrm_writer* writer = fstrm_writer_init(wopt.p, &rdwr);  // takes rdwr and the sink
  if (writer == nullptr && rdwr != nullptr) fstrm_rdwr_destroy(&rdwr);
  if (writer == nullptr) {
    return R::failure("--dnstap " + quote(options.target) + ": cannot set up the fstrm writer");
  }

  IothrOptions iopt;
  fstrm_iothr_options_set_num_input_queues(iopt.p, std::max(1U, options.queues));
  fstrm_iothr_options_set_input_queue_size(iopt.p, options.queue_size);
  fstrm_iothr_options_set_queue_model(iopt.p, FSTRM_IOTHR_QUEUE_MODEL_SPSC);
  fstrm_iothr_options_set_reopen_interval(iopt.p, 1);
  // An entry is a batch of frames (up to kBatch bytes). The I/O thread is woken once a queue
  // holds 128 batches (and at least every second by its flush timer) and writes up to 64 KiB
  // per writev.
  fstrm_iothr_options_set_queue_notify_threshold(iopt.p, std::min(128U, options.queue_size / 2));
  fstrm_iothr_options_set_buffer_hint(iopt.p, FSTRM_IOTHR_BUFFER_HINT_MAX);
  fstrm_iothr_options_set_output_queue_size(iopt.p, kOutputQueue);
  // The I/O thread must not take the daemon's signals (SIGTERM, SIGHUP go to its signalfd):
  // it starts with every signal blocked, whenever the writer is opened.
  sigset_t all;
  sigset_t saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  self->iothr_ = fstrm_iothr_init(iopt.p, &writer);  // takes the writer
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (self->iothr_ == nullptr) {
    if (writer != nullptr) fstrm_writer_destroy(&writer);
    return R::failure("--dnstap " + quote(options.target) + ": cannot start the fstrm I/O thread");
  }
  for (unsigned i = 0; i < std::max(1U, options.queues); ++i) {
    // Every batch in flight: a full input queue, the I/O thread's output queue, the one
    // being filled.
    self->pools_.push_back(std::make_unique<FramePool>(options.queue_size + kOutputQueue + 1));
    fstrm_iothr_queue* q = fstrm_iothr_get_input_queue_idx(self->iothr_, i);
    if (q == nullptr) return R::failure("--dnstap: fstrm gave no input queue " + std::to_string(i));
    self->queues_.push_back(q);
  }
  self->batches_.resize(self->queues_.size());
  return self;
}

DnstapWriter::~DnstapWriter() {
  // No worker writes to this writer any more (each flushed its queue when it let go of it);
  // what a caller left unflushed goes now, before the STOP frame.
  for (unsigned q = 0; q < batches_.size(); ++q)
    flush(q);
  if (iothr_ != nullptr) fstrm_iothr_destroy(&iothr_);
}

void DnstapWriter::write(unsigned queue, const dnstap::Message& m) noexcept {
  if (queue >= queues_.size()) {
    counters_.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Identity and version come pre-encoded (prefix_): the same bytes open every frame. A frame
  // is measured and written in one pass straight into the queue's batch, after room for its
  // length; when the batch has no room left it is submitted and the frame goes into a new one.
  Batch& b = batches_[queue];
  FramePool& pool = *pools_[queue];
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (b.buf == nullptr) {
      b.buf = pool.take();
      if (b.buf == nullptr) {  // every batch in flight: the queue is full
        counters_.dropped.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    const std::size_t room = kBatch - b.used;
    const std::size_t n =
        room > 4 ? dnstap::encode_prefixed(m, prefix_, {b.buf + b.used + 4, room - 4}) : 0;
    if (n > 0) {
      base::store_u32(b.buf + b.used, static_cast<uint32_t>(n));
      b.used += 4 + n;
      ++b.frames;
      return;
    }
    if (b.frames == 0) break;  // larger than a whole batch
    flush(queue);
  }
  write_alone(queue, m);
}

void DnstapWriter::write_alone(unsigned queue, const dnstap::Message& m) noexcept {
  // A frame larger than a batch (a big TCP answer) goes as a batch of its own, in order: the
  // batch being filled was submitted before it.
  flush(queue);
  const dnstap::EncodedSize size = dnstap::measure_prefixed(m, prefix_.size());
  auto* buf =
      static_cast<uint8_t*>(std::malloc(4 + size.total));  // NOLINT(cppcoreguidelines-no-malloc)
  if (buf == nullptr) {
    counters_.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  base::store_u32(buf, static_cast<uint32_t>(size.total));
  dnstap::encode_prefixed(m, size, prefix_, buf + 4);
  // fstrm frees the buffer once written; on failure it stays ours.
  handed_over(buf);
  if (fstrm_iothr_submit(iothr_, queues_[queue], buf, 4 + size.total, fstrm_free_wrapper,
                         nullptr) != fstrm_res_success) {
    std::free(buf);  // NOLINT(cppcoreguidelines-no-malloc)
    counters_.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counters_.written.fetch_add(1, std::memory_order_relaxed);
}

void DnstapWriter::flush(unsigned queue) noexcept {
  if (queue >= batches_.size()) return;
  Batch& b = batches_[queue];
  if (b.frames == 0) return;
  FramePool& pool = *pools_[queue];
  // fstrm hands the buffer back to the pool once written; on failure it stays ours.
  handed_over(b.buf);
  if (fstrm_iothr_submit(iothr_, queues_[queue], b.buf, b.used, &FramePool::give_back, &pool) ==
      fstrm_res_success) {
    counters_.written.fetch_add(b.frames, std::memory_order_relaxed);
    b.buf = nullptr;
  } else {
    counters_.dropped.fetch_add(b.frames, std::memory_order_relaxed);
  }
  b.used = 0;
  b.frames = 0;
}

bool DnstapWriter::still_current() const noexcept {
  if (is_unix(options_.target)) return true;
  struct stat st = {};
  if (::stat(options_.target.c_str(), &st) != 0) return false;
  return static_cast<uint64_t>(st.st_dev) == file_dev_ &&
         static_cast<uint64_t>(st.st_ino) == file_ino_;
}

dnstap::Timestamp dnstap_time(int64_t ns) noexcept {
  if (ns < 0) ns = 0;
  return {static_cast<uint64_t>(ns / 1'000'000'000), static_cast<uint32_t>(ns % 1'000'000'000)};
}

dnstap::Timestamp dnstap_now() noexcept {
  return dnstap_time(base::wall_count());
}

namespace {

void set_peer(dnstap::Message& m, const sockaddr* sa, std::span<const uint8_t>& addr,
              std::optional<uint32_t>& port) noexcept {
  if (sa == nullptr) return;
  if (sa->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(sa);
    m.family = dnstap::Family::Inet;
    addr = {reinterpret_cast<const uint8_t*>(&v4->sin_addr), 4};
    port = ntohs(v4->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(sa);
    m.family = dnstap::Family::Inet6;
    addr = {reinterpret_cast<const uint8_t*>(&v6->sin6_addr), 16};
    port = ntohs(v6->sin6_port);
  }
}

}  // namespace

void dnstap_set_query_peer(dnstap::Message& m, const sockaddr* sa) noexcept {
  set_peer(m, sa, m.query_address, m.query_port);
}

void dnstap_set_response_peer(dnstap::Message& m, const sockaddr* sa) noexcept {
  set_peer(m, sa, m.response_address, m.response_port);
}

}  // namespace hg::resolver
