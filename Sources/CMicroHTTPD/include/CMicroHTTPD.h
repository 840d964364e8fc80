#ifndef CMICROHTTPD_H
#define CMICROHTTPD_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Bounds how long a connection may take to send a request's header section, and keeps room
/// in the connection table for new clients: see `jotter_guard_create`.
typedef struct jotter_guard jotter_guard;

/// A guard for one daemon. A connection must complete each request's header section within
/// `header_timeout_ms` of opening (or of its previous request's end, for keep-alive); a sweep
/// every 250 ms shuts down those that don't. When more than `soft_limit` connections are open,
/// each new one shuts down the connection that has waited longest for its header section
/// (slow senders and idle keep-alive connections go first, requests being served never).
jotter_guard *jotter_guard_create(unsigned int header_timeout_ms, unsigned int soft_limit);

/// Stops the sweep and frees the guard; call after `MHD_stop_daemon`.
void jotter_guard_destroy(jotter_guard *guard);

/// Connections shut down so far for taking too long over their header section, and to make room.
unsigned long jotter_guard_timed_out(jotter_guard *guard);
unsigned long jotter_guard_evicted(jotter_guard *guard);

/// The connection's header section is complete (first access-handler call).
void jotter_mhd_headers_received(struct MHD_Connection *connection);

/// The connection's request is over; its next header section is awaited.
void jotter_mhd_request_finished(struct MHD_Connection *connection);

/// Everything `jotter_mhd_start` needs; Swift fills it in, C turns it into MHD options.
typedef struct jotter_mhd_config {
    int listen_fd;                    /* an already bound and listening socket */
    unsigned int threads;             /* 1: one internal epoll thread; >1: a pool */
    unsigned int connection_limit;    /* total open connections */
    unsigned int per_ip_limit;        /* open connections from one client address; 0: none */
    unsigned int idle_timeout;        /* seconds a connection may stay idle */
    size_t connection_memory_limit;   /* bytes of per-connection memory pool */
    int turbo;                        /* MHD_USE_TURBO */
    const char *tls_cert;             /* PEM certificate (chain) for HTTPS through GnuTLS; NULL: plain HTTP */
    const char *tls_key;              /* PEM private key of tls_cert */
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *connection);
    void *uri_log_cls;
    MHD_RequestCompletedCallback completed;
    void *completed_cls;
    jotter_guard *guard;              /* required */
} jotter_mhd_config;

/// Starts a daemon with an internal epoll thread (or pool) on `config->listen_fd`.
struct MHD_Daemon *jotter_mhd_start(const jotter_mhd_config *config);

/// Whether this libmicrohttpd was built with TLS (GnuTLS).
int jotter_mhd_supports_tls(void);

/// The port the daemon's listening socket is bound to, or 0.
uint16_t jotter_mhd_bound_port(struct MHD_Daemon *daemon);

/// The number of connections the daemon has open right now.
unsigned int jotter_mhd_current_connections(struct MHD_Daemon *daemon);

/// The client address of a connection as text ("127.0.0.1", "::1"), computed once when the
/// connection opens; "-" when unknown.
const char *jotter_mhd_client_address(struct MHD_Connection *connection);

/// The socket of a connection, or -1.
int jotter_mhd_connection_fd(struct MHD_Connection *connection);

/// Sets a per-connection idle timeout in seconds (0: none), e.g. for long-lived event streams.
void jotter_mhd_set_connection_timeout(struct MHD_Connection *connection, unsigned int seconds);

/// Called from the URI-log callback with the request-target libmicrohttpd is about to parse:
/// ends its query right after the '?', so libmicrohttpd stores no GET arguments. We read the
/// query from the target ourselves; libmicrohttpd 0.9.75 allocates one record per argument
/// from the connection's memory pool and, when the pool runs out there, queues a 431 it then
/// never sends (the connection hangs until the idle timeout and its request never completes).
void jotter_mhd_skip_query_arguments(const char *uri);

/// A response whose body is a copy of `size` bytes at `data`.
struct MHD_Response *jotter_mhd_response_copy(size_t size, const void *data);

/// The least room libmicrohttpd 0.9.75 will have left in the connection's memory pool of
/// `pool_size` bytes to build a response's header section for the current request: the pool
/// less the head it parsed in place (the request line, every header line and the empty line;
/// rounded to 16, and at least the read buffer's first size, half the pool, since what was read
/// past the head stays there too; a read buffer grown for a larger head keeps up to 128 + 16
/// bytes past it), a 64-byte record per header field, cookie and query argument, and the copy
/// of the Cookie field its cookie parser makes. 0 before the header section is complete.
size_t jotter_mhd_reply_room(struct MHD_Connection *connection, size_t pool_size);

/// Writes `size` bytes of a complete HTTP response straight to the connection's socket (through
/// GnuTLS on HTTPS), bypassing libmicrohttpd, then shuts the sending side down. For answers
/// libmicrohttpd 0.9.75 cannot build: it writes a response's header section into the
/// connection's memory pool, and when the request head left too little room there it closes
/// the connection without a word. The caller then returns MHD_NO so libmicrohttpd closes the
/// connection. Waits at most `timeout_ms` for room in the socket's send buffer. Returns 1 when
/// every byte was handed to the kernel.
int jotter_mhd_send_direct(struct MHD_Connection *connection, const void *data, size_t size, int timeout_ms);

/// The current time as an IMF-fixdate ("Tue, 01 Dec 2026 12:00:59 GMT"), as libmicrohttpd's
/// Date header writes it; `buffer` holds at least 30 bytes.
void jotter_http_date(char *buffer);

#endif
