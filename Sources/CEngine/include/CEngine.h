#ifndef CENGINE_H
#define CENGINE_H

#include <stdint.h>
#include <stddef.h>

/// Thin wrappers over what Glibc's Swift module leaves out (epoll, eventfd, accept4 are GNU
/// extensions; `struct epoll_event` is packed).

int jotter_epoll_create(void);
int jotter_epoll_add(int epoll, int fd, uint32_t events, uint64_t token);
int jotter_epoll_modify(int epoll, int fd, uint32_t events, uint64_t token);
int jotter_epoll_remove(int epoll, int fd);
/// Waits up to `timeout_ms`; fills `tokens` and `events` with up to `capacity` ready entries.
int jotter_epoll_wait(int epoll, uint64_t *tokens, uint32_t *events, int capacity, int timeout_ms);

/// A non-blocking eventfd, to wake a loop from another thread.
int jotter_eventfd(void);

/// Accepts a connection (non-blocking, close-on-exec, TCP_NODELAY) and writes its peer's
/// address as text into `address` ("127.0.0.1", "::1"). -1 when none is waiting.
int jotter_accept(int listener, char *address, size_t capacity);

enum {
    JOTTER_EPOLL_IN = 0x001,
    JOTTER_EPOLL_OUT = 0x004,
    JOTTER_EPOLL_ERR = 0x008,
    JOTTER_EPOLL_HUP = 0x010,
    JOTTER_EPOLL_EXCLUSIVE = 1 << 28,
};

#endif
