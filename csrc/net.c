/* net.c: deadlines over blocking sockets, name resolution, plain TCP. */
#define _GNU_SOURCE
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* How far a socket timeout may end after the deadline before it is moved:
 * a request that has waited less than this never pays a setsockopt. */
#define SLACK_NS 2000000

int hb_net_resolve(const char *host, const char *port, hb_addr *out, int max, char *err,
                   size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc == EAI_BADFLAGS || (rc != 0 && rc != EAI_SYSTEM)) {
        /* AI_ADDRCONFIG hides loopback on a host with no other address. */
        hints.ai_flags = 0;
        rc = getaddrinfo(host, port, &hints, &res);
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s:%s: %s", host, port,
                 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return -1;
    }
    int n = 0;
    for (struct addrinfo *ai = res; ai != NULL && n < max; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof out[n].sa)
            continue;
        memcpy(&out[n].sa, ai->ai_addr, ai->ai_addrlen);
        out[n].len = ai->ai_addrlen;
        n++;
    }
    freeaddrinfo(res);
    if (n == 0)
        snprintf(err, errlen, "cannot resolve %s:%s: no usable address", host, port);
    return n > 0 ? n : -1;
}

void hb_sock_init(hb_sock *s, const hb_transport *tp, int64_t timeout)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->tp = tp;
    s->timeout = timeout;
}

/* On EINTR: asks the callback whether to stop. Returns 1 to go on. */
static int carry_on(hb_sock *s)
{
    if (s->interrupted != NULL && s->interrupted(s->interrupt_arg)) {
        errno = EINTR;
        return 0;
    }
    return 1;
}

int hb_sock_wait(hb_sock *s, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - hb_now_ns();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {.fd = s->fd, .events = events};
        /* Round up so the wait never ends before the deadline. */
        int ms = left > 3600000000000LL ? 3600000 : (int)((left + 999999) / 1000000);
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno == EINTR && !carry_on(s))
            return -1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

int hb_net_bound_wait(int fd, int opt, int64_t *cur, int64_t left)
{
    if (left <= 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    if (*cur != 0 && *cur <= left + SLACK_NS && *cur >= left / 2)
        return 0;
    /* A zero timeval would mean no timeout at all. */
    int64_t us = left / 1000 > 0 ? left / 1000 : 1;
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000), .tv_usec = (suseconds_t)(us % 1000000)};
    if (setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv) != 0)
        return -1;
    *cur = left;
    return 0;
}

/* Bounds the next wait of kind `opt` on s by the deadline. */
static int track_deadline(hb_sock *s, int opt, int64_t *cur, int64_t deadline)
{
    return hb_net_bound_wait(s->fd, opt, cur, deadline - hb_now_ns());
}

int hb_sock_open(hb_sock *s, const hb_addr *addrs, int n, int64_t deadline)
{
    int err = EHOSTUNREACH;
    for (int i = 0; i < n; i++) {
        if (s->tp->open(s, &addrs[i], deadline) == 0) {
            /* Start both timeouts unset so the first wait sets them. */
            s->rcvtimeo = s->sndtimeo = 0;
            return i;
        }
        err = errno;
        if (err == ETIMEDOUT || err == EINTR)
            break;
    }
    errno = err;
    return -1;
}

ssize_t hb_sock_read(hb_sock *s, void *buf, size_t len, int64_t deadline)
{
    for (;;) {
        if (track_deadline(s, SO_RCVTIMEO, &s->rcvtimeo, deadline) != 0)
            return -1;
        ssize_t n = s->tp->read(s, buf, len);
        if (n >= 0)
            return n;
        if (errno == EINTR) {
            if (!carry_on(s))
                return -1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return -1;
        }
    }
}

int hb_sock_writev(hb_sock *s, struct iovec *iov, int iovcnt, int64_t deadline)
{
    while (iovcnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            iovcnt--;
            continue;
        }
        if (track_deadline(s, SO_SNDTIMEO, &s->sndtimeo, deadline) != 0)
            return -1;
        ssize_t n = s->tp->writev(s, iov, iovcnt);
        if (n < 0) {
            if (errno == EINTR) {
                if (!carry_on(s))
                    return -1;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
                return -1;
            }
            continue;
        }
        size_t left = (size_t)n;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

void hb_sock_close(hb_sock *s)
{
    if (s->fd >= 0)
        s->tp->close(s);
}

static int tcp_open(hb_sock *s, const hb_addr *a, int64_t deadline)
{
    int one = 1, err = 0;
    socklen_t errlen = sizeof err;
    int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    s->fd = fd;
    if (connect(fd, (const struct sockaddr *)&a->sa, a->len) != 0) {
        if (errno != EINPROGRESS)
            goto error;
        if (hb_sock_wait(s, POLLOUT, deadline) != 0)
            goto error;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen) != 0)
            goto error;
        if (err != 0) {
            errno = err;
            goto error;
        }
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        goto error;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
error:
    err = errno;
    close(fd);
    s->fd = -1;
    errno = err;
    return -1;
}

static ssize_t tcp_read(hb_sock *s, void *buf, size_t len)
{
    return recv(s->fd, buf, len, 0);
}

static ssize_t tcp_writev(hb_sock *s, const struct iovec *iov, int iovcnt)
{
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = (struct iovec *)iov;
    m.msg_iovlen = (size_t)iovcnt;
    return sendmsg(s->fd, &m, MSG_NOSIGNAL);
}

static int tcp_idle_ok(hb_sock *s)
{
    char byte;
    ssize_t n = recv(s->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static void tcp_close(hb_sock *s)
{
    close(s->fd);
    s->fd = -1;
}

const hb_transport hb_net_tcp = {"tcp", tcp_open, tcp_read, tcp_writev, tcp_idle_ok, tcp_close};
