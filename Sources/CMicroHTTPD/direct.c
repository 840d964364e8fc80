#include "CMicroHTTPD.h"
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Answers written past libmicrohttpd (see jotter_mhd_send_direct in CMicroHTTPD.h). */

#define JOTTER_ROUND16(n) (((n) + 15) & ~(size_t)15)

size_t jotter_mhd_reply_room(struct MHD_Connection *connection, size_t pool_size) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (info == NULL) return 0;
    size_t head = info->header_size + 144;  /* what a grown read buffer keeps past the head */
    if (head < pool_size / 2) head = pool_size / 2;
    /* struct MHD_HTTP_Header: 7 words, rounded to 16 */
    size_t used = JOTTER_ROUND16(head)
        + 64 * (size_t)MHD_get_connection_values(connection, MHD_HEADER_KIND | MHD_COOKIE_KIND | MHD_GET_ARGUMENT_KIND, NULL, NULL);
    const char *cookie = NULL;
    size_t cookie_size = 0;
    if (MHD_lookup_connection_value_n(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_COOKIE, 6, &cookie, &cookie_size) == MHD_YES)
        used += JOTTER_ROUND16(cookie_size + 1);
    return used < pool_size ? pool_size - used : 0;
}

/* GnuTLS is loaded with libmicrohttpd when it was built with TLS; looked up at run time so
   that building needs no GnuTLS headers. */
typedef ssize_t (*jotter_tls_send)(void *session, const void *data, size_t size);
#define JOTTER_GNUTLS_E_AGAIN (-28)
#define JOTTER_GNUTLS_E_INTERRUPTED (-52)

static int jotter_wait_writable(int fd, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    return timeout_ms > 0 && poll(&p, 1, timeout_ms) == 1;
}

int jotter_mhd_send_direct(struct MHD_Connection *connection, const void *data, size_t size, int timeout_ms) {
    int fd = jotter_mhd_connection_fd(connection);
    if (fd < 0) return 0;
    void *session = NULL;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info != NULL) session = info->tls_session;
    jotter_tls_send tls_send = NULL;
    if (session != NULL) {
        tls_send = (jotter_tls_send)dlsym(RTLD_DEFAULT, "gnutls_record_send");
        if (tls_send == NULL) return 0;
    }
    const char *bytes = data;
    size_t sent = 0;
    int waits = 0;
    while (sent < size) {
        ssize_t n;
        int again;
        if (tls_send != NULL) {
            n = tls_send(session, bytes + sent, size - sent);
            again = (n == JOTTER_GNUTLS_E_AGAIN || n == JOTTER_GNUTLS_E_INTERRUPTED);
        } else {
            n = send(fd, bytes + sent, size - sent, MSG_NOSIGNAL);
            again = (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
        }
        if (n > 0) { sent += (size_t)n; continue; }
        /* A client that reads nothing gets no more than timeout_ms of this thread. */
        if (!again || waits++ > 0 || !jotter_wait_writable(fd, timeout_ms)) break;
    }
    if (tls_send == NULL) shutdown(fd, SHUT_WR);
    return sent == size;
}

void jotter_http_date(char *buffer) {
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    static const char *const days[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
    static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    snprintf(buffer, 30, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[utc.tm_wday], utc.tm_mday,
             months[utc.tm_mon], utc.tm_year + 1900, utc.tm_hour, utc.tm_min, utc.tm_sec);
}
