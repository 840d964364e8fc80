#include "CMicroHTTPD.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

/* Per-connection state kept by the shim: the client address as text, formatted once, and the
   connection's place in its guard's list of connections awaiting a header section. */
typedef struct jotter_connection {
    char address[INET6_ADDRSTRLEN];
    int fd;
    uint64_t since;                   /* when the awaited header section began to be awaited */
    struct jotter_connection *prev, *next;
    int waiting;                      /* in the guard's list */
    jotter_guard *guard;
} jotter_connection;

struct jotter_guard {
    pthread_mutex_t lock;
    jotter_connection *head, *tail;   /* awaiting a header section, longest-waiting first */
    unsigned int open;
    unsigned int soft_limit;
    uint64_t header_timeout_us;
    unsigned long timed_out, evicted;
    int stopping;
    pthread_t sweeper;
};

static uint64_t jotter_now_us(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

/* Both with the guard's lock held. */
static void jotter_unlink(jotter_guard *g, jotter_connection *c) {
    if (!c->waiting) return;
    if (c->prev) c->prev->next = c->next; else g->head = c->next;
    if (c->next) c->next->prev = c->prev; else g->tail = c->prev;
    c->prev = c->next = NULL;
    c->waiting = 0;
}

static void jotter_append(jotter_guard *g, jotter_connection *c, uint64_t now) {
    jotter_unlink(g, c);
    c->since = now;
    c->prev = g->tail;
    if (g->tail) g->tail->next = c; else g->head = c;
    g->tail = c;
    c->waiting = 1;
}

/* Shutting the socket down (not closing it: it is still libmicrohttpd's) wakes its event loop,
   which then closes the connection. The descriptor stays this connection's while the lock is
   held: libmicrohttpd reports the close (and takes the lock) before it closes the socket. */
static void jotter_cut(jotter_guard *g, jotter_connection *c) {
    jotter_unlink(g, c);
    if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
}

static void *jotter_sweep(void *raw) {
    jotter_guard *g = raw;
    for (;;) {
        usleep(250000);
        pthread_mutex_lock(&g->lock);
        if (g->stopping) { pthread_mutex_unlock(&g->lock); return NULL; }
        uint64_t now = jotter_now_us();
        while (g->head != NULL && now - g->head->since >= g->header_timeout_us) {
            jotter_cut(g, g->head);
            g->timed_out++;
        }
        pthread_mutex_unlock(&g->lock);
    }
}

jotter_guard *jotter_guard_create(unsigned int header_timeout_ms, unsigned int soft_limit) {
    jotter_guard *g = calloc(1, sizeof *g);
    if (g == NULL) return NULL;
    pthread_mutex_init(&g->lock, NULL);
    g->header_timeout_us = (uint64_t)header_timeout_ms * 1000u;
    g->soft_limit = soft_limit;
    if (pthread_create(&g->sweeper, NULL, jotter_sweep, g) != 0) {
        pthread_mutex_destroy(&g->lock);
        free(g);
        return NULL;
    }
    return g;
}

void jotter_guard_destroy(jotter_guard *g) {
    if (g == NULL) return;
    pthread_mutex_lock(&g->lock);
    g->stopping = 1;
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->sweeper, NULL);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

unsigned long jotter_guard_timed_out(jotter_guard *g) {
    pthread_mutex_lock(&g->lock);
    unsigned long n = g->timed_out;
    pthread_mutex_unlock(&g->lock);
    return n;
}

unsigned long jotter_guard_evicted(jotter_guard *g) {
    pthread_mutex_lock(&g->lock);
    unsigned long n = g->evicted;
    pthread_mutex_unlock(&g->lock);
    return n;
}

static jotter_connection *jotter_state(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return (info == NULL) ? NULL : info->socket_context;
}

void jotter_mhd_headers_received(struct MHD_Connection *connection) {
    jotter_connection *c = jotter_state(connection);
    if (c == NULL || !c->waiting) return;
    pthread_mutex_lock(&c->guard->lock);
    jotter_unlink(c->guard, c);
    pthread_mutex_unlock(&c->guard->lock);
}

void jotter_mhd_request_finished(struct MHD_Connection *connection) {
    jotter_connection *c = jotter_state(connection);
    if (c == NULL) return;
    pthread_mutex_lock(&c->guard->lock);
    jotter_append(c->guard, c, jotter_now_us());
    pthread_mutex_unlock(&c->guard->lock);
}

static void jotter_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                     enum MHD_ConnectionNotificationCode code) {
    jotter_guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        jotter_connection *state = calloc(1, sizeof(jotter_connection));
        if (state == NULL) return;
        strcpy(state->address, "-");
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (info != NULL && info->client_addr != NULL) {
            const struct sockaddr *sa = info->client_addr;
            if (sa->sa_family == AF_INET) {
                inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, state->address, sizeof state->address);
            } else if (sa->sa_family == AF_INET6) {
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, state->address, sizeof state->address);
            }
        }
        info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        state->fd = info ? (int)info->connect_fd : -1;
        state->guard = g;
        pthread_mutex_lock(&g->lock);
        g->open++;
        if (g->open > g->soft_limit && g->head != NULL) {
            jotter_cut(g, g->head);
            g->evicted++;
        }
        jotter_append(g, state, jotter_now_us());
        pthread_mutex_unlock(&g->lock);
        *socket_context = state;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        jotter_connection *state = *socket_context;
        if (state == NULL) return;
        pthread_mutex_lock(&g->lock);
        jotter_unlink(g, state);
        g->open--;
        pthread_mutex_unlock(&g->lock);
        free(state);
        *socket_context = NULL;
    }
}

struct MHD_Daemon *jotter_mhd_start(const jotter_mhd_config *c) {
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
    if (c->turbo) flags |= MHD_USE_TURBO;
    /* A pool of one is the single internal thread: only ask for a pool when there are several. */
    unsigned int pool = c->threads > 1 ? c->threads : 0;
    /* HTTPS: GnuTLS inside libmicrohttpd, the certificate and key given in memory. */
    struct MHD_OptionItem tls[] = {
        { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)c->tls_cert },
        { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)c->tls_key },
        { MHD_OPTION_END, 0, NULL },
    };
    if (c->tls_cert != NULL) flags |= MHD_USE_TLS;
    else tls[0].option = MHD_OPTION_END;
    return MHD_start_daemon(
        flags, 0, NULL, NULL, c->handler, c->handler_cls,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)c->listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, pool,
        MHD_OPTION_CONNECTION_LIMIT, c->connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, c->per_ip_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, c->idle_timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, c->connection_memory_limit,
        MHD_OPTION_URI_LOG_CALLBACK, c->uri_log, c->uri_log_cls,
        MHD_OPTION_NOTIFY_COMPLETED, c->completed, c->completed_cls,
        MHD_OPTION_NOTIFY_CONNECTION, jotter_notify_connection, c->guard,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)0, /* our FramingCheck is stricter and answers 400 instead of closing silently */
        MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
}

int jotter_mhd_supports_tls(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

uint16_t jotter_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

unsigned int jotter_mhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

const char *jotter_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info == NULL || info->socket_context == NULL) return "-";
    return ((const jotter_connection *)info->socket_context)->address;
}

void jotter_mhd_set_connection_timeout(struct MHD_Connection *connection, unsigned int seconds) {
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

struct MHD_Response *jotter_mhd_response_copy(size_t size, const void *data) {
    return MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY);
}

int jotter_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int)info->connect_fd : -1;
}

void jotter_mhd_skip_query_arguments(const char *uri) {
    /* libmicrohttpd found the '?' before calling the URI-log callback and parses the
       arguments from the byte after it once the callback returns; the target lies in the
       connection's own (writable) read buffer. */
    char *query = strchr(uri, '?');
    if (query != NULL) query[1] = '\0';
}
