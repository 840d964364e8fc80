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

/// TLS over a connection's socket (OpenSSL 3; tls.c). Reads and writes return a byte count or
/// one of these codes.
enum {
    JOTTER_TLS_WANT_READ = -1,
    JOTTER_TLS_WANT_WRITE = -2,
    /// The peer closed the connection (close_notify, or the socket's end).
    JOTTER_TLS_CLOSED = -3,
    JOTTER_TLS_FAILED = -4,
};

/// An SSL_CTX with the PEM certificate chain and private key (memory, not files), offering the
/// ALPN protocols `alpn` (wire form: length-prefixed names, ours first). NULL with the reason
/// in `error` when the files don't make one.
void *jotter_tls_context_create(const char *certificate, size_t certificate_length, const char *key, size_t key_length,
                                const unsigned char *alpn, size_t alpn_length, char *error, size_t error_capacity);
void jotter_tls_context_free(void *context);
/// A server-side SSL over `fd`; it keeps a reference to `context`.
void *jotter_tls_new(void *context, int fd);
void jotter_tls_free(void *ssl);
/// 0 once the handshake is done, else a JOTTER_TLS_* code.
long jotter_tls_handshake(void *ssl);
long jotter_tls_read(void *ssl, void *buffer, size_t capacity);
long jotter_tls_write(void *ssl, const void *buffer, size_t length);
/// Decrypted bytes OpenSSL holds that the socket will not announce again.
int jotter_tls_pending(void *ssl);
/// Sends close_notify (one non-blocking attempt).
void jotter_tls_shutdown(void *ssl);
/// The protocol ALPN chose ("h2", "http/1.1"), NUL-terminated in `protocol`; 0 when none.
size_t jotter_tls_alpn(void *ssl, char *protocol, size_t capacity);

enum {
    JOTTER_EPOLL_IN = 0x001,
    JOTTER_EPOLL_OUT = 0x004,
    JOTTER_EPOLL_ERR = 0x008,
    JOTTER_EPOLL_HUP = 0x010,
    JOTTER_EPOLL_EXCLUSIVE = 1 << 28,
};

/// An HTTP date (RFC 9110 §5.6.7) read with strptime(3) in `format`, the whole of `text`: its
/// Unix time in `seconds`, 1; 0 when `text` is not such a date. (strptime is an X/Open extension
/// Glibc's Swift module leaves out.)
int jotter_parse_http_date(const char *text, const char *format, int64_t *seconds);

#endif
