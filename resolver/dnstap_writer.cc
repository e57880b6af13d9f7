#include "resolver/dnstap_writer.h"

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

#include "resolver/text.h"

namespace hg::resolver {

using text::quote;

namespace {

constexpr std::string_view kContentType = "protobuf:dnstap.Dnstap";
constexpr std::string_view kUnixPrefix = "unix:";

bool is_unix(std::string_view target) {
  return target.substr(0, kUnixPrefix.size()) == kUnixPrefix;
}

// A file sink for fstrm_writer: we open the file ourselves (so that a bad path is reported at
// start-up and the inode is known for rotation), fstrm writes the frames through these
// callbacks on its I/O thread.
//
// fstrm hands over each frame as two pieces (its 4-byte length, then the frame), up to 128
// frames per call. Passed to writev as they are, those small pieces made the kernel's copy
// into the page cache the larger part of the I/O thread's time; so they are first copied
// into one buffer here and written with a single write() per call (per 64 KiB at most).
struct FileSink {
  static constexpr std::size_t kBuffer = 64 * 1024;

  std::string path;
  int fd = -1;
  std::unique_ptr<uint8_t[]> buf = std::make_unique_for_overwrite<uint8_t[]>(kBuffer);

  static fstrm_res open(void* obj) {
    auto* self = static_cast<FileSink*>(obj);
    if (self->fd >= 0) return fstrm_res_success;
    // Reopened after a write error (the file was opened at start): append, never truncate.
    self->fd = ::open(self->path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return self->fd >= 0 ? fstrm_res_success : fstrm_res_failure;
  }
  static fstrm_res close(void* obj) {
    auto* self = static_cast<FileSink*>(obj);
    if (self->fd >= 0) ::close(self->fd);
    self->fd = -1;
    return fstrm_res_success;
  }
  static fstrm_res destroy(void* obj) {
    auto* self = static_cast<FileSink*>(obj);
    if (self->fd >= 0) ::close(self->fd);
    delete self;
    return fstrm_res_success;
  }
  // Writes p[0, n) whole, retrying after EINTR and short writes.
  bool write_all(const uint8_t* p, std::size_t n) const {
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  static fstrm_res write(void* obj, const iovec* iov, int iovcnt) {
    auto* self = static_cast<FileSink*>(obj);
    std::size_t used = 0;
    for (int i = 0; i < iovcnt; ++i) {
      const auto* p = static_cast<const uint8_t*>(iov[i].iov_base);
      const std::size_t n = iov[i].iov_len;
      if (used + n > kBuffer) {
        if (!self->write_all(self->buf.get(), used)) return fstrm_res_failure;
        used = 0;
      }
      if (n > kBuffer) {  // larger than the buffer itself: straight from fstrm's memory
        if (!self->write_all(p, n)) return fstrm_res_failure;
        continue;
      }
      if (n > 0) std::memcpy(self->buf.get() + used, p, n);
      used += n;
    }
    if (used > 0 && !self->write_all(self->buf.get(), used)) return fstrm_res_failure;
    return fstrm_res_success;
  }
};

// RAII for the fstrm option objects.
struct WriterOptions {
  fstrm_writer_options* p = fstrm_writer_options_init();
  ~WriterOptions() { fstrm_writer_options_destroy(&p); }
};
struct UnixOptions {
  fstrm_unix_writer_options* p = fstrm_unix_writer_options_init();
  ~UnixOptions() { fstrm_unix_writer_options_destroy(&p); }
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
// ring big enough for every slot, so it never overflows. Frames larger than a slot, or
// any frame when every slot is in flight, use malloc as before.
class DnstapWriter::FramePool {
 public:
  static constexpr std::size_t kSlot = 512;
  static constexpr std::size_t kSlotsPerChunk = 256;

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
      "unix:PATH for a Frame Streams socket of 1 to 107 bytes, e.g. /var/log/hourglass.dnstap "
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
  struct stat st {};
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
  fstrm_writer* writer = nullptr;
  if (is_unix(options.target)) {
    const std::string path = options.target.substr(kUnixPrefix.size());
    UnixOptions uopt;
    fstrm_unix_writer_options_set_socket_path(uopt.p, path.c_str());
    writer = fstrm_unix_writer_init(uopt.p, wopt.p);
  } else {
    const int fd = ::open(options.target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return R::failure("--dnstap " + quote(options.target) + ": cannot create the file (" +
                        std::strerror(errno) + ")");
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      self->file_dev_ = st.st_dev;
      self->file_ino_ = st.st_ino;
    }
    auto* sink = new FileSink{options.target, fd};
    fstrm_rdwr* rdwr = fstrm_rdwr_init(sink);
    fstrm_rdwr_set_open(rdwr, &FileSink::open);
    fstrm_rdwr_set_close(rdwr, &FileSink::close);
    fstrm_rdwr_set_destroy(rdwr, &FileSink::destroy);
    fstrm_rdwr_set_write(rdwr, &FileSink::write);
    writer = fstrm_writer_init(wopt.p, &rdwr);  // takes rdwr (and the sink) on success
    if (writer == nullptr) {
      if (rdwr != nullptr) fstrm_rdwr_destroy(&rdwr);
    }
  }
  if (writer == nullptr) {
    return R::failure("--dnstap " + quote(options.target) + ": cannot set up the fstrm writer");
  }

  IothrOptions iopt;
  fstrm_iothr_options_set_num_input_queues(iopt.p, std::max(1U, options.queues));
  fstrm_iothr_options_set_input_queue_size(iopt.p, options.queue_size);
  fstrm_iothr_options_set_queue_model(iopt.p, FSTRM_IOTHR_QUEUE_MODEL_SPSC);
  fstrm_iothr_options_set_reopen_interval(iopt.p, 1);
  // Fewer, larger writes and fewer wake-ups of the I/O thread: it is woken once a queue
  // holds 1024 frames (and at least every second by its flush timer), and writes up to
  // 512 frames or 64 KiB per writev.
  fstrm_iothr_options_set_queue_notify_threshold(iopt.p, std::min(1024U, options.queue_size / 2));
  fstrm_iothr_options_set_buffer_hint(iopt.p, FSTRM_IOTHR_BUFFER_HINT_MAX);
  fstrm_iothr_options_set_output_queue_size(iopt.p, 512);
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
    // Every frame in flight: a full input queue, the I/O thread's output queue, one more.
    self->pools_.push_back(std::make_unique<FramePool>(options.queue_size + 512 + 1));
    fstrm_iothr_queue* q = fstrm_iothr_get_input_queue_idx(self->iothr_, i);
    if (q == nullptr) return R::failure("--dnstap: fstrm gave no input queue " + std::to_string(i));
    self->queues_.push_back(q);
  }
  return self;
}

DnstapWriter::~DnstapWriter() {
  if (iothr_ != nullptr) fstrm_iothr_destroy(&iothr_);
}

void DnstapWriter::write(unsigned queue, const dnstap::Message& m) noexcept {
  if (queue >= queues_.size()) {
    counters_.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Identity and version come pre-encoded (prefix_): the same bytes open every frame. Most
  // frames fit a pooled slot and are measured and written in one pass; a larger one (or any
  // when every slot is in flight) is measured first and gets a buffer of its own.
  FramePool& pool = *pools_[queue];
  uint8_t* buf = pool.take();
  std::size_t n = 0;
  if (buf != nullptr) {
    n = dnstap::encode_prefixed(m, prefix_, {buf, FramePool::kSlot});
    if (n == 0) {
      pool.untake(buf);
      buf = nullptr;
    }
  }
  const bool pooled = buf != nullptr;
  if (!pooled) {
    const dnstap::EncodedSize size = dnstap::measure_prefixed(m, prefix_.size());
    n = size.total;
    buf = static_cast<uint8_t*>(std::malloc(n));  // NOLINT(cppcoreguidelines-no-malloc)
    if (buf == nullptr) {
      counters_.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    dnstap::encode_prefixed(m, size, prefix_, buf);
  }
  // fstrm hands the buffer back (pool) or frees it once written; on failure it stays ours.
  const fstrm_res res =
      pooled ? fstrm_iothr_submit(iothr_, queues_[queue], buf, n, &FramePool::give_back, &pool)
             : fstrm_iothr_submit(iothr_, queues_[queue], buf, n, fstrm_free_wrapper, nullptr);
  if (res != fstrm_res_success) {
    if (pooled) {
      pool.untake(buf);
    } else {
      std::free(buf);  // NOLINT(cppcoreguidelines-no-malloc)
    }
    counters_.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counters_.written.fetch_add(1, std::memory_order_relaxed);
}

bool DnstapWriter::still_current() const noexcept {
  if (is_unix(options_.target)) return true;
  struct stat st {};
  if (::stat(options_.target.c_str(), &st) != 0) return false;
  return static_cast<uint64_t>(st.st_dev) == file_dev_ &&
         static_cast<uint64_t>(st.st_ino) == file_ino_;
}

int64_t dnstap_now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

dnstap::Timestamp dnstap_time(int64_t ns) noexcept {
  if (ns < 0) ns = 0;
  return {static_cast<uint64_t>(ns / 1'000'000'000), static_cast<uint32_t>(ns % 1'000'000'000)};
}

dnstap::Timestamp dnstap_now() noexcept {
  return dnstap_time(dnstap_now_ns());
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
