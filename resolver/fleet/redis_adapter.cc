#include "resolver/fleet/redis_adapter.h"

#include <hiredis/async.h>

#include <memory>

namespace hg::resolver {

namespace {

// One per attached context; deleted by the cleanup hook. `alive` outlives it, so the fd
// callback can tell that redisAsyncHandleRead() freed the context (an error, or the server
// closed the connection) before it goes on to the write side.
struct Watch {
  EventLoop* loop = nullptr;
  redisAsyncContext* ac = nullptr;
  int fd = -1;
  bool reading = false;
  bool writing = false;
  bool registered = false;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  void update() {
    const auto interest = static_cast<Interest>((reading ? 1 : 0) | (writing ? 2 : 0));
    if (registered) {
      loop->modify_fd(fd, interest);
      return;
    }
    registered = loop->add_fd(fd, interest, [this, alive = alive](FdEvents ev) {
      redisAsyncContext* c = ac;
      if (ev.readable || ev.error || ev.hangup) {
        // On EPOLLERR/HUP without data, the read sees the error and hiredis disconnects.
        redisAsyncHandleRead(c);
        if (!*alive) return;
      }
      if (ev.writable) redisAsyncHandleWrite(c);
    });
  }
};

void add_read(void* p) {
  auto* w = static_cast<Watch*>(p);
  if (w->reading) return;
  w->reading = true;
  w->update();
}
void del_read(void* p) {
  auto* w = static_cast<Watch*>(p);
  if (!w->reading) return;
  w->reading = false;
  w->update();
}
void add_write(void* p) {
  auto* w = static_cast<Watch*>(p);
  if (w->writing) return;
  w->writing = true;
  w->update();
}
void del_write(void* p) {
  auto* w = static_cast<Watch*>(p);
  if (!w->writing) return;
  w->writing = false;
  w->update();
}
void cleanup(void* p) {
  auto* w = static_cast<Watch*>(p);
  if (w->registered) w->loop->remove_fd(w->fd);
  *w->alive = false;
  w->ac->ev.data = nullptr;
  delete w;
}

}  // namespace

bool redis_attach(EventLoop& loop, redisAsyncContext* ac) {
  if (ac == nullptr || ac->ev.data != nullptr || ac->c.fd < 0) return false;
  auto* w = new Watch;
  w->loop = &loop;
  w->ac = ac;
  w->fd = ac->c.fd;
  ac->ev.addRead = add_read;
  ac->ev.delRead = del_read;
  ac->ev.addWrite = add_write;
  ac->ev.delWrite = del_write;
  ac->ev.cleanup = cleanup;
  ac->ev.data = w;
  // A non-blocking connect completes when the socket turns writable; hiredis reports it
  // (onConnect) on that first write event, so listen for it even before any command.
  add_write(w);
  return w->registered;
}

}  // namespace hg::resolver
