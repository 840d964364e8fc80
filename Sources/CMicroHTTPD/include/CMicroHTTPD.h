#ifndef CMICROHTTPD_H
#define CMICROHTTPD_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

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

/// A response whose body is a copy of `size` bytes at `data`.
struct MHD_Response *jotter_mhd_response_copy(size_t size, const void *data);

#endif
