/* net.c: deadlines over blocking sockets, name resolution, plain TCP. */
#define _GNU_SOURCE
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/time.h>
#include <sys/un.h>
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

int hb_net_unix(const char *path, hb_addr *out, char *err, size_t errlen)
{
    struct sockaddr_un *un = (struct sockaddr_un *)&out->sa;
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof un->sun_path) {
        snprintf(err, errlen, "a Unix socket's path is 1 to %zu bytes, not %zu: %s",
                 sizeof un->sun_path - 1, len, path);
        return -1;
    }
    memset(out, 0, sizeof *out);
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, path, len);
    out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    return 1;
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

/* One address: the transport's non-blocking steps, each waited for by the
 * deadline, then a blocking socket. Returns 0, or -1 with errno and s
 * closed. */
static int open_one(hb_sock *s, const hb_addr *a, int64_t deadline)
{
    int rc = s->tp->connect_start(s, a);
    if (rc < 0)
        return -1;
    if (rc == 1 && (hb_sock_wait(s, POLLOUT, deadline) != 0 || s->tp->connect_done(s) != 0))
        goto error;
    while (s->before_handshake != NULL && (rc = s->before_handshake(s, s->before_arg)) != 0) {
        if (rc < 0 ||
            hb_sock_wait(s, s->wants == HB_SOCK_WANT_WRITE ? POLLOUT : POLLIN, deadline) != 0)
            goto error;
    }
    while (s->tp->handshake != NULL && s->tp->handshake(s) != 0) {
        if (errno != EAGAIN && errno != EINTR)
            goto error;
        if (hb_sock_wait(s, s->wants == HB_SOCK_WANT_WRITE ? POLLOUT : POLLIN, deadline) != 0)
            goto error;
    }
    if (fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK) != 0)
        goto error;
    return 0;
error:
    rc = errno;
    s->tp->close(s);
    errno = rc;
    return -1;
}

int hb_sock_open(hb_sock *s, const hb_addr *addrs, int n, int64_t deadline)
{
    int err = EHOSTUNREACH;
    for (int i = 0; i < n; i++) {
        if (open_one(s, &addrs[i], deadline) == 0) {
            /* Start both timeouts unset so the first wait sets them. */
            s->rcvtimeo = s->sndtimeo = 0;
            return i;
        }
        err = errno;
        /* A deadline, an interrupt, or a server reached that refused the
         * transport's opening (EPROTO): no other address would do better. */
        if (err == ETIMEDOUT || err == EINTR || err == EPROTO || err == EACCES)
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
        ssize_t n = s->tp->writev(s, iov, iovcnt, 0);
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

int hb_sock_alpn_is(hb_sock *s, const char *proto)
{
    const char *got = s->tp->alpn != NULL ? s->tp->alpn(s) : NULL;
    return got != NULL && strcmp(got, proto) == 0;
}

void hb_sock_close(hb_sock *s)
{
    if (s->fd >= 0)
        s->tp->close(s);
}

void hb_sock_release(hb_sock *s)
{
    hb_sock_close(s);
    if (s->keep != NULL && s->tp->release != NULL)
        s->tp->release(s);
    s->keep = NULL;
}

const char *hb_sock_strerror(hb_sock *s, int err)
{
    if (err == EPROTO && s->tp->error != NULL)
        return s->tp->error(s);
    return strerror(err);
}

int hb_sock_set_blocking(hb_sock *s, int64_t tick_ns)
{
    struct timeval tv = {.tv_sec = (time_t)(tick_ns / 1000000000),
                         .tv_usec = (suseconds_t)(tick_ns % 1000000000 / 1000)};
    int flags = fcntl(s->fd, F_GETFL);
    if (flags < 0 || fcntl(s->fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
        setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
        return -1;
    return 0;
}

void hb_sock_abort_on_close(hb_sock *s)
{
    struct linger lg = {1, 0};
    setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

void hb_sock_shutdown(hb_sock *s)
{
    if (s->fd >= 0)
        shutdown(s->fd, SHUT_RDWR);
}

/* A new non-blocking stream socket for a (TCP or a Unix socket),
 * connecting; TCP_NODELAY over TCP, as every request is one write that
 * should leave at once. */
static int tcp_socket(hb_sock *s, const hb_addr *a)
{
    int one = 1;
    int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (a->sa.ss_family != AF_UNIX)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* Before connect: the receive buffer sets the window scale the SYN
     * offers (as ab's -b does; a refusal leaves the kernel's). */
    if (s->buffer > 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &s->buffer, sizeof s->buffer);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &s->buffer, sizeof s->buffer);
    }
    s->fd = fd;
    return 0;
}

static void tcp_close(hb_sock *s)
{
    close(s->fd);
    s->fd = -1;
}

static int tcp_connect_start(hb_sock *s, const hb_addr *a)
{
    if (tcp_socket(s, a) != 0)
        return -1;
    if (connect(s->fd, (const struct sockaddr *)&a->sa, a->len) == 0)
        return 0;
    if (errno == EINPROGRESS) {
        s->wants = HB_SOCK_WANT_WRITE;
        return 1;
    }
    int err = errno;
    tcp_close(s);
    errno = err;
    return -1;
}

static int tcp_connect_done(hb_sock *s)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return -1;
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

static int tcp_attach(hb_sock *s, int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s->fd = fd;
    return 0;
}

static ssize_t tcp_read(hb_sock *s, void *buf, size_t len)
{
    ssize_t n = recv(s->fd, buf, len, 0);
    if (n < 0)
        s->wants = HB_SOCK_WANT_READ;
    return n;
}

static ssize_t tcp_writev(hb_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
    int f = MSG_NOSIGNAL | (flags & HB_SOCK_MORE ? MSG_MORE : 0) |
            (flags & HB_SOCK_DONTWAIT ? MSG_DONTWAIT : 0);
    ssize_t n;
    if (iovcnt == 1) {
        n = send(s->fd, iov->iov_base, iov->iov_len, f); /* the loop's every request */
    } else {
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = (struct iovec *)iov;
        m.msg_iovlen = (size_t)iovcnt;
        n = sendmsg(s->fd, &m, f);
    }
    if (n < 0)
        s->wants = HB_SOCK_WANT_WRITE;
    return n;
}

static ssize_t tcp_sendfile(hb_sock *s, int file_fd, off_t *off, size_t n)
{
    ssize_t r = sendfile(s->fd, file_fd, off, n);
    if (r < 0)
        s->wants = HB_SOCK_WANT_WRITE;
    return r;
}

static ssize_t tcp_splice(hb_sock *s, int pipe_fd, size_t n, int in)
{
    unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
    ssize_t r = in ? splice(s->fd, NULL, pipe_fd, NULL, n, flags)
                   : splice(pipe_fd, NULL, s->fd, NULL, n, flags);
    if (r < 0)
        s->wants = in ? HB_SOCK_WANT_READ : HB_SOCK_WANT_WRITE;
    return r;
}

static int tcp_idle_ok(hb_sock *s)
{
    char byte;
    ssize_t n = recv(s->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static void tcp_shutdown_write(hb_sock *s)
{
    shutdown(s->fd, SHUT_WR);
}

const hb_transport hb_net_tcp = {
    .name = "tcp",
    .connect_start = tcp_connect_start,
    .connect_done = tcp_connect_done,
    .attach = tcp_attach,
    .read = tcp_read,
    .writev = tcp_writev,
    .sendfile = tcp_sendfile,
    .splice = tcp_splice,
    .idle_ok = tcp_idle_ok,
    .shutdown_write = tcp_shutdown_write,
    .close = tcp_close,
};
