#define _GNU_SOURCE
#include "CEngine.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>

int jotter_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static int control(int epoll, int operation, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epoll, operation, fd, &event);
}

int jotter_epoll_add(int epoll, int fd, uint32_t events, uint64_t token) { return control(epoll, EPOLL_CTL_ADD, fd, events, token); }
int jotter_epoll_modify(int epoll, int fd, uint32_t events, uint64_t token) { return control(epoll, EPOLL_CTL_MOD, fd, events, token); }
int jotter_epoll_remove(int epoll, int fd) { return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL); }

int jotter_epoll_wait(int epoll, uint64_t *tokens, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event ready[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epoll, ready, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        tokens[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
}

int jotter_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int jotter_accept(int listener, char *address, size_t capacity) {
    struct sockaddr_storage peer;
    socklen_t length = sizeof peer;
    int fd = accept4(listener, (struct sockaddr *)&peer, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return -1;
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    address[0] = 0;
    if (peer.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, address, (socklen_t)capacity);
    } else if (peer.ss_family == AF_INET6) {
        struct in6_addr *in6 = &((struct sockaddr_in6 *)&peer)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(in6)) inet_ntop(AF_INET, &in6->s6_addr[12], address, (socklen_t)capacity);
        else inet_ntop(AF_INET6, in6, address, (socklen_t)capacity);
    }
    if (address[0] == 0 && capacity > 1) { address[0] = '-'; address[1] = 0; }
    return fd;
}

int jotter_parse_http_date(const char *text, const char *format, int64_t *seconds) {
    struct tm parts;
    memset(&parts, 0, sizeof parts);
    const char *end = strptime(text, format, &parts);
    if (end == NULL || *end != 0) return 0;
    *seconds = (int64_t)timegm(&parts);
    return 1;
}
