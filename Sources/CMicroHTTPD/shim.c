#include "CMicroHTTPD.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-connection state kept by the shim: the client address as text, formatted once. */
typedef struct jotter_connection {
    char address[INET6_ADDRSTRLEN];
} jotter_connection;

static void jotter_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                     enum MHD_ConnectionNotificationCode code) {
    (void)cls;
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
        *socket_context = state;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        free(*socket_context);
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
        MHD_OPTION_NOTIFY_CONNECTION, jotter_notify_connection, NULL,
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
