/* conn.c: one blocking keep-alive client connection: its socket (connect,
 * tunnel, the failures' words) and HTTP/1.1 over it. Another protocol
 * (conn_h2.c) sits beside it behind c->proto, using the socket's calls
 * declared in conn.h; this file calls it only through that pointer. */
#include "conn.h"

#include "tls.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read sizes: a head read leaves room for a typical response; a body read
 * asks for what is left, up to this much at a time. */
#define CONN_HEAD_READ 4096
#define BODY_READ (1u << 20)
/* After a response larger than this the buffer is given back. */
/* Idle longer than this, a kept-alive socket is looked at before reuse. */
#define IDLE_CHECK_NS 1000000

hb_status hb_conn_fail(hb_conn *c, hb_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    hb_conn_close(c);
    return st;
}

hb_status hb_conn_init(hb_conn *c, const hb_transport *tp, const char *host, const char *port,
                       double timeout, uint64_t max_body)
{
    memset(c, 0, sizeof *c);
    hb_sock_init(&c->sock, tp, (int64_t)(timeout * 1e9));
    c->max_body = max_body;
    c->host = strdup(host);
    c->port = strdup(port);
    if (c->host == NULL || c->port == NULL) {
        hb_conn_free(c);
        return HB_ERR_NOMEM;
    }
    return HB_OK;
}

void hb_conn_close(hb_conn *c)
{
    hb_sock_close(&c->sock);
    if (c->proto != NULL)
        c->proto->closed(c); /* (its session was the socket's) */
    hb_buf_clear(&c->rx);
    hb_buf_shrink(&c->rx, HB_CONN_KEEP_BUF);
    c->pending = 0;
    c->reusable = 0;
    c->served = 0;
}

void hb_conn_free(hb_conn *c)
{
    hb_conn_close(c);
    hb_sock_release(&c->sock);
    hb_buf_free(&c->rx);
    if (c->proto != NULL)
        c->proto->release(c);
    c->proto = NULL;
    free(c->host);
    free(c->port);
    free(c->unix_path);
    free(c->tunnel_req);
    hb_tunnel_free(&c->tn);
    c->host = c->port = c->unix_path = c->tunnel_req = NULL;
}

/* hb_sock's before_handshake: the CONNECT's steps. */
static int tunnel_step(hb_sock *s, void *arg)
{
    hb_conn *c = arg;
    int rc = hb_tunnel_step(&c->tn, s);
    if (rc == HB_TUNNEL_OPEN) {
        c->tunnel_open = 1;
        return 0;
    }
    if (rc == HB_TUNNEL_WAIT)
        return 1;
    if (rc == HB_TUNNEL_REFUSED)
        errno = EACCES;
    return -1;
}

hb_status hb_conn_set_tunnel(hb_conn *c, const char *request, size_t len)
{
    char *copy = malloc(len);
    if (copy == NULL)
        return HB_ERR_NOMEM;
    memcpy(copy, request, len);
    free(c->tunnel_req);
    c->tunnel_req = copy;
    c->tunnel_len = len;
    c->sock.before_handshake = tunnel_step;
    c->sock.before_arg = c;
    return HB_OK;
}

hb_status hb_conn_set_unix(hb_conn *c, const char *path)
{
    hb_addr a;
    if (hb_net_unix(path, &a, c->error, sizeof c->error) < 0)
        return HB_ERR_CONNECT;
    char *copy = strdup(path);
    if (copy == NULL)
        return HB_ERR_NOMEM;
    hb_conn_close(c);
    free(c->unix_path);
    c->unix_path = copy;
    c->addrs[0] = a;
    c->naddrs = 1;
    return HB_OK;
}

/* Where c connects, for messages: host:port, or the Unix socket's path. */
static const char *conn_where(const hb_conn *c, char *buf, size_t len)
{
    if (c->unix_path != NULL)
        return c->unix_path;
    snprintf(buf, len, "%s:%s", c->host, c->port);
    return buf;
}

hb_status hb_conn_wait_failed(hb_conn *c, int err, const char *what)
{
    if (err == ETIMEDOUT)
        return hb_conn_fail(c, HB_ERR_TIMEOUT, "timed out after %.3f s %s",
                            (double)c->sock.timeout / 1e9, what);
    if (err == EINTR)
        return hb_conn_fail(c, HB_ERR_INTERRUPTED, "interrupted %s", what);
    if (err == ENOMEM)
        return hb_conn_fail(c, HB_ERR_NOMEM, "out of memory %s", what);
    if (err == EPROTO)
        return hb_conn_fail(c, HB_ERR_TLS, "TLS failed %s: %s", what,
                            hb_sock_strerror(&c->sock, err));
    return hb_conn_fail(c, HB_ERR_IO, "%s %s", strerror(err), what);
}

hb_status hb_conn_open(hb_conn *c, int64_t deadline)
{
    if (c->naddrs == 0) {
        c->naddrs = hb_net_resolve(c->host, c->port, c->addrs, HB_CONN_MAX_ADDRS, c->error,
                                   sizeof c->error);
        if (c->naddrs < 0) {
            c->naddrs = 0;
            return HB_ERR_CONNECT;
        }
    }
    if (c->tunnel_req != NULL) {
        hb_tunnel_begin(&c->tn, c->tunnel_req, c->tunnel_len);
        c->tunnel_open = 0;
    }
    int i = hb_sock_open(&c->sock, c->addrs, c->naddrs, deadline);
    if (i < 0) {
        int err = errno;
        char where[300];
        if (c->tunnel_req != NULL && !c->tunnel_open && err != ETIMEDOUT && err != EINTR &&
            c->tn.sent > 0) {
            const hb_response *r = &c->tn.head;
            const char *head = hb_buf_rdptr(&c->tn.reply);
            if (err == EACCES)
                return hb_conn_fail(c, HB_ERR_CONNECT, "the proxy %s answered CONNECT with %d %.*s",
                                    conn_where(c, where, sizeof where), r->status,
                                    (int)r->reason_len, head + r->reason_off);
            if (err == EPROTO)
                return hb_conn_fail(c, HB_ERR_PROTOCOL, "the proxy's answer to CONNECT: %s",
                                    hb_tunnel_error(&c->tn));
            return hb_conn_fail(c, HB_ERR_CONNECT, "the proxy %s closed before answering CONNECT",
                                conn_where(c, where, sizeof where));
        }
        if (err == ETIMEDOUT || err == EINTR)
            return hb_conn_wait_failed(c, err, "connecting");
        if (err == EPROTO)
            return hb_conn_fail(c, HB_ERR_TLS, "TLS handshake with %s failed: %s",
                                conn_where(c, where, sizeof where),
                                hb_sock_strerror(&c->sock, err));
        return hb_conn_fail(c, HB_ERR_CONNECT, "cannot connect to %s: %s",
                            conn_where(c, where, sizeof where), strerror(err));
    }
    if (i > 0) {
        /* Try the address that answered first next time. */
        hb_addr a = c->addrs[i];
        c->addrs[i] = c->addrs[0];
        c->addrs[0] = a;
    }
    c->connects++;
    return HB_OK;
}

/* Reads more bytes into rx, with room for at least `want`. Returns the
 * count, 0 at end of stream, or -1 with errno. */
static ssize_t conn_fill(hb_conn *c, size_t want, int64_t deadline)
{
    if (hb_buf_reserve(&c->rx, want) != 0)
        return -1;
    ssize_t n = hb_sock_read(&c->sock, hb_buf_wrptr(&c->rx), hb_buf_room(&c->rx), deadline);
    if (n > 0) {
        hb_buf_commit(&c->rx, (size_t)n);
        c->bytes_received += (uint64_t)n;
    }
    return n;
}

hb_status hb_conn_cut_short(hb_conn *c, ssize_t n, const char *fmt, ...)
{
    int err = errno;
    if (n < 0 && err != ECONNRESET)
        return hb_conn_wait_failed(c, err, "reading the response");
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return hb_conn_fail(c, HB_ERR_INCOMPLETE, "connection %s%s", n < 0 ? "reset" : "closed", what);
}

/* Reads the head of the final response into rx, skipping interim ones.
 * *got counts the bytes received, so the caller knows whether any came. */
static hb_status read_head(hb_conn *c, int flags, int64_t deadline, size_t *got)
{
    int pflags = (flags & HB_REQ_HEAD) ? HB_PARSE_HEAD_REQUEST : 0;
    for (;;) {
        hb_response_reset(&c->resp);
        int rc;
        while ((rc = hb_parse_response(&c->resp, hb_buf_rdptr(&c->rx), hb_buf_size(&c->rx),
                                       pflags)) == HB_PARSE_MORE) {
            size_t had = hb_buf_size(&c->rx);
            ssize_t n = conn_fill(c, CONN_HEAD_READ, deadline);
            if (n <= 0) {
                if (*got == 0 && had == 0)
                    return hb_conn_cut_short(c, n, " before any response byte");
                return hb_conn_cut_short(c, n, " after %zu bytes of the response head", had);
            }
            *got += (size_t)n;
        }
        if (rc == HB_PARSE_ERROR && c->resp.error == hb_parse_not_http) {
            char got_text[128];
            hb_parse_excerpt(hb_buf_rdptr(&c->rx), hb_buf_size(&c->rx), got_text, sizeof got_text);
            return hb_conn_fail(c, HB_ERR_PROTOCOL, "%s: got \"%s\"", c->resp.error, got_text);
        }
        if (rc == HB_PARSE_ERROR)
            return hb_conn_fail(c, HB_ERR_PROTOCOL, "%s", c->resp.error);
        if (c->resp.status == 101)
            return hb_conn_fail(c, HB_ERR_PROTOCOL, "101 Switching Protocols is not supported");
        if (c->resp.status >= 200)
            return HB_OK;
        /* Interim response (RFC 9110 section 15.2): skip it. */
        hb_buf_consume(&c->rx, c->resp.head_len);
    }
}

/* Takes body bytes at rx offset `at` (from the read pointer): counts them
 * and, unless discarding, slides them down to the end of the kept body. */
static int conn_take_body(hb_conn *c, size_t at, size_t n, size_t *kept, int flags)
{
    if (c->body_len + n > c->max_body)
        return -1;
    c->body_len += n;
    if (!(flags & HB_REQ_DISCARD)) {
        char *p = hb_buf_rdptr(&c->rx);
        size_t to = c->body_off + *kept;
        if (to != at)
            memmove(p + to, p + at, n);
        *kept += n;
    }
    return 0;
}

/* Reads the body the head announced. Everything after the head is
 * processed in place: body bytes are kept (or dropped) and framing bytes
 * dropped, so rx always ends with the kept body. */
static hb_status read_body(hb_conn *c, int flags, int64_t deadline)
{
    const hb_response *r = &c->resp;
    hb_body body;
    size_t kept = 0;
    int rc = HB_PARSE_MORE, leftover = 0;

    hb_body_init(&body, r->body, r->content_length);
    c->body_off = r->head_len;
    c->body_len = 0;
    if (r->body == HB_BODY_LENGTH && r->content_length > c->max_body)
        return hb_conn_fail(c, HB_ERR_PROTOCOL, "Content-Length %llu exceeds max_body %llu",
                            (unsigned long long)r->content_length, (unsigned long long)c->max_body);
    for (;;) {
        size_t raw = c->body_off + kept, size = hb_buf_size(&c->rx);
        /* Kept data only ever moves down, below raw: the bytes still to
         * decode stay where they are. */
        do {
            size_t used, off, n;
            rc = hb_body_feed(&body, hb_buf_rdptr(&c->rx) + raw, size - raw, &used, &off, &n);
            if (rc == HB_PARSE_ERROR)
                return hb_conn_fail(c, HB_ERR_PROTOCOL, "%s", body.error);
            if (n > 0 && conn_take_body(c, raw + off, n, &kept, flags) != 0)
                goto too_large;
            raw += used;
        } while (rc == HB_PARSE_MORE && raw < size);
        leftover = rc == HB_PARSE_DONE && raw < size;
        /* Drop everything after the kept body: framing, discarded data, and
         * bytes the server sent after the response. */
        c->rx.len = c->rx.off + c->body_off + kept;
        if (rc == HB_PARSE_DONE)
            break;
        size_t want = CONN_HEAD_READ;
        if (r->body == HB_BODY_LENGTH)
            want = body.left < BODY_READ ? (size_t)body.left : BODY_READ;
        else if (r->body == HB_BODY_CLOSE)
            want = 65536;
        ssize_t n = conn_fill(c, want, deadline);
        if (n == 0 && hb_body_end(&body) == HB_PARSE_DONE)
            break;
        if (n <= 0) {
            if (r->body == HB_BODY_LENGTH)
                return hb_conn_cut_short(c, n, ": got %llu of %llu body bytes",
                                         (unsigned long long)c->body_len,
                                         (unsigned long long)r->content_length);
            if (r->body == HB_BODY_CHUNKED)
                return hb_conn_cut_short(c, n, " inside the chunked body, after %llu body bytes",
                                         (unsigned long long)c->body_len);
            return hb_conn_cut_short(c, n, " before the end of the body, after %llu body bytes",
                                     (unsigned long long)c->body_len);
        }
    }
    c->pending = c->body_off + kept;
    c->reusable = r->keep_alive && !leftover;
    return HB_OK;
too_large:
    return hb_conn_fail(c, HB_ERR_PROTOCOL, "response body exceeds max_body %llu",
                        (unsigned long long)c->max_body);
}

/* Whether a kept-alive socket idle since the last response is still worth
 * a request, as curl and urllib3 ask before reuse: unread bytes or an EOF
 * waiting on it mean the server is done with it (or out of step). Asked
 * only after IDLE_CHECK_NS of idleness, so back-to-back requests pay
 * nothing. */
static int still_open(hb_conn *c, int64_t now)
{
    return now - c->idle_since < IDLE_CHECK_NS || c->sock.tp->idle_ok(&c->sock);
}

hb_status hb_conn_request(hb_conn *c, const struct iovec *req, int iovcnt, int flags)
{
    if (c->proto != NULL) {
        if (c->pending > 0) {
            hb_buf_consume(&c->rx, c->pending);
            c->pending = 0;
        }
        return c->proto->request(c, req, iovcnt, flags);
    }
    int64_t now = hb_now_ns(), deadline = now + c->sock.timeout;
    size_t req_len = 0;

    if (c->pending > 0) {
        hb_buf_consume(&c->rx, c->pending);
        c->pending = 0;
        hb_buf_shrink(&c->rx, HB_CONN_KEEP_BUF);
    }
    if (!c->reusable || (c->sock.fd >= 0 && !still_open(c, now)))
        hb_conn_close(c);
    for (int i = 0; i < iovcnt; i++)
        req_len += req[i].iov_len;

    for (int attempt = 0;; attempt++) {
        if (c->sock.fd < 0) {
            hb_status st = hb_conn_open(c, deadline);
            if (st != HB_OK)
                return st;
        }
        struct iovec iov[HB_CONN_MAX_IOV];
        memcpy(iov, req, (size_t)iovcnt * sizeof *iov);
        int sent = hb_sock_writev(&c->sock, iov, iovcnt, deadline) == 0;
        if (!sent && errno != EPIPE && errno != ECONNRESET)
            return hb_conn_wait_failed(c, errno, "sending the request");
        if (sent)
            c->bytes_sent += req_len;
        /* Even when the write failed the server may have answered (a 413
         * before the body, say): read what it sent. */
        size_t got = 0;
        uint64_t served = c->served;
        hb_status st = read_head(c, flags, deadline, &got);
        if (st == HB_OK)
            st = read_body(c, flags, deadline);
        if (st == HB_OK) {
            if (!sent || (flags & HB_REQ_CLOSE))
                c->reusable = 0;
            c->served++;
            c->requests++;
            c->idle_since = hb_now_ns();
            if (!c->reusable) {
                /* Give the socket back now; the response stays in rx. */
                hb_sock_close(&c->sock);
                c->served = 0;
            }
            return HB_OK;
        }
        if (st == HB_ERR_INCOMPLETE && got == 0 && served > 0 && attempt == 0 &&
            (flags & HB_REQ_IDEMPOTENT)) {
            /* The server closed the idle connection as the request left. */
            c->retries++;
            continue;
        }
        if (st == HB_ERR_INCOMPLETE && got == 0 && !sent)
            snprintf(c->error, sizeof c->error, "connection closed while sending the request");
        return st;
    }
}
