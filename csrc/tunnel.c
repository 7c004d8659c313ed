/* tunnel.c: CONNECT tunnels through a forward proxy (see tunnel.h). */
#include "tunnel.h"

#include <errno.h>
#include <string.h>

void hb_tunnel_begin(hb_tunnel *t, const char *request, size_t len)
{
    t->request = request;
    t->request_len = len;
    t->sent = 0;
    hb_buf_clear(&t->reply);
    hb_response_reset(&t->head);
    t->have_head = 0;
    t->body.error = NULL; /* no reason left over from a previous tunnel */
}

void hb_tunnel_free(hb_tunnel *t)
{
    hb_buf_free(&t->reply);
}

const char *hb_tunnel_error(const hb_tunnel *t)
{
    if (t->head.error != NULL)
        return t->head.error;
    if (t->body.error != NULL)
        return t->body.error;
    return "the proxy's answer is too long";
}

/* Parses what came: the head, then a refusal's body. Returns a step result,
 * or -1 with errno EPROTO. */
static int take_reply(hb_tunnel *t)
{
    const char *buf = hb_buf_rdptr(&t->reply);
    size_t len = hb_buf_size(&t->reply);
    if (!t->have_head) {
        int rc = hb_parse_response(&t->head, buf, len, 0);
        if (rc == HB_PARSE_MORE)
            return HB_TUNNEL_WAIT;
        if (rc == HB_PARSE_ERROR) {
            errno = EPROTO;
            return -1;
        }
        if (t->head.status < 200) { /* interim: the final answer follows */
            hb_buf_consume(&t->reply, t->head.head_len);
            hb_response_reset(&t->head);
            return take_reply(t);
        }
        /* Any 2xx opens the tunnel, whatever framing it claims (RFC 9110
         * section 9.3.6): the bytes after it are the origin's. */
        if (t->head.status < 300) {
            hb_buf_consume(&t->reply, t->head.head_len); /* what is left is theirs */
            return HB_TUNNEL_OPEN;
        }
        t->have_head = 1;
    }
    size_t off = t->head.head_len, used, doff, dlen;
    /* The body is fed whole each time: framing state restarts with it. */
    hb_body_init(&t->body, t->head.body, t->head.content_length);
    int rc = hb_body_feed(&t->body, buf + off, len - off, &used, &doff, &dlen);
    while (rc == HB_PARSE_MORE && off + used < len) {
        off += used;
        rc = hb_body_feed(&t->body, buf + off, len - off, &used, &doff, &dlen);
    }
    if (rc == HB_PARSE_ERROR) {
        errno = EPROTO;
        return -1;
    }
    return rc == HB_PARSE_DONE ? HB_TUNNEL_REFUSED : HB_TUNNEL_WAIT;
}

int hb_tunnel_step(hb_tunnel *t, hb_sock *s)
{
    while (t->sent < t->request_len) {
        struct iovec rest = {(char *)t->request + t->sent, t->request_len - t->sent};
        ssize_t n = hb_net_tcp.writev(s, &rest, 1, 0);
        if (n > 0) {
            t->sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            s->wants = HB_SOCK_WANT_WRITE;
            return HB_TUNNEL_WAIT;
        }
        return -1;
    }
    for (;;) {
        char buf[4096];
        ssize_t n = hb_net_tcp.read(s, buf, sizeof buf);
        if (n > 0) {
            if (hb_buf_size(&t->reply) + (size_t)n > HB_TUNNEL_MAX_REPLY) {
                t->head.error = NULL;
                t->body.error = NULL;
                errno = EPROTO;
                return -1;
            }
            if (hb_buf_append(&t->reply, buf, (size_t)n) != 0)
                return -1;
            int rc = take_reply(t);
            if (rc != HB_TUNNEL_WAIT)
                return rc;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            s->wants = HB_SOCK_WANT_READ;
            return HB_TUNNEL_WAIT;
        }
        if (n == 0) {
            /* A refusal read until close ends here. */
            if (t->have_head && hb_body_end(&t->body) == HB_PARSE_DONE)
                return HB_TUNNEL_REFUSED;
            errno = ECONNRESET;
        }
        return -1;
    }
}
