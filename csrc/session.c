/* session.c: one server-side connection as a state machine.
 *
 * Every transition, in one place (h11's rule); each state is one function
 * below (sess_head, sess_body, ...), and hb_sess_advance runs them until
 * one must wait.
 *
 *   state     on                                         next
 *   S_HEAD    bytes in, head incomplete                  S_HEAD, waiting to read (the
 *                                                        idle deadline, or the header
 *                                                        deadline from the head's first
 *                                                        byte; empty lines are bytes)
 *             a head that parses, with a body            S_BODY
 *             a head that parses, no body                S_DELAY or S_SEND (respond)
 *             a bad head, 413 or 503 from the head       S_SEND, closing after (reject)
 *             end of stream, error                       closed
 *   S_BODY    the body complete                          S_DELAY or S_SEND (respond)
 *             a bad chunk, 413, 503                      S_SEND, closing after (reject)
 *             more to come                               S_BODY, waiting to read (the
 *                                                        header deadline, from progress)
 *             end of stream, error                       closed
 *   S_DELAY   wake_at reached                            S_SEND
 *   S_SEND    the response out, kept alive               S_HEAD (pipelined bytes begin
 *                                                        the next head)
 *             out, closing, nothing unread, below 400    closed
 *             out, closing                               S_LINGER (sending side shut)
 *             would block                                S_SEND, waiting to write (the
 *                                                        send deadline, from progress)
 *             error                                      closed
 *   S_LINGER  bytes in (up to LINGER_MAX, LINGER_NS)     S_LINGER
 *             end of stream, error, past either limit    closed
 *   S_RELAY   (a proxy's request: relay.c moves it)      S_RELAY, waiting for either side
 *             the relayed response out                   as S_SEND's response out
 *             a refusal, 502, 504 before any byte        S_SEND, closing after (reject)
 *             a tunnel's end, a failure mid-response     closed
 *   S_H2      (an HTTP/2 connection: h2srv.c's session   S_H2, waiting to read, write or
 *             reads and answers its streams)             for a /delay
 *             a GOAWAY out, or the session over          S_LINGER (sending side shut)
 *             error                                      closed
 *   S_FAILED  (no memory for a head)                     closed
 *
 * The table STATES below is this one as data: each state's function and
 * where it may go; sess_enter holds every change to it when built with
 * HB_CHECK_STATES (the tests' and the sanitizer's builds).
 */
#define _GNU_SOURCE
#include "session.h"

#include "h2.h"
#include "h2srv.h"
#include "head.h"
#include "relay.h"

#include "net.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { S_HEAD = 0, S_BODY, S_DELAY, S_SEND, S_LINGER, S_RELAY, S_H2, S_FAILED, S_COUNT };

/* What a state function returns to go on to the next state at once; any
 * other value is the hb_want the driver waits for. */
#define GO_ON 0

/* Bytes of response a send call is offered at most, and what chunked and
 * read/write static responses stage in tx at a time. */
#define SEND_MAX (1u << 20)
#define STAGE 65536
#define CHUNK 8192
/* A closing connection is drained this long, at most this much, so the
 * client reads the response before it sees a reset (lingering close). */
#define LINGER_NS 2000000000LL
#define LINGER_MAX (1u << 20)
/* What an HTTP/2 session's output may stage in tx at a time: a client
 * that does not read holds no more of the server's memory than this. */
#define H2_OUT_BUDGET (256u * 1024)
/* The answer when the bodies held server-wide reach max_buffered. */
#define BUSY_TEXT "the server holds as many request bodies as it may; try again later\n"

#define SESS_COUNT(field) __atomic_add_fetch(&s->sh->field, 1, __ATOMIC_RELAXED)

static hb_want sess_head(hb_sess *s, int64_t now);
static hb_want sess_body(hb_sess *s, int64_t now);
static hb_want sess_delay(hb_sess *s, int64_t now);
static hb_want sess_send(hb_sess *s, int64_t now);
static hb_want sess_linger(hb_sess *s, int64_t now);
static hb_want sess_relay(hb_sess *s, int64_t now);
static hb_want sess_h2(hb_sess *s, int64_t now);
static hb_want sess_failed(hb_sess *s, int64_t now);

#define TO(state) (1u << (state))
/* Respond: wait out a /delay, or send (S_FAILED: no memory for the head). */
#define RESPOND (TO(S_DELAY) | TO(S_SEND) | TO(S_FAILED))
/* A response out: linger before the close, or the next request. */
#define OUT (TO(S_LINGER) | TO(S_HEAD))
static const struct {
    const char *name;
    hb_want (*step)(hb_sess *s, int64_t now); /* GO_ON, or what it waits for */
    unsigned next;                            /* TO(state) for each it may go to */
} STATES[S_COUNT] = {
    [S_HEAD] = {"head", sess_head, TO(S_BODY) | RESPOND | TO(S_RELAY) | TO(S_H2)},
    [S_BODY] = {"body", sess_body, RESPOND},
    [S_DELAY] = {"delay", sess_delay, RESPOND},
    [S_SEND] = {"send", sess_send, OUT},
    [S_LINGER] = {"linger", sess_linger, 0},
    [S_RELAY] = {"relay", sess_relay, OUT | RESPOND},
    [S_H2] = {"h2", sess_h2, TO(S_LINGER)},
    [S_FAILED] = {"failed", sess_failed, 0},
};

/* s goes to state `to`, which its table must hold (HB_CHECK_STATES). */
static void sess_enter(hb_sess *s, int to)
{
#ifdef HB_CHECK_STATES
    if (to != s->state && !(STATES[s->state].next & TO(to))) {
        fprintf(stderr, "httpbench: server session: %s -> %s is not in its table\n",
                STATES[s->state].name, STATES[to].name);
        abort();
    }
#endif
    s->state = to;
}

/* Out of memory for a head of a few hundred bytes: given up. */
static hb_want sess_failed(hb_sess *s, int64_t now)
{
    (void)s;
    (void)now;
    return HB_WANT_CLOSE;
}

int hb_sess_init(hb_sess *s, int fd, hb_srv_shared *sh, int64_t now, int blocking)
{
    memset(s, 0, sizeof *s);
    hb_sock_init(&s->sock, sh->transport ? sh->transport : &hb_net_tcp, 0);
    s->sock.shared = sh->transport_shared;
    if (s->sock.tp->attach(&s->sock, fd) != 0)
        return -1;
    s->sh = sh;
    s->blocking = blocking;
    s->plan.file_fd = -1;
    s->up_fd = -1;
    s->since = now;
    s->deadline = now + sh->idle_timeout;
    /* A transport that opens with a handshake (TLS) has it inside the first
     * reads: its bytes are the first head's, under the header deadline, so
     * a client stalling mid-handshake is cut off as a slow head is. */
    if (s->sock.tp->handshake != NULL) {
        s->head_begun = 1;
        s->deadline = now + sh->header_timeout;
    }
    s->heap_index = -1;
    return 0;
}

/* Whether static files go by the transport's sendfile (zero copy): asked
 * for, and a transport that lets the raw descriptor be written. */
static int zero_copy(const hb_sess *s)
{
    return s->sh->zero_copy && s->sock.tp->sendfile != NULL;
}

/* What to wait for after a call that would block: what the transport
 * said (for plain TCP, the direction of the call). */
static hb_want waiting(const hb_sess *s)
{
    return s->sock.wants == HB_SOCK_WANT_WRITE ? HB_WANT_WRITE : HB_WANT_READ;
}

/* The time for a wait's start or progress: the driver's `now`, except on a
 * blocking socket, where the call just made may itself have waited. */
static int64_t fresh(const hb_sess *s, int64_t now)
{
    return s->blocking ? hb_now_ns() : now;
}

/* Starts a wait (or restarts it after progress) at `since`, to end after
 * `timeout` ns. */
static void wait_from(hb_sess *s, int64_t since, int64_t timeout)
{
    s->since = since;
    s->deadline = since + timeout;
}

/* On a blocking socket, bounds the next call of kind opt (SO_RCVTIMEO or
 * SO_SNDTIMEO) by the deadline, so a thread waits for its own deadline and
 * nothing else. Returns 0, -1 when the deadline has passed (the caller acts
 * as if the call would block; the driver then finds the session expired),
 * or -2 on error. */
static int bound_wait(hb_sess *s, int opt)
{
    /* An HTTP/2 connection's read ends at its next /delay too. */
    int64_t until = s->deadline;
    if (s->state == S_H2 && opt == SO_RCVTIMEO && s->wake_at != 0 &&
        (until == 0 || s->wake_at < until))
        until = s->wake_at;
    if (!s->blocking || until == 0)
        return 0;
    int64_t *cur = opt == SO_RCVTIMEO ? &s->rcvtimeo : &s->sndtimeo;
    if (hb_net_bound_wait(s->sock.fd, opt, cur, until - hb_now_ns()) == 0)
        return 0;
    return errno == ETIMEDOUT ? -1 : -2;
}

static int reserve(hb_sess *s, uint64_t n)
{
    return hb_srv_reserve(s->sh, &s->reserved, n);
}

/* Gives back the body budget and the body. */
static void drop_body(hb_sess *s)
{
    hb_srv_release(s->sh, &s->reserved);
    hb_buf_clear(&s->body);
}

static void end_plan(hb_sess *s)
{
    if (s->plan.file_fd >= 0)
        close(s->plan.file_fd);
    s->plan.file_fd = -1;
}

void hb_sess_free(hb_sess *s)
{
    hb_relay_free(s->relay);
    s->relay = NULL;
    hb_h2s_free(s->h2s);
    s->h2s = NULL;
    end_plan(s);
    drop_body(s);
    hb_buf_free(&s->rx);
    hb_buf_free(&s->tx);
    hb_buf_free(&s->body);
}

int hb_sess_expired(hb_sess *s, int64_t now)
{
    if (s->deadline == 0 || now < s->deadline)
        return 0;
    /* An idle keep-alive connection closing is no timeout of note (an
     * HTTP/2 one with no stream waiting on the client neither). */
    if (!((s->state == S_HEAD || s->state == S_H2) && !s->head_begun))
        SESS_COUNT(timeouts);
    if (s->state == S_RELAY && hb_relay_expired(s->relay)) {
        s->deadline = 0; /* the 504 is queued at the next advance */
        return 2;
    }
    /* Close with a reset: a graceful close would have the kernel go on
     * trickling the unsent response to a client that does not read. */
    hb_sock_abort_on_close(&s->sock);
    return 1;
}

/* What sess_fill found. */
typedef enum {
    FILL_DATA,  /* bytes were added to rx */
    FILL_WAIT,  /* nothing now: wait (waiting() says for what) */
    FILL_EOF,   /* the client closed its side */
    FILL_ERROR, /* a socket error, or no memory */
} fill_result;

/* Reads what the socket has into rx; *got is the count on FILL_DATA. */
static fill_result sess_fill(hb_sess *s, size_t *got)
{
    if (s->drained) {
        s->sock.wants = HB_SOCK_WANT_READ;
        return FILL_WAIT;
    }
    if (hb_buf_reserve(&s->rx, 4096) != 0)
        return FILL_ERROR;
    int bound = bound_wait(s, SO_RCVTIMEO);
    if (bound != 0) {
        s->sock.wants = HB_SOCK_WANT_READ;
        return bound == -1 ? FILL_WAIT : FILL_ERROR;
    }
    size_t room = hb_buf_room(&s->rx);
    ssize_t n;
    do
        n = s->sock.tp->read(&s->sock, hb_buf_wrptr(&s->rx), room);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? FILL_WAIT : FILL_ERROR;
    if (n == 0)
        return FILL_EOF;
    hb_buf_commit(&s->rx, (size_t)n);
    /* A short read emptied the socket: do not pay for a read that would
     * only say so; the driver calls again when more comes. Unless the
     * transport holds bytes it read (a TLS record's rest), which no wait
     * for readable would hear of. */
    s->drained = (size_t)n < room && !hb_sock_pending(&s->sock);
    *got = (size_t)n;
    return FILL_DATA;
}

/* Queues the response head (and a text body) in tx. */
static int sess_queue_head(hb_sess *s)
{
    const hb_plan *p = &s->plan;
    const char *reason = hb_route_reason(p->status);
    const char *ctype = p->src == HB_SRC_ECHO ? s->content_type : p->content_type;
    size_t need = 256 + strlen(reason) + s->sh->server_field_len + (ctype ? strlen(ctype) : 0) +
                  (p->allow ? strlen(p->allow) : 0) + (p->src == HB_SRC_TEXT ? p->length : 0);
    if (hb_buf_reserve(&s->tx, need) != 0)
        return -1;
    char *w = hb_buf_wrptr(&s->tx), *start = w;
    w = hb_head_status(w, p->status, reason, strlen(reason));
    w = hb_head_put(w, s->sh->server_field, s->sh->server_field_len);
    w = hb_head_field(w, "Date", 4, hb_srv_http_date(), HB_SRV_DATE_LEN);
    if (ctype)
        w = hb_head_field(w, "Content-Type", 12, ctype, strlen(ctype));
    if (p->allow)
        w = hb_head_field(w, "Allow", 5, p->allow, strlen(p->allow));
    /* RFC 9110 sections 8.6 and 15.3.5: no framing on 204 and 304. */
    if (p->status != 204 && p->status != 304 && !p->unframed) {
        if (p->src == HB_SRC_CHUNKED) {
            w = HB_HEAD_LIT(w, "Transfer-Encoding: chunked\r\n");
        } else {
            w = HB_HEAD_LIT(w, "Content-Length: ");
            w = hb_head_u64(w, p->src == HB_SRC_ECHO ? hb_buf_size(&s->body) : p->length);
            w = HB_HEAD_LIT(w, "\r\n");
        }
    }
    w = hb_head_end(w, s->close_after, s->req.minor_version);
    if (p->src == HB_SRC_TEXT && !p->head_only)
        w = hb_head_put(w, p->text, (size_t)p->length);
    hb_buf_commit(&s->tx, (size_t)(w - start));
    s->sent = 0;
    s->final_chunk = 0;
    return 0;
}

/* Body bytes the plan still has to send from its source (not from tx). */
static uint64_t source_left(const hb_sess *s)
{
    const hb_plan *p = &s->plan;
    if (p->head_only || p->status == 204 || p->status == 304)
        return 0;
    switch (p->src) {
    case HB_SRC_RND:
    case HB_SRC_FILE: return p->length - s->sent;
    case HB_SRC_ECHO: return hb_buf_size(&s->body) - s->sent;
    default: return 0;
    }
}

/* Stages the next part of a chunked or read/write response in tx. */
static int stage(hb_sess *s)
{
    hb_plan *p = &s->plan;
    if (p->src == HB_SRC_CHUNKED && !p->head_only) {
        while (hb_buf_size(&s->tx) < STAGE && !s->final_chunk) {
            uint64_t left = p->length - s->sent;
            size_t off = (size_t)(s->sent % HB_RND_BLOCK);
            size_t n = left < CHUNK ? (size_t)left : CHUNK;
            if (n > HB_RND_BLOCK - off)
                n = HB_RND_BLOCK - off;
            if (hb_buf_reserve(&s->tx, n + 32) != 0)
                return -1;
            if (n == 0) {
                /* last-chunk and an empty trailer section (RFC 9112 7.1). */
                hb_buf_append(&s->tx, "0\r\n\r\n", 5);
                s->final_chunk = 1;
                break;
            }
            char line[24];
            int ll = snprintf(line, sizeof line, "%zx\r\n", n);
            hb_buf_append(&s->tx, line, (size_t)ll);
            hb_buf_append(&s->tx, s->sh->rnd + off, n);
            hb_buf_append(&s->tx, "\r\n", 2);
            s->sent += n;
        }
    } else if (p->src == HB_SRC_FILE && !zero_copy(s) && hb_buf_size(&s->tx) == 0) {
        uint64_t left = source_left(s);
        size_t n = left < STAGE ? (size_t)left : STAGE;
        if (n == 0)
            return 0;
        if (hb_buf_reserve(&s->tx, n) != 0)
            return -1;
        ssize_t r = pread(p->file_fd, hb_buf_wrptr(&s->tx), n, (off_t)s->sent);
        if (r <= 0)
            return -1; /* the file shrank under us: give up on the connection */
        hb_buf_commit(&s->tx, (size_t)r);
        s->sent += (uint64_t)r;
    }
    return 0;
}

/* Sends what is queued; progress restarts the send deadline. Returns 1
 * when the response is out, 0 when the socket would block (or, blocking,
 * its wait ended), -1 on error. */
static int send_some(hb_sess *s, int64_t now)
{
    hb_plan *p = &s->plan;
    for (;;) {
        if (stage(s) != 0)
            return -1;
        int bound = bound_wait(s, SO_SNDTIMEO);
        if (bound != 0) {
            s->sock.wants = HB_SOCK_WANT_WRITE;
            return bound == -1 ? 0 : -1;
        }
        struct iovec iov[6];
        int n = 0, more = 0;
        size_t txn = hb_buf_size(&s->tx);
        uint64_t left = source_left(s);
        if (txn > 0)
            iov[n++] = (struct iovec){hb_buf_rdptr(&s->tx), txn};
        if (left > 0 && p->src == HB_SRC_RND) {
            uint64_t pos = s->sent, budget = left < SEND_MAX ? left : SEND_MAX;
            while (budget > 0 && n < 6) {
                size_t off = (size_t)(pos % HB_RND_BLOCK);
                size_t len = HB_RND_BLOCK - off < budget ? HB_RND_BLOCK - off : (size_t)budget;
                iov[n++] = (struct iovec){(char *)s->sh->rnd + off, len};
                pos += len;
                budget -= len;
            }
        } else if (left > 0 && p->src == HB_SRC_ECHO) {
            size_t len = left < SEND_MAX ? (size_t)left : SEND_MAX;
            iov[n++] = (struct iovec){hb_buf_rdptr(&s->body) + s->sent, len};
        } else if (left > 0 && p->src == HB_SRC_FILE && zero_copy(s)) {
            if (txn == 0) {
                off_t off = (off_t)s->sent;
                ssize_t r = s->sock.tp->sendfile(&s->sock, p->file_fd, &off,
                                                 left < SEND_MAX ? left : SEND_MAX);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r < 0)
                    return errno == EAGAIN ? 0 : -1;
                if (r == 0)
                    return -1; /* the file shrank under us */
                s->sent += (uint64_t)r;
                wait_from(s, fresh(s, now), s->sh->send_timeout);
                continue;
            }
            /* The head first, corked to the file's first bytes. */
            more = HB_SOCK_MORE;
        }
        if (n == 0)
            return source_left(s) == 0 &&
                           (p->src != HB_SRC_CHUNKED || s->final_chunk || p->head_only)
                       ? 1
                       : -1;
        ssize_t r = s->sock.tp->writev(&s->sock, iov, n, more);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        size_t done = (size_t)r, offered = 0;
        for (int i = 0; i < n; i++)
            offered += iov[i].iov_len;
        size_t from_tx = done < txn ? done : txn;
        hb_buf_consume(&s->tx, from_tx);
        if (p->src == HB_SRC_RND || p->src == HB_SRC_ECHO)
            s->sent += done - from_tx;
        wait_from(s, fresh(s, now), s->sh->send_timeout);
        if (done < offered) {
            s->sock.wants = HB_SOCK_WANT_WRITE; /* a short write: the socket buffer is full */
            return 0;
        }
    }
}

/* Plans the answer to the request whose head is complete in rx. */
static void plan_request(hb_sess *s)
{
    const char *head = hb_buf_rdptr(&s->rx);
    hb_request *r = &s->req;
    hb_route(&s->sh->st, head, r->method_len, head + r->target_off, r->target_len, &s->plan);
    s->close_after = !r->keep_alive;
    /* RFC 9112 section 6.1: no Transfer-Encoding in an answer to HTTP/1.0,
     * which has no chunks: the body goes as it is and the close ends it
     * (section 6.3, item 8), as nginx answers such a client. */
    if (s->plan.src == HB_SRC_CHUNKED && r->minor_version == 0) {
        s->plan.src = HB_SRC_RND;
        s->plan.unframed = 1;
        s->close_after = 1;
    }
    s->content_type[0] = 0;
    if (s->plan.src == HB_SRC_ECHO) {
        const char *ct = "application/octet-stream";
        size_t ctl = strlen(ct);
        for (unsigned i = 0; i < r->num_headers; i++) {
            const hb_header *h = &r->headers[i];
            if (hb_name_is(head + h->name_off, h->name_len, "content-type", 12)) {
                ct = head + h->value_off;
                ctl = h->value_len;
            }
        }
        if (ctl >= sizeof s->content_type)
            ctl = sizeof s->content_type - 1;
        memcpy(s->content_type, ct, ctl);
        s->content_type[ctl] = 0;
    }
    hb_body_init(&s->reqbody, r->body, r->content_length);
    drop_body(s);
}

/* Answers with an error and closes after it (the stream may be out of
 * step, or the client still sending). */
static void reject(hb_sess *s, int status, const char *why)
{
    hb_route_error(&s->plan, status, why);
    s->plan.head_only = 0;
    s->plan.allow = NULL;
    s->close_after = 1;
    SESS_COUNT(rejected);
}

/* Takes request body bytes from rx through the body decoder. Returns 1
 * when the body is complete, 0 when more is needed, -1 when the request
 * was rejected. */
static int sess_take_body(hb_sess *s)
{
    hb_body *b = &s->reqbody;
    for (;;) {
        const char *p = hb_buf_rdptr(&s->rx);
        size_t used, off, n;
        int rc = hb_body_feed(b, p, hb_buf_size(&s->rx), &used, &off, &n);
        if (rc == HB_PARSE_ERROR) {
            reject(s, 400, b->error);
            return -1;
        }
        if (b->got > s->sh->max_body) {
            reject(s, 413, "request body larger than the server accepts\n");
            return -1;
        }
        if (s->plan.keep_body && n > 0) {
            /* A Content-Length body took its budget from the head. */
            if (b->kind == HB_BODY_CHUNKED && reserve(s, n) != 0) {
                reject(s, 503, BUSY_TEXT);
                return -1;
            }
            if (hb_buf_append(&s->body, p + off, n) != 0) {
                reject(s, 413, "request body larger than the server can hold\n");
                return -1;
            }
        }
        hb_buf_consume(&s->rx, used);
        if (rc == HB_PARSE_DONE)
            return 1;
        if (hb_buf_size(&s->rx) == 0)
            return 0;
    }
}

/* After the body: wait out a delay, or queue the response. */
static void respond(hb_sess *s, int64_t now)
{
    if (s->plan.delay_ns > 0) {
        /* From the clock, not from `now`: within one advance the session may
         * have sent a response and read the next request since `now` was
         * taken, and a delay counted from then would end early. */
        sess_enter(s, S_DELAY);
        s->wake_at = hb_now_ns() + s->plan.delay_ns;
        s->deadline = 0;
        return;
    }
    /* Out of memory for a head of a few hundred bytes: give up. */
    if (sess_queue_head(s) != 0) {
        sess_enter(s, S_FAILED);
        return;
    }
    /* Counted before the first byte goes out, so that a client holding its
     * response always finds it counted (counted after the send, a client
     * could read the figure first). */
    SESS_COUNT(requests);
    sess_enter(s, S_SEND);
    wait_from(s, fresh(s, now), s->sh->send_timeout);
}

/* Answers Expect: 100-continue before a body is read (RFC 9110 section
 * 10.1.1). Best effort: a client that misses it sends anyway. Not to
 * HTTP/1.0, whose expectation is ignored and which gets no 1xx (sections
 * 10.1.1 and 15.2). Returns 0, or -1 when the connection failed. */
static int send_continue(hb_sess *s)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct iovec iov = {(char *)cont, sizeof cont - 1};
    if (s->req.body == HB_BODY_NONE || !s->req.expect_continue || s->req.minor_version == 0)
        return 0;
    if (s->sock.tp->writev(&s->sock, &iov, 1, HB_SOCK_DONTWAIT) < 0 && errno != EAGAIN &&
        errno != EWOULDBLOCK)
        return -1;
    return 0;
}

/* The relay's unwatch, for the driver's (hb_relay_client). */
static void sess_unwatch(void *owner, int fd)
{
    hb_sess *s = owner;
    s->up_fd = -1;
    if (s->unwatch != NULL)
        s->unwatch(s, fd);
}

/* The relay's wait taken up as the session's own: what the driver waits
 * for on either socket and, when `timed` (the relay waits), until when, by
 * the server's limit for it. */
static void relay_wait(hb_sess *s, int timed)
{
    const hb_relay_wait *w = hb_relay_waits(s->relay);
    const hb_srv_shared *sh = s->sh;
    s->io_client = w->io_client;
    s->io_up = w->io_up;
    s->up_fd = w->up_fd;
    s->up_gen = w->up_gen;
    s->close_after = w->close_after;
    s->body_left = w->body_left;
    if (!timed)
        return;
    int64_t limit = w->waits == HB_RELAY_WAITS_IDLE       ? sh->idle_timeout
                    : w->waits == HB_RELAY_WAITS_UPSTREAM ? sh->relay->upstream_timeout
                    : w->waits == HB_RELAY_WAITS_SEND     ? sh->send_timeout
                                                          : sh->header_timeout;
    wait_from(s, w->since, limit);
}

/* Hands a proxy's request to the relay (relay.h), or answers its refusal. */
static hb_want relay_begin(hb_sess *s, int64_t now)
{
    const char *why = "out of memory\n";
    s->close_after = !s->req.keep_alive;
    s->plan.status = 0;
    if (s->relay == NULL) {
        hb_relay_client client = {&s->sock, &s->rx, &s->tx, &s->req, sess_unwatch, s};
        s->relay = hb_relay_new(s->sh->relay, &client);
    }
    int status = 503;
    if (s->relay == NULL)
        hb_buf_consume(&s->rx, s->req.head_len);
    else
        status = hb_relay_begin(s->relay, now, s->close_after, &why);
    if (s->relay != NULL)
        relay_wait(s, 0);
    if (status != 0) {
        reject(s, status, why);
        respond(s, now);
        return GO_ON;
    }
    if (send_continue(s) != 0)
        return HB_WANT_CLOSE;
    sess_enter(s, S_RELAY);
    return GO_ON;
}

/* Whether the connection speaks HTTP/2, from its first bytes: h2 chosen
 * by ALPN, or the preface (RFC 9113 section 3.4) on a plain port, which
 * no HTTP/1.1 request begins with. Returns 1, 0 (HTTP/1.1; not asked
 * again), or -1 while the bytes so far are the preface's beginning. */
static int h2_opening(hb_sess *s)
{
    size_t n = hb_buf_size(&s->rx);
    if (hb_sock_alpn_is(&s->sock, "h2"))
        return 1;
    size_t k = n < HB_H2_PREFACE_LEN ? n : HB_H2_PREFACE_LEN;
    if (memcmp(hb_buf_rdptr(&s->rx), HB_H2_PREFACE, k) != 0) {
        s->h2_looked = 1;
        return 0;
    }
    return k == HB_H2_PREFACE_LEN ? 1 : -1;
}

/* The connection is HTTP/2 from here: the session reads the preface and
 * everything after it. */
static hb_want h2_begin(hb_sess *s, int64_t now)
{
    s->h2s = hb_h2s_new(s->sh);
    if (s->h2s == NULL)
        return HB_WANT_CLOSE;
    SESS_COUNT(h2_connections);
    sess_enter(s, S_H2);
    s->head_begun = 0;
    s->since = fresh(s, now);
    return GO_ON;
}

static hb_want sess_head(hb_sess *s, int64_t now)
{
    /* RFC 9112 section 2.2: empty lines before a request line are ignored,
     * but they are bytes of the head: they start its deadline like any
     * other, or a client sending one a second would hold the connection
     * for ever. */
    while (hb_buf_size(&s->rx) >= 2 && hb_buf_rdptr(&s->rx)[0] == '\r' &&
           hb_buf_rdptr(&s->rx)[1] == '\n')
        hb_buf_consume(&s->rx, 2);
    int h2 = s->sh->http2 && !s->h2_looked && hb_buf_size(&s->rx) > 0 ? h2_opening(s) : 0;
    if (h2 > 0)
        return h2_begin(s, now);
    int rc = hb_buf_size(&s->rx) == 0 || h2 < 0
                 ? HB_PARSE_MORE
                 : hb_parse_request(&s->req, hb_buf_rdptr(&s->rx), hb_buf_size(&s->rx));
    if (rc == HB_PARSE_MORE) {
        /* Idle between requests, or part way through a head (the
         * slowloris deadline runs from its first byte). */
        s->deadline = s->since + (s->head_begun ? s->sh->header_timeout : s->sh->idle_timeout);
        size_t got;
        switch (sess_fill(s, &got)) {
        case FILL_DATA:
            if (!s->head_begun) {
                s->head_begun = 1;
                s->since = fresh(s, now);
            }
            return GO_ON;
        case FILL_WAIT: return waiting(s);
        default: return HB_WANT_CLOSE;
        }
    }
    s->head_begun = 0;
    if (rc == HB_PARSE_ERROR) {
        reject(s, s->req.status, s->req.error);
        s->req.minor_version = 1;
        respond(s, now);
        return GO_ON;
    }
    if (s->sh->relay != NULL && hb_relay_wanted(&s->req, hb_buf_rdptr(&s->rx)))
        return relay_begin(s, now);
    plan_request(s);
    hb_buf_consume(&s->rx, s->req.head_len);
    if (s->req.body == HB_BODY_LENGTH && s->req.content_length > s->sh->max_body) {
        /* Refused from the head alone: nothing of it is read. */
        reject(s, 413, "request body larger than the server accepts\n");
        respond(s, now);
        return GO_ON;
    }
    if (s->plan.keep_body && s->req.body == HB_BODY_LENGTH &&
        reserve(s, s->req.content_length) != 0) {
        reject(s, 503, BUSY_TEXT);
        respond(s, now);
        return GO_ON;
    }
    if (send_continue(s) != 0)
        return HB_WANT_CLOSE;
    sess_enter(s, S_BODY);
    wait_from(s, fresh(s, now), s->sh->header_timeout);
    return GO_ON;
}

static hb_want sess_body(hb_sess *s, int64_t now)
{
    if (sess_take_body(s) != 0) {
        respond(s, now);
        return GO_ON;
    }
    size_t got;
    switch (sess_fill(s, &got)) {
    case FILL_DATA:
        /* Progress restarts the clock. */
        wait_from(s, fresh(s, now), s->sh->header_timeout);
        return GO_ON;
    case FILL_WAIT: return waiting(s);
    default: return HB_WANT_CLOSE;
    }
}

static hb_want sess_delay(hb_sess *s, int64_t now)
{
    if (fresh(s, now) < s->wake_at)
        return HB_WANT_TIMER;
    s->plan.delay_ns = 0;
    respond(s, now);
    return GO_ON;
}

/* A response is out (the session's own, or one relayed): close, linger or
 * read the next request. */
static hb_want response_out(hb_sess *s, int64_t now)
{
    end_plan(s);
    if (s->close_after) {
        if (hb_buf_size(&s->rx) == 0 && s->plan.status < 400 && !s->body_left)
            return HB_WANT_CLOSE;
        sess_enter(s, S_LINGER);
        wait_from(s, fresh(s, now), LINGER_NS);
        s->lingered = 0;
        s->sock.tp->shutdown_write(&s->sock);
        return GO_ON;
    }
    sess_enter(s, S_HEAD);
    hb_request_reset(&s->req);
    hb_buf_shrink(&s->tx, 1u << 20);
    drop_body(s);
    hb_buf_shrink(&s->body, 1u << 20);
    /* Pipelined bytes already in are the next head's beginning. */
    s->head_begun = hb_buf_size(&s->rx) > 0;
    s->since = fresh(s, now);
    return GO_ON;
}

static hb_want sess_send(hb_sess *s, int64_t now)
{
    int rc = send_some(s, now);
    if (rc < 0)
        return HB_WANT_CLOSE;
    if (rc == 0)
        return waiting(s);
    return response_out(s, now);
}

static hb_want sess_relay(hb_sess *s, int64_t now)
{
    const char *why;
    int rc = hb_relay_advance(s->relay, now, &why);
    relay_wait(s, rc == HB_RELAY_WAIT);
    switch (rc) {
    case HB_RELAY_WAIT: return HB_WANT_IO;
    case HB_RELAY_DONE: return response_out(s, now);
    case HB_RELAY_CLOSE: return HB_WANT_CLOSE;
    default:
        reject(s, rc, why);
        respond(s, now);
        return GO_ON;
    }
}

static hb_want sess_linger(hb_sess *s, int64_t now)
{
    (void)now;
    /* Drain what the client still sends until it closes. */
    hb_buf_clear(&s->rx);
    size_t got;
    switch (sess_fill(s, &got)) {
    case FILL_DATA:
        s->lingered += got;
        s->drained = 0;
        return s->lingered > LINGER_MAX ? HB_WANT_CLOSE : GO_ON;
    case FILL_WAIT: return waiting(s);
    default: return HB_WANT_CLOSE;
    }
}

/* Writes what tx holds. Returns 1 when it is out, 0 when the socket
 * would block (or, blocking, its wait ended), -1 on error. */
static int h2_write(hb_sess *s, int64_t now)
{
    while (hb_buf_size(&s->tx) > 0) {
        int bound = bound_wait(s, SO_SNDTIMEO);
        if (bound != 0) {
            s->sock.wants = HB_SOCK_WANT_WRITE;
            return bound == -1 ? 0 : -1;
        }
        struct iovec v = {hb_buf_rdptr(&s->tx), hb_buf_size(&s->tx)};
        ssize_t r = s->sock.tp->writev(&s->sock, &v, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        hb_buf_consume(&s->tx, (size_t)r);
        /* Progress restarts the send deadline. */
        wait_from(s, fresh(s, now), s->sh->send_timeout);
    }
    return 1;
}

/* The deadline of an HTTP/2 connection waiting to read: the earliest of
 * what it waits for (hb_h2s_waits: a request not whole, responses the
 * client's window holds, or nothing), none while only /delay streams wait
 * (they end by themselves). Bytes that come do not move it: only what
 * they do to the streams does. */
static void h2_deadline(hb_sess *s)
{
    hb_h2s_wait w;
    hb_h2s_waits(s->h2s, &w);
    int64_t at[3] = {w.request ? w.request + s->sh->header_timeout : 0,
                     w.window ? w.window + s->sh->send_timeout : 0,
                     w.idle ? w.idle + s->sh->idle_timeout : 0};
    s->deadline = 0;
    for (int i = 0; i < 3; i++)
        if (at[i] != 0 && (s->deadline == 0 || at[i] < s->deadline))
            s->deadline = at[i];
    s->head_begun = w.idle == 0; /* (a timeout then is one of note) */
}

/* An HTTP/2 connection: what came goes to its session, what it has to
 * send goes out (a budget at a time), then the next read, under
 * h2_deadline's deadline. */
static hb_want sess_h2(hb_sess *s, int64_t now)
{
    now = fresh(s, now);
    if (hb_buf_size(&s->rx) > 0) {
        if (hb_h2s_input(s->h2s, hb_buf_rdptr(&s->rx), hb_buf_size(&s->rx), now) != 0)
            s->close_after = 1; /* after its GOAWAY */
        hb_buf_clear(&s->rx);
    }
    s->wake_at = 0;
    for (;;) {
        if (hb_buf_size(&s->tx) == 0) {
            if (hb_h2s_output(s->h2s, &s->tx, H2_OUT_BUDGET, now) != 0)
                return HB_WANT_CLOSE;
            if (hb_buf_size(&s->tx) == 0)
                break;
            /* A new batch: the client has send_timeout to take it. */
            wait_from(s, now, s->sh->send_timeout);
        }
        int rc = h2_write(s, now);
        if (rc < 0)
            return HB_WANT_CLOSE;
        if (rc == 0) {
            s->head_begun = 1;
            return waiting(s);
        }
    }
    hb_buf_shrink(&s->tx, 1u << 20);
    if (s->close_after || hb_h2s_done(s->h2s)) {
        /* Linger, so the client reads the GOAWAY before it sees a reset. */
        s->close_after = 1;
        sess_enter(s, S_LINGER);
        wait_from(s, now, LINGER_NS);
        s->lingered = 0;
        s->sock.tp->shutdown_write(&s->sock);
        return GO_ON;
    }
    s->wake_at = hb_h2s_wake(s->h2s);
    h2_deadline(s);
    if (s->blocking && s->wake_at != 0 && !hb_sock_pending(&s->sock)) {
        /* A thread of its own waits for the client or the /delay in
         * ppoll: a socket's receive timeout counts in jiffies (4 ms here),
         * too coarse for a delay the client measures. */
        int64_t left = s->wake_at - hb_now_ns();
        struct pollfd p = {.fd = s->sock.fd, .events = POLLIN};
        struct timespec ts = {.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
        if (left <= 0 || ppoll(&p, 1, &ts, NULL) == 0)
            return GO_ON;
    }
    size_t got;
    switch (sess_fill(s, &got)) {
    case FILL_DATA: return GO_ON;
    case FILL_WAIT:
        if (s->wake_at != 0 && fresh(s, now) >= s->wake_at)
            return GO_ON; /* a /delay is over */
        if (s->sock.wants == HB_SOCK_WANT_WRITE)
            return HB_WANT_WRITE;
        return s->wake_at != 0 ? HB_WANT_READ_TIMER : HB_WANT_READ;
    default: return HB_WANT_CLOSE;
    }
}

hb_want hb_sess_advance(hb_sess *s, int64_t now)
{
    s->drained = 0;
    hb_want want;
    do
        want = STATES[s->state].step(s, now);
    while (want == GO_ON);
    return want;
}
