// EventLoop implementation: epoll for fds, a lazily pruned binary min-heap for timers, and an
// eventfd that other threads write to after queueing a task.
#include "resolver/net/event_loop.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

namespace hg::resolver {
namespace {

// epoll_event.data carries (generation << 32 | fd), so an event collected for a watch that
// was removed — and whose fd number was reused — in the same iteration is recognised as stale.
constexpr uint64_t kWakeToken = ~uint64_t{0};

uint64_t token(int fd, uint32_t generation) {
  return (uint64_t{generation} << 32) | static_cast<uint32_t>(fd);
}

uint32_t epoll_mask(Interest interest) {
  uint32_t m = 0;
  // EPOLLRDHUP only with read interest: it is level-triggered, so a half-closed socket
  // parked at Interest::None (back-pressure) would otherwise wake the loop forever.
  if (interest == Interest::Read || interest == Interest::ReadWrite) m |= EPOLLIN | EPOLLRDHUP;
  if (interest == Interest::Write || interest == Interest::ReadWrite) m |= EPOLLOUT;
  return m;
}

MonoTime system_now() {
  return std::chrono::floor<Millis>(std::chrono::steady_clock::now());
}

}  // namespace

EventLoop::EventLoop() : EventLoop(Options{}) {}

EventLoop::EventLoop(Options options) : options_(std::move(options)) {
  real_clock_ = !options_.clock;
  if (!options_.clock) options_.clock = system_now;
  if (options_.max_events < 1) options_.max_events = 1;
  events_.resize(static_cast<std::size_t>(options_.max_events));

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    int err = errno;
    close(epoll_fd_);
    throw std::system_error(err, std::generic_category(), "eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeToken;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    int err = errno;
    close(wake_fd_);
    close(epoll_fd_);
    throw std::system_error(err, std::generic_category(), "epoll_ctl(eventfd)");
  }
  update_now();
}

EventLoop::~EventLoop() {
  close(wake_fd_);
  close(epoll_fd_);
}

// --- fd watches ------------------------------------------------------------------------------

bool EventLoop::add_fd(int fd, Interest interest, FdCallback callback) {
  if (fd < 0) {
    errno = EBADF;
    return false;
  }
  auto idx = static_cast<std::size_t>(fd);
  if (idx < watches_.size() && watches_[idx]) {
    errno = EEXIST;
    return false;
  }
  uint32_t generation = next_generation_++;
  if (generation == 0) generation = next_generation_++;  // wrapped: 0 is never used
  epoll_event ev{};
  ev.events = epoll_mask(interest);
  ev.data.u64 = token(fd, generation);
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  if (idx >= watches_.size()) watches_.resize(idx + 1);
  watches_[idx] = std::make_unique<Watch>(Watch{std::move(callback), generation});
  return true;
}

bool EventLoop::modify_fd(int fd, Interest interest) {
  if (!watching(fd)) {
    errno = ENOENT;
    return false;
  }
  epoll_event ev{};
  ev.events = epoll_mask(interest);
  ev.data.u64 = token(fd, watches_[static_cast<std::size_t>(fd)]->generation);
  return epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) == 0;
}

bool EventLoop::remove_fd(int fd) {
  if (!watching(fd)) return false;
  // EBADF/ENOENT here only mean the caller closed the fd first; the kernel already dropped it.
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  graveyard_.push_back(std::move(watches_[static_cast<std::size_t>(fd)]));
  return true;
}

bool EventLoop::forget_fd(int fd) {
  if (!watching(fd)) return false;
  graveyard_.push_back(std::move(watches_[static_cast<std::size_t>(fd)]));
  return true;
}

bool EventLoop::watching(int fd) const noexcept {
  return fd >= 0 && static_cast<std::size_t>(fd) < watches_.size() &&
         watches_[static_cast<std::size_t>(fd)] != nullptr;
}

// --- timers ----------------------------------------------------------------------------------

TimerId EventLoop::add_timer(Millis delay, Callback callback) {
  return add_timer_at(now_ + std::max(delay, Millis{0}), std::move(callback));
}

TimerId EventLoop::add_timer_at(MonoTime when, Callback callback) {
  // Clamping to now_ keeps the heap invariant run_timers() relies on: a timer added during
  // this iteration is due no earlier than now_, so it sorts after every older due timer.
  when = std::max(when, now_);
  uint32_t slot = 0;
  if (!free_timer_slots_.empty()) {
    slot = free_timer_slots_.back();
    free_timer_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(timer_slots_.size());
    timer_slots_.emplace_back();
  }
  TimerSlot& s = timer_slots_[slot];
  s.callback = std::move(callback);
  s.live = true;
  ++live_timers_;
  const uint64_t timer = (uint64_t{s.generation} << 32) | slot;
  const TimerEntry e{when, next_timer_id_++, timer};
  if (queue_.empty() || !(queue_.back() > e)) {
    queue_.push_back(e);
  } else {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
  }
  return TimerId{timer};
}

bool EventLoop::first_in_queue() const noexcept {
  if (heap_.empty()) return true;
  if (queue_.empty()) return false;
  return heap_.front() > queue_.front();
}

void EventLoop::pop_first_timer() {
  if (first_in_queue()) {
    queue_.pop_front();
  } else {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
    heap_.pop_back();
  }
}

EventLoop::Callback EventLoop::take_timer(uint64_t timer) {
  const auto slot = static_cast<uint32_t>(timer);
  TimerSlot& s = timer_slots_[slot];
  Callback cb = std::move(s.callback);
  s.callback = nullptr;
  s.live = false;
  if (++s.generation == 0) s.generation = 1;
  free_timer_slots_.push_back(slot);
  --live_timers_;
  return cb;
}

bool EventLoop::cancel_timer(TimerId id) {
  if (!timer_live(id.value)) return false;
  take_timer(id.value);  // the callback and its captures are destroyed here
  compact_heap_if_wasteful();
  return true;
}

void EventLoop::compact_heap_if_wasteful() {
  const std::size_t entries = heap_.size() + queue_.size();
  if (entries < 1024 || entries < 2 * live_timers_) return;
  auto dead = [this](const TimerEntry& e) { return !timer_live(e.timer); };
  std::erase_if(heap_, dead);
  std::erase_if(queue_, dead);  // keeps the queue's order
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>{});
}

std::size_t EventLoop::run_timers() {
  std::size_t ran = 0;
  // Timers added by the callbacks below get ids >= limit and wait for the next iteration.
  const uint64_t limit = next_timer_id_;
  while (ran < options_.max_timers && !no_timers()) {
    const TimerEntry& first = first_timer();
    if (first.when > now_ || first.id >= limit) break;
    const uint64_t timer = first.timer;
    pop_first_timer();
    if (!timer_live(timer)) continue;  // cancelled
    Callback cb = take_timer(timer);
    cb();
    ++ran;
  }
  return ran;
}

// --- cross-thread ----------------------------------------------------------------------------

void EventLoop::post(Callback task) {
  {
    std::lock_guard lock(posted_mu_);
    posted_.push_back(std::move(task));
  }
  // One eventfd write per batch of posts: the loop clears wake_pending_ before taking the
  // queue, so a post that misses the batch always sees false and writes again.
  if (!wake_pending_.exchange(true, std::memory_order_acq_rel)) {
    uint64_t one = 1;
    // EAGAIN means the counter is already non-zero: the loop will wake anyway.
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
}

void EventLoop::stop() {
  stop_.store(true, std::memory_order_release);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void EventLoop::drain_wake_fd() {
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof count);
}

std::size_t EventLoop::run_posted() {
  wake_pending_.store(false, std::memory_order_release);
  {
    std::lock_guard lock(posted_mu_);
    running_posted_.swap(posted_);
  }
  std::size_t ran = running_posted_.size();
  for (auto& task : running_posted_)
    task();
  running_posted_.clear();
  return ran;
}

// --- running ---------------------------------------------------------------------------------

MonoTime EventLoop::update_now() {
  if (real_clock_) {  // one clock read gives both
    now_us_ = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now().time_since_epoch());
    now_ = MonoTime{std::chrono::floor<Millis>(now_us_)};
  } else {
    now_ = options_.clock();
    now_us_ = now_.time_since_epoch();
  }
  return now_;
}

int EventLoop::epoll_timeout(Millis max_wait) {
  // Skip cancelled entries so a dead deadline does not wake us early (harmless, but wasteful).
  while (!no_timers() && !timer_live(first_timer().timer))
    pop_first_timer();
  long long wait = max_wait.count() < 0 ? -1 : max_wait.count();
  if (!no_timers()) {
    // The cached now_ may be a whole iteration old; read the clock so a timer is not late.
    long long until = (first_timer().when - options_.clock()).count();
    if (until < 0) until = 0;
    if (wait < 0 || until < wait) wait = until;
  }
  if (wait > 24LL * 3600 * 1000) wait = 24LL * 3600 * 1000;
  return static_cast<int>(wait);
}

std::size_t EventLoop::dispatch_fds(int n) {
  std::size_t ran = 0;
  bool woken = false;
  for (int i = 0; i < n; ++i) {
    const epoll_event& ev = events_[static_cast<std::size_t>(i)];
    if (ev.data.u64 == kWakeToken) {
      woken = true;
      continue;
    }
    int fd = static_cast<int>(ev.data.u64 & 0xffffffffu);
    auto generation = static_cast<uint32_t>(ev.data.u64 >> 32);
    if (!watching(fd)) continue;  // removed earlier in this iteration
    Watch* w = watches_[static_cast<std::size_t>(fd)].get();
    if (w->generation != generation) continue;  // fd number reused by a newer watch
    FdEvents fe;
    fe.readable = (ev.events & EPOLLIN) != 0;
    fe.writable = (ev.events & EPOLLOUT) != 0;
    fe.error = (ev.events & EPOLLERR) != 0;
    fe.hangup = (ev.events & (EPOLLHUP | EPOLLRDHUP)) != 0;
    w->callback(fe);
    ++ran;
  }
  graveyard_.clear();
  if (woken) {
    drain_wake_fd();
    ran += run_posted();
  }
  return ran;
}

namespace {
thread_local EventLoop* t_current = nullptr;
}  // namespace

EventLoop* EventLoop::current() noexcept {
  return t_current;
}

void EventLoop::at_iteration_end(Callback task) {
  end_tasks_.push_back(std::move(task));
}

std::size_t EventLoop::run_once(Millis max_wait) {
  int timeout = epoll_timeout(max_wait);
  int n = epoll_wait(epoll_fd_, events_.data(), options_.max_events, timeout);
  if (n < 0) n = 0;  // EINTR: a signal; just go round again
  update_now();
  EventLoop* const outer = t_current;
  t_current = this;
  std::size_t ran = dispatch_fds(n);
  ran += run_timers();
  graveyard_.clear();
  while (!end_tasks_.empty()) {
    running_end_tasks_.swap(end_tasks_);
    for (auto& task : running_end_tasks_)
      task();
    ran += running_end_tasks_.size();
    running_end_tasks_.clear();
  }
  t_current = outer;
  return ran;
}

void EventLoop::run() {
  while (!stop_.load(std::memory_order_acquire))
    run_once(Millis{-1});
  stop_.store(false, std::memory_order_release);
}

}  // namespace hg::resolver
