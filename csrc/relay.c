/* relay.c: the forward-proxy mode, one relayed exchange or tunnel at a time.
 *
 *   state      on                                        next
 *   R_CONNECT  the upstream connected                    R_SEND, or R_TUNNEL (CONNECT)
 *              refused, failed                           502
 *   R_SEND     the request out, its body relayed         R_HEAD
 *              a reused upstream gone before a byte      R_CONNECT (once)
 *   R_HEAD     a final response head                     R_RESP (the head queued)
 *              an interim (1xx) head                     R_HEAD (dropped)
 *              malformed, closed, reset                  502 (a reused upstream closed
 *                                                        before answering: R_CONNECT, once)
 *   R_RESP     the body relayed                          done: the session goes on
 *   R_TUNNEL   both directions ended                     closed
 *   (any)      the upstream stalled, client had nothing  504
 *   (any but R_TUNNEL) the next request                  R_CONNECT, or R_SEND (kept)
 *
 * STATES below is this table as data (each state's name and the states it
 * may go to, R_IDLE before the first request); relay_enter holds every
 * change to it when built with HB_CHECK_STATES.
 *
 * A direction of bytes is a flow (flow_run): from one socket, through the
 * session's pipe (zero copy) or a buffer, to the other, taking at most
 * `left` bytes from its source.
 */
#define _GNU_SOURCE
#include "relay.h"

#include "head.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum { R_IDLE = 0, R_CONNECT, R_SEND, R_HEAD, R_RESP, R_TUNNEL, R_COUNT };

#define TO(state) (1u << (state))
/* A request begins: a new upstream, or a kept one. */
#define BEGIN (TO(R_CONNECT) | TO(R_SEND))
/* (Read by relay_enter under HB_CHECK_STATES, and by the tests' walk.) */
__attribute__((unused)) static const struct {
    const char *name;
    unsigned next; /* TO(state) for each it may go to */
} STATES[R_COUNT] = {
    [R_IDLE] = {"idle", BEGIN},
    [R_CONNECT] = {"connect", BEGIN | TO(R_TUNNEL)},
    [R_SEND] = {"send", BEGIN | TO(R_HEAD)},
    [R_HEAD] = {"head", BEGIN | TO(R_RESP)},
    [R_RESP] = {"resp", BEGIN},
    [R_TUNNEL] = {"tunnel", 0},
};

/* The pipe a zero-copy direction asks for (the default is 64 KiB). */
#define PIPE_SIZE HB_RELAY_WINDOW
/* Bytes of a response read to find its head: with zero copy few, so the
 * rest of the body stays in the socket for splice. And what a chunked body
 * is read by. */
#define RELAY_HEAD_READ 4096
#define HEAD_READ_COPY 16384
#define CHUNKED_READ 65536
#define UNTIL_END UINT64_MAX
#define NOT_ALLOWED "the relay goes to loopback and the destinations it is allowed, not this one\n"

/* One direction of bytes in transit. */
typedef struct {
    int pipe[2];   /* zero copy: read and write ends, -1 until first needed */
    size_t cap;    /* the pipe's capacity */
    size_t held;   /* bytes in the pipe */
    hb_buf *buf;   /* bytes to write before the pipe's (copying: all of them) */
    uint64_t left; /* bytes still to take from the source; UNTIL_END: to its end */
    int eof;       /* the source ended */
    int wait_src, wait_dst;
    int failed; /* after flow_run's -1: 1 the source failed (or ended early), 2 the sink */
    int err;    /* and its errno */
} flow;

struct hb_relay {
    hb_relay_client c;    /* the client side, lent */
    hb_relay_config *cfg; /* the server's, shared */
    hb_relay_wait w;      /* what it waits for, said to the session */
    int state;
    int tunnel;
    hb_sock up;
    char dest[272]; /* host:port the upstream connection is to, "" when none */
    hb_addr addr;
    int reused;      /* up carried an earlier request */
    int retried;     /* the request was sent again once already */
    int head_req;    /* HEAD: the response has no body */
    int answered;    /* the client has had bytes of this response */
    int up_waiting;  /* the current wait is the upstream's */
    int timed_out;   /* the upstream stalled (hb_relay_expired) */
    int dechunk;     /* an HTTP/1.0 client: a chunked body goes as its data only */
    int up_keep;     /* the upstream connection may carry another request */
    int up_eof;      /* the upstream's end of stream was read while sending */
    int zero_copy;   /* bodies and tunnels by splice */
    hb_buf out;      /* to the upstream */
    hb_buf again;    /* the request, kept to send again when up was reused */
    hb_buf in;       /* from the upstream, not yet parsed */
    hb_body reqbody; /* the request body's framing */
    hb_body respbody;
    flow c2u, u2c;
    int c_shut, u_shut; /* the tunnel's sending sides shut */
    hb_response resp;
};

/* rl goes to state `to`, which its table must hold (HB_CHECK_STATES). */
static void relay_enter(hb_relay *rl, int to)
{
#ifdef HB_CHECK_STATES
    if (to != rl->state && !(STATES[rl->state].next & TO(to))) {
        fprintf(stderr, "httpbench: relay: %s -> %s is not in its table\n", STATES[rl->state].name,
                STATES[to].name);
        abort();
    }
#endif
    rl->state = to;
}

#define RELAY_COUNT(rl, field) __atomic_add_fetch(&(rl)->cfg->field, 1, __ATOMIC_RELAXED)

/* ------------------------------------------------------------- flows */

static void flow_init(flow *f, hb_buf *buf, uint64_t left)
{
    f->buf = buf;
    f->left = left;
    f->eof = f->wait_src = f->wait_dst = f->failed = 0;
}

static void flow_close(flow *f)
{
    for (int i = 0; i < 2; i++) {
        if (f->pipe[i] >= 0)
            close(f->pipe[i]);
        f->pipe[i] = -1;
    }
    f->held = 0;
}

/* Makes f's pipe. Returns 0, or -1 with errno. */
static int flow_pipe(flow *f)
{
    if (f->pipe[0] >= 0)
        return 0;
    if (pipe2(f->pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        f->pipe[0] = f->pipe[1] = -1;
        return -1;
    }
    /* A larger pipe, where the system allows one, halves the calls per
     * large body; the default is fine too. */
    int cap = fcntl(f->pipe[1], F_SETPIPE_SZ, PIPE_SIZE);
    if (cap < 0)
        cap = fcntl(f->pipe[1], F_GETPIPE_SZ);
    f->cap = cap > 0 ? (size_t)cap : 65536;
    return 0;
}

static int would_block(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK;
}

/* Writes what f holds to dst: the buffer first, then the pipe. Returns
 * the write's result (1 when nothing is held), *progress set when bytes
 * went. */
static ssize_t flow_put(flow *f, hb_sock *dst, int *progress)
{
    ssize_t n = 1;
    size_t pending = hb_buf_size(f->buf);
    if (pending > 0) {
        struct iovec iov = {hb_buf_rdptr(f->buf), pending};
        do
            n = dst->tp->writev(dst, &iov, 1, 0);
        while (n < 0 && errno == EINTR);
        if (n > 0) {
            hb_buf_consume(f->buf, (size_t)n);
            *progress = 1;
        }
    } else if (f->held > 0) {
        do
            n = dst->tp->splice(dst, f->pipe[0], f->held, 0);
        while (n < 0 && errno == EINTR);
        if (n > 0) {
            f->held -= (size_t)n;
            *progress = 1;
        }
    }
    return n;
}

/* flow_get's return when it could not try (f->failed and f->err set). */
#define FLOW_BROKEN (-3)

/* Takes more from src into f, within the window: by splice into the pipe,
 * or a read into the buffer while it is empty. Returns the read's result
 * (bytes; 0 at the source's end; -1 with errno), -2 when not tried (the
 * window is full), or FLOW_BROKEN; *src_blocked says whether a wait for
 * the source is due. */
static ssize_t flow_get(flow *f, hb_sock *src, int zero_copy, int *src_blocked)
{
    ssize_t r = -2;
    if (zero_copy) {
        if (flow_pipe(f) != 0) {
            f->failed = 1;
            f->err = errno;
            return FLOW_BROKEN;
        }
        size_t room = f->cap - f->held;
        if (room > 0) {
            size_t want = f->left < room ? (size_t)f->left : room;
            do
                r = src->tp->splice(src, f->pipe[1], want, 1);
            while (r < 0 && errno == EINTR);
            /* EAGAIN with bytes in the pipe may mean a pipe full of
             * part-filled pages rather than an empty socket: it is a wait
             * for the source only with the pipe empty. */
            *src_blocked = r < 0 && would_block() && f->held == 0;
            if (r > 0)
                f->held += (size_t)r;
        }
        return r;
    }
    /* Read into an empty buffer only, as a read/write relay does: topping
     * up one part written would slide the rest down, a copy more. */
    if (hb_buf_size(f->buf) == 0) {
        size_t want = f->left < HB_RELAY_WINDOW ? (size_t)f->left : HB_RELAY_WINDOW;
        if (hb_buf_reserve(f->buf, want) != 0) {
            f->failed = 1;
            f->err = ENOMEM;
            return FLOW_BROKEN;
        }
        do
            r = src->tp->read(src, hb_buf_wrptr(f->buf), want);
        while (r < 0 && errno == EINTR);
        *src_blocked = r < 0 && would_block();
        if (r > 0)
            hb_buf_commit(f->buf, (size_t)r);
    }
    return r;
}

/* Moves bytes of f from src to dst until neither side can go on. Returns 1
 * when the flow is complete (left taken, or the source ended, and all of
 * it written), 0 when it waits (f->wait_src, f->wait_dst say for what;
 * *moved is set when anything moved), -1 on failure (f->failed, f->err).
 * A source ending before `left` is taken is a failure of the source. */
static int flow_run(flow *f, hb_sock *src, hb_sock *dst, int zero_copy, int *moved)
{
    f->wait_src = f->wait_dst = 0;
    for (;;) {
        int progress = 0, src_blocked = 0;
        ssize_t n = flow_put(f, dst, &progress);
        if (n < 0 && !would_block()) {
            f->failed = 2;
            f->err = errno;
            return -1;
        }
        int dst_blocked = n < 0;
        if (!f->eof && f->left > 0) {
            ssize_t r = flow_get(f, src, zero_copy, &src_blocked);
            if (r == FLOW_BROKEN)
                return -1;
            if (r > 0) {
                if (f->left != UNTIL_END)
                    f->left -= (uint64_t)r;
                progress = 1;
            } else if (r == 0) {
                f->eof = 1;
                progress = 1;
                if (f->left != UNTIL_END) {
                    f->failed = 1;
                    f->err = ECONNRESET;
                    return -1;
                }
            } else if (r == -1 && !would_block()) {
                f->failed = 1;
                f->err = errno;
                return -1;
            }
        }
        if (hb_buf_size(f->buf) == 0 && f->held == 0 && (f->eof || f->left == 0))
            return 1;
        if (progress) {
            *moved = 1;
            continue;
        }
        f->wait_src = src_blocked;
        f->wait_dst = dst_blocked;
        return 0;
    }
}

/* ------------------------------------------------------ destinations */

static int loopback(const hb_addr *a)
{
    if (a->sa.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&a->sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->sa;
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
        return 1;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
}

static int same_ip(const hb_addr *a, const hb_addr *b)
{
    if (a->sa.ss_family != b->sa.ss_family)
        return 0;
    if (a->sa.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)&b->sa)->sin_addr.s_addr;
    return memcmp(&((const struct sockaddr_in6 *)&a->sa)->sin6_addr,
                  &((const struct sockaddr_in6 *)&b->sa)->sin6_addr, 16) == 0;
}

static void set_port(hb_addr *a, int port)
{
    if (a->sa.ss_family == AF_INET)
        ((struct sockaddr_in *)&a->sa)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)&a->sa)->sin6_port = htons((uint16_t)port);
}

/* An address literal (IPv4, or IPv6 without its brackets). Returns 1 when
 * host is one, with *out set. */
static int literal(const char *host, hb_addr *out)
{
    memset(out, 0, sizeof *out);
    struct sockaddr_in *in = (struct sockaddr_in *)&out->sa;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->sa;
    if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        out->len = sizeof *in;
        return 1;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        out->len = sizeof *in6;
        return 1;
    }
    return 0;
}

/* Where a request for host (unbracketed, NUL-terminated) and port may go:
 * 0 with *out set, or -1 when it may not. Loopback always; otherwise an
 * allow entry naming host, or whose address host is. */
static int destination(const hb_relay_config *sh, const char *host, int port, hb_addr *out)
{
    hb_addr lit;
    int is_lit = literal(host, &lit);
    if (!is_lit && strcasecmp(host, "localhost") == 0)
        is_lit = literal("127.0.0.1", &lit);
    for (size_t i = 0; i < sh->nallow; i++) {
        const hb_relay_allow *a = &sh->allow[i];
        if (a->port != 0 && a->port != port)
            continue;
        if (strcasecmp(a->name, host) == 0 || (is_lit && same_ip(&a->addr, &lit))) {
            *out = a->addr;
            set_port(out, port);
            return 0;
        }
    }
    if (!is_lit || !loopback(&lit))
        return -1;
    *out = lit;
    set_port(out, port);
    return 0;
}

/* Whether a is this relay's own listening address: its port, and its IP
 * or (listening on every address) any address of this host, which a UDP
 * socket can be bound to and no other can. */
static int is_self(const hb_relay_config *sh, const hb_addr *a)
{
    if (!sh->has_self || a->sa.ss_family != sh->self.sa.ss_family)
        return 0;
    int v4 = a->sa.ss_family == AF_INET;
    const struct sockaddr_in *in = (const struct sockaddr_in *)&a->sa,
                             *self_in = (const struct sockaddr_in *)&sh->self.sa;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->sa,
                              *self_in6 = (const struct sockaddr_in6 *)&sh->self.sa;
    if ((v4 ? in->sin_port != self_in->sin_port : in6->sin6_port != self_in6->sin6_port))
        return 0;
    int wildcard = v4 ? self_in->sin_addr.s_addr == htonl(INADDR_ANY)
                      : IN6_IS_ADDR_UNSPECIFIED(&self_in6->sin6_addr);
    if (!wildcard)
        return same_ip(a, &sh->self);
    int fd = socket(a->sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return loopback(a);
    hb_addr probe = *a;
    set_port(&probe, 0);
    int local = bind(fd, (const struct sockaddr *)&probe.sa, probe.len) == 0;
    close(fd);
    return local;
}

/* Splits an authority (RFC 3986 section 3.2: host [":" port], no userinfo)
 * into host (brackets off an IPv6 literal) and port (def when absent).
 * Returns 0, or -1 when it is not one. */
static int split_authority(const char *p, size_t n, char *host, size_t hostlen, int *port, int def)
{
    size_t hl, rest;
    if (n > 0 && p[0] == '[') {
        const char *end = memchr(p, ']', n);
        if (end == NULL)
            return -1;
        hl = (size_t)(end - p) - 1;
        if (hl == 0 || hl >= hostlen)
            return -1;
        memcpy(host, p + 1, hl);
        rest = (size_t)(end - p) + 1;
    } else {
        const char *colon = memchr(p, ':', n);
        hl = colon ? (size_t)(colon - p) : n;
        if (hl == 0 || hl >= hostlen)
            return -1;
        memcpy(host, p, hl);
        rest = hl;
    }
    host[hl] = 0;
    for (size_t i = 0; i < hl; i++) {
        unsigned char c = (unsigned char)host[i];
        /* reg-name, IPv4 and IPv6 characters; no userinfo, no percent. */
        if (!(c == '-' || c == '.' || c == '_' || c == ':' || c == '~' || (c >= '0' && c <= '9') ||
              ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')))
            return -1;
        if (c == ':' && p[0] != '[')
            return -1;
    }
    if (rest == n) {
        *port = def;
        return def > 0 ? 0 : -1;
    }
    if (p[rest] != ':' || rest + 1 == n || n - rest - 1 > 5)
        return -1;
    int v = 0;
    for (size_t i = rest + 1; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = v;
    return 0;
}

/* ----------------------------------------------------- rewriting heads */

static int name_is(const char *base, const hb_header *h, const char *lower)
{
    return hb_name_is(base + h->name_off, h->name_len, lower, strlen(lower));
}

/* Whether a field of the given name is named by a Connection field among
 * hs, so is hop-by-hop too (RFC 9110 section 7.6.1). */
static int connection_names(const char *base, const hb_header *hs, unsigned n, const char *name,
                            size_t len)
{
    for (unsigned i = 0; i < n; i++) {
        if (!name_is(base, &hs[i], "connection"))
            continue;
        const char *v = base + hs[i].value_off, *end = v + hs[i].value_len;
        while (v < end) {
            while (v < end && (*v == ',' || *v == ' ' || *v == '\t'))
                v++;
            const char *t = v;
            while (v < end && *v != ',' && *v != ' ' && *v != '\t')
                v++;
            if ((size_t)(v - t) == len && strncasecmp(t, name, len) == 0)
                return 1;
        }
    }
    return 0;
}

/* The fields that frame a message (RFC 9112 section 6): never hop-by-hop,
 * whatever a Connection field names, or a body would go on without what
 * delimits it and the next hop would read its bytes as another message. */
static int framing(const char *base, const hb_header *h)
{
    return name_is(base, h, "content-length") || name_is(base, h, "transfer-encoding");
}

/* Whether a Connection field among hs names a framing field: a request so
 * made is refused (400), as smuggling's signature. */
static int connection_names_framing(const char *base, const hb_header *hs, unsigned n)
{
    return connection_names(base, hs, n, "content-length", 14) ||
           connection_names(base, hs, n, "transfer-encoding", 17);
}

/* Whether the field is for this hop only: never passed on. Expect goes too:
 * the relay answers 100-continue itself and streams the body. */
static int hop_by_hop(const char *base, const hb_header *hs, unsigned n, const hb_header *h)
{
    if (framing(base, h))
        return 0;
    static const char *const names[] = {"connection",
                                        "proxy-connection",
                                        "keep-alive",
                                        "proxy-authorization",
                                        "proxy-authenticate",
                                        "te",
                                        "trailer",
                                        "upgrade",
                                        "expect"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (name_is(base, h, names[i]))
            return 1;
    return connection_names(base, hs, n, base + h->name_off, h->name_len);
}

/* Writes a field value at w with each obs-fold (a line break and the
 * white space after it) replaced by one SP: RFC 9112 section 5.2 has a
 * proxy do so before it forwards the message. Never longer than n. */
static char *put_value(char *w, const char *p, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\r' && p[i] != '\n')
            continue;
        w = hb_head_put(w, p + start, i - start);
        *w++ = ' ';
        while (i + 1 < n &&
               (p[i + 1] == '\r' || p[i + 1] == '\n' || p[i + 1] == ' ' || p[i + 1] == '\t'))
            i++;
        start = i + 1;
    }
    return hb_head_put(w, p + start, n - start);
}

/* What put_fields leaves out besides the hop-by-hop fields. */
enum {
    SKIP_HOST = 1,   /* the relay writes Host from the target */
    SKIP_TE = 2,     /* a chunked body goes to an HTTP/1.0 client as its data only */
    SKIP_LENGTH = 4, /* with Transfer-Encoding, RFC 9112 section 6.3 */
};

/* The room put_fields needs for the fields of a head of head_len bytes:
 * each written as "name: value\r\n", one byte more than its line at most
 * (the space after the colon), folds only shrinking. */
#define FIELDS_ROOM(head_len, n) ((head_len) + (size_t)(n))

/* Writes at w the fields of a head except the hop-by-hop ones and those
 * `skip` names, counting them in *written. */
static char *put_fields(char *w, const char *base, const hb_header *hs, unsigned n, int skip,
                        int *written)
{
    *written = 0;
    for (unsigned i = 0; i < n; i++) {
        const hb_header *h = &hs[i];
        if (hop_by_hop(base, hs, n, h) || ((skip & SKIP_HOST) && name_is(base, h, "host")) ||
            ((skip & SKIP_TE) && name_is(base, h, "transfer-encoding")) ||
            ((skip & SKIP_LENGTH) && name_is(base, h, "content-length")))
            continue;
        w = hb_head_put(w, base + h->name_off, h->name_len);
        w = HB_HEAD_LIT(w, ": ");
        w = put_value(w, base + h->value_off, h->value_len);
        w = HB_HEAD_LIT(w, "\r\n");
        (*written)++;
    }
    return w;
}

/* Whether one of hs is a Transfer-Encoding field. */
static int has_transfer_encoding(const char *base, const hb_header *hs, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (name_is(base, &hs[i], "transfer-encoding"))
            return 1;
    return 0;
}

/* Whether a head of `fields` field lines and `len` bytes is within what
 * the parsers take (parser.h): the relay adds Host, Via and Connection,
 * and what it forwards must not be what the next hop refuses. */
static int within_limits(int fields, size_t len)
{
    return fields <= HB_MAX_HEADERS && len <= HB_MAX_HEAD;
}

/* Whether a Via field of the request names this relay: it came round. */
static int looped(const hb_relay *rl, const char *base)
{
    const char *name = rl->cfg->via + 9; /* after "Via: 1.1 " */
    size_t len = rl->cfg->via_len - 11;  /* without it and the CRLF */
    for (unsigned i = 0; i < rl->c.req->num_headers; i++) {
        const hb_header *h = &rl->c.req->headers[i];
        if (name_is(base, h, "via") && memmem(base + h->value_off, h->value_len, name, len))
            return 1;
    }
    return 0;
}

/* ---------------------------------------------------------- the relay */

hb_relay *hb_relay_new(hb_relay_config *cfg, const hb_relay_client *client)
{
    hb_relay *rl = calloc(1, sizeof *rl);
    if (rl == NULL)
        return NULL;
    rl->c = *client;
    rl->cfg = cfg;
    rl->w.up_fd = -1;
    hb_sock_init(&rl->up, &hb_net_tcp, 0);
    rl->c2u.pipe[0] = rl->c2u.pipe[1] = rl->u2c.pipe[0] = rl->u2c.pipe[1] = -1;
    return rl;
}

const hb_relay_wait *hb_relay_waits(const hb_relay *rl)
{
    return &rl->w;
}

/* Closes the upstream connection (reset when cut off mid-message). */
static void up_close(hb_relay *rl, int abort)
{
    if (rl->up.fd >= 0) {
        if (rl->c.unwatch != NULL)
            rl->c.unwatch(rl->c.owner, rl->up.fd);
        if (abort)
            hb_sock_abort_on_close(&rl->up);
        hb_sock_close(&rl->up);
    }
    rl->dest[0] = 0;
    rl->w.up_fd = -1;
    /* Bytes left in a pipe belonged to that connection's exchange; an
     * empty pipe serves the next. */
    if (rl->c2u.held > 0)
        flow_close(&rl->c2u);
    if (rl->u2c.held > 0)
        flow_close(&rl->u2c);
}

void hb_relay_free(hb_relay *rl)
{
    if (rl == NULL)
        return;
    up_close(rl, 0);
    flow_close(&rl->c2u);
    flow_close(&rl->u2c);
    hb_buf_free(&rl->out);
    hb_buf_free(&rl->again);
    hb_buf_free(&rl->in);
    free(rl);
}

int hb_relay_wanted(const hb_request *req, const char *head)
{
    const char *t = head + req->target_off;
    if (req->method_len == 7 && memcmp(head, "CONNECT", 7) == 0)
        return 1;
    return req->target_len > 0 && t[0] != '/' && t[0] != '*';
}

/* Starts connecting to rl->addr (for rl->dest). Returns 0, or a status. */
static int up_connect(hb_relay *rl, int64_t now, const char **why)
{
    int rc = rl->up.tp->connect_start(&rl->up, &rl->addr);
    if (rc < 0) {
        *why = errno == ECONNREFUSED ? "the upstream refused the connection\n"
                                     : "the upstream could not be reached\n";
        rl->dest[0] = 0;
        return 502;
    }
    rl->w.up_fd = rl->up.fd;
    rl->w.up_gen++;
    rl->reused = 0;
    relay_enter(rl, R_CONNECT);
    rl->w.since = now;
    return 0;
}

/* Readies the relay for the request in s (head parsed, not consumed): its
 * destination checked and connected to, or kept. Returns 0 or a status. */
static int open_upstream(hb_relay *rl, int64_t now, const char *host, int port, const char **why)
{
    char dest[sizeof rl->dest];
    hb_addr addr;
    if (destination(rl->cfg, host, port, &addr) != 0) {
        *why = NOT_ALLOWED;
        return 403;
    }
    snprintf(dest, sizeof dest, "%s:%d", host, port);
    /* A kept connection to the same place serves again if it has not
     * closed meanwhile (a peek: nothing to read, no end of stream). */
    if (!rl->tunnel && rl->up.fd >= 0 && strcmp(dest, rl->dest) == 0 &&
        rl->up.tp->idle_ok(&rl->up)) {
        rl->reused = 1;
        relay_enter(rl, R_SEND);
        return 0;
    }
    up_close(rl, 0);
    memcpy(rl->dest, dest, sizeof dest);
    rl->addr = addr;
    return up_connect(rl, now, why);
}

/* Moves the body bytes the client's rx holds into rl->out, through the body's
 * framing (chunked bytes go as they came). Returns 0, or -1 on a bad
 * chunk (*why). */
static int relay_take_body(hb_relay *rl, const char **why)
{
    while (hb_buf_size(rl->c.rx) > 0 && rl->reqbody.kind != HB_BODY_NONE) {
        size_t used, off, n;
        int rc = hb_body_feed(&rl->reqbody, hb_buf_rdptr(rl->c.rx), hb_buf_size(rl->c.rx), &used,
                              &off, &n);
        if (rc == HB_PARSE_ERROR) {
            *why = rl->reqbody.error;
            return -1;
        }
        if (hb_buf_append(&rl->out, hb_buf_rdptr(rl->c.rx), used) != 0) {
            *why = "out of memory\n";
            return -1;
        }
        hb_buf_consume(rl->c.rx, used);
        if (rc == HB_PARSE_DONE)
            rl->reqbody.kind = HB_BODY_NONE;
    }
    return 0;
}

static const char bad_target[] = "a proxy takes http://host[:port]/path, or CONNECT host:port\n";

/* The authority (and for absolute form, the path) of request target
 * t[0..tlen): absolute-form = "http://" authority path-abempty [ "?" query ]
 * (RFC 9112 section 3.2.2), or a CONNECT's authority-form. Returns 0, or
 * 400 with *why. */
static int target_parts(const char *t, size_t tlen, int connect, const char **auth, size_t *alen,
                        const char **path, size_t *plen, const char **why)
{
    *auth = t;
    *alen = tlen;
    *path = NULL;
    *plen = 0;
    if (connect)
        return 0;
    hb_target_abs a;
    if (!hb_parse_absolute_form(t, tlen, &a)) {
        *why = bad_target;
        return 400;
    }
    if (a.https) {
        *why = "an https:// target goes through a CONNECT tunnel\n";
        return 400;
    }
    *auth = t + a.auth_off;
    *alen = a.auth_len;
    if (a.path_off < tlen) {
        *path = t + a.path_off;
        *plen = tlen - a.path_off;
    }
    return 0;
}

/* Whether the request may be relayed to host:port: a status (400, 403,
 * 508) with *why when not, else 0 with the destination in *dest. */
static int refused(hb_relay *rl, const char *base, int connect, const char *host, int port,
                   hb_addr *dest, const char **why)
{
    const hb_request *r = rl->c.req;
    if (looped(rl, base)) {
        *why = "the request came through this relay already\n";
        return 508;
    }
    if (connection_names_framing(base, r->headers, r->num_headers)) {
        *why = "a Connection field names Content-Length or Transfer-Encoding: a proxy cannot "
               "drop the field that frames the body\n";
        return 400;
    }
    if (connect && r->body != HB_BODY_NONE) {
        *why = "a CONNECT has no body\n";
        return 400;
    }
    if (destination(rl->cfg, host, port, dest) != 0) {
        *why = NOT_ALLOWED;
        return 403;
    }
    if (connect && is_self(rl->cfg, dest)) {
        /* Each level would hold two sockets and two pipes until EMFILE. */
        *why = "a CONNECT to this relay itself would nest tunnels\n";
        return 508;
    }
    return 0;
}

/* The request as the origin is to see it into out (RFC 9112 section
 * 3.2.2: origin form, Host from the target whatever the client's said),
 * with the relay's Via. Returns the fields written, or -1 when memory ran
 * out. */
static int origin_request(hb_relay *rl, hb_buf *out, const char *base, const char *auth,
                          size_t alen, const char *path, size_t plen)
{
    const hb_request *r = rl->c.req;
    int fields;
    /* The request line and Host are no longer than the absolute-form line. */
    if (hb_buf_reserve(out, FIELDS_ROOM(r->head_len, r->num_headers) + rl->cfg->via_len + 32) != 0)
        return -1;
    char *w = hb_buf_wrptr(out), *start = w;
    w = hb_head_put(w, base, r->method_len);
    w = HB_HEAD_LIT(w, " ");
    if (plen == 0 || path[0] == '?')
        w = HB_HEAD_LIT(w, "/");
    if (plen > 0)
        w = hb_head_put(w, path, plen);
    w = HB_HEAD_LIT(w, " HTTP/1.1\r\n");
    w = hb_head_field(w, "Host", 4, auth, alen);
    w = put_fields(w, base, r->headers, r->num_headers, SKIP_HOST, &fields);
    w = hb_head_put(w, rl->cfg->via, rl->cfg->via_len);
    w = HB_HEAD_LIT(w, "\r\n");
    hb_buf_commit(out, (size_t)(w - start));
    return fields;
}

int hb_relay_begin(hb_relay *rl, int64_t now, int close_after, const char **why)
{
    const char *base = hb_buf_rdptr(rl->c.rx);
    const hb_request *r = rl->c.req;
    size_t head_len = r->head_len;
    int connect = r->method_len == 7 && memcmp(base, "CONNECT", 7) == 0;
    char host[256];
    int port = 0;
    const char *auth, *path;
    size_t alen, plen;
    hb_addr dest_addr;

    *why = "out of memory\n";
    rl->w.close_after = close_after;
    rl->w.body_left = 0;
    rl->w.since = now;
    rl->tunnel = connect;
    rl->answered = rl->timed_out = rl->retried = rl->dechunk = rl->up_eof = 0;
    rl->head_req = r->method_len == 4 && memcmp(base, "HEAD", 4) == 0;
    rl->zero_copy = rl->cfg->zero_copy && rl->c.sock->tp->splice != NULL;
    hb_buf_clear(&rl->out);
    hb_buf_clear(&rl->again);
    hb_buf_clear(&rl->in);
    int status =
        target_parts(base + r->target_off, r->target_len, connect, &auth, &alen, &path, &plen, why);
    if (status == 0 && split_authority(auth, alen, host, sizeof host, &port, connect ? 0 : 80)) {
        *why = bad_target;
        status = 400;
    }
    if (status == 0)
        status = refused(rl, base, connect, host, port, &dest_addr, why);
    if (status == 0 && connect)
        status = open_upstream(rl, now, host, port, why);
    if (status != 0 || connect) {
        /* (A tunnel opens in st_connect.) */
        hb_buf_consume(rl->c.rx, head_len);
        return status;
    }
    int fields = origin_request(rl, &rl->out, base, auth, alen, path, plen);
    hb_body_init(&rl->reqbody, r->body, r->content_length);
    hb_buf_consume(rl->c.rx, head_len);
    if (fields < 0) {
        up_close(rl, 0);
        return 503;
    }
    if (!within_limits(fields + 2, hb_buf_size(&rl->out))) {
        *why = "with the relay's Host and Via the request would pass 100 fields or 64 KiB\n";
        return 431;
    }
    /* Dialled (or a kept connection taken) once the request is known to
     * be one to send. */
    status = open_upstream(rl, now, host, port, why);
    if (status != 0)
        return status;
    /* Sent again if a reused connection turns out gone: only what has no
     * body (RFC 9110 section 9.2.2 allows it for idempotent methods; a
     * request with a body would need the body kept too). */
    if (r->body == HB_BODY_NONE &&
        hb_buf_append(&rl->again, hb_buf_rdptr(&rl->out), hb_buf_size(&rl->out)))
        return 503;
    if (relay_take_body(rl, why) != 0) {
        up_close(rl, 0);
        return 400;
    }
    flow_init(&rl->c2u, &rl->out, rl->reqbody.kind == HB_BODY_LENGTH ? rl->reqbody.left : 0);
    hb_response_reset(&rl->resp);
    return 0;
}

/* Starts the same request again on a fresh connection, after a reused
 * one turned out gone before answering. Returns 0, or -1 when it may not
 * be (the upstream failure stands). */
static int send_again(hb_relay *rl, int64_t now)
{
    const char *why;
    if (!rl->reused || rl->retried || hb_buf_size(&rl->again) == 0 || rl->answered)
        return -1;
    rl->retried = 1;
    char dest[sizeof rl->dest];
    memcpy(dest, rl->dest, sizeof dest);
    up_close(rl, 1);
    memcpy(rl->dest, dest, sizeof dest);
    hb_buf_clear(&rl->out);
    if (hb_buf_append(&rl->out, hb_buf_rdptr(&rl->again), hb_buf_size(&rl->again)) != 0 ||
        up_connect(rl, now, &why) != 0)
        return -1;
    flow_init(&rl->c2u, &rl->out, 0);
    hb_buf_clear(&rl->in);
    hb_response_reset(&rl->resp);
    rl->up_eof = 0;
    return 0;
}

static int st_connect(hb_relay *rl, const char **why)
{
    if (rl->up.tp->connect_done(&rl->up) != 0) {
        if (would_block() || errno == EINPROGRESS || errno == EALREADY) {
            rl->w.io_up = HB_SOCK_WANT_WRITE;
            return HB_RELAY_WAIT;
        }
        *why = errno == ECONNREFUSED ? "the upstream refused the connection\n"
                                     : "the upstream could not be reached\n";
        up_close(rl, 0);
        return 502;
    }
    relay_enter(rl, rl->tunnel ? R_TUNNEL : R_SEND);
    if (rl->tunnel) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        /* The client's first bytes (a ClientHello) may have come with the
         * CONNECT: they go first. */
        if (hb_buf_append(rl->c.tx, ok, sizeof ok - 1) != 0 ||
            hb_buf_append(&rl->out, hb_buf_rdptr(rl->c.rx), hb_buf_size(rl->c.rx)) != 0) {
            *why = "out of memory\n";
            up_close(rl, 0);
            return 503;
        }
        hb_buf_clear(rl->c.rx);
        flow_init(&rl->c2u, &rl->out, UNTIL_END);
        flow_init(&rl->u2c, rl->c.tx, UNTIL_END);
        rl->c_shut = rl->u_shut = 0;
        rl->answered = 1;
        RELAY_COUNT(rl, tunnels);
    }
    return -1; /* go on */
}

/* While the request goes out: what the upstream sent meanwhile, read into
 * rl->in. Returns 1 when a final response head is whole there (an early
 * answer, as a 413 from the head alone: RFC 9112 section 9.3 lets a server
 * answer before it has read the body), else 0; an interim head is dropped.
 * Read now, the answer is not lost to the reset an upstream that closes
 * with the body unread sends. */
static int early_answer(hb_relay *rl, int *moved)
{
    while (!rl->up_eof) {
        size_t have = hb_buf_size(&rl->in);
        if (have > 0) {
            hb_response_reset(&rl->resp);
            int rc = hb_parse_response(&rl->resp, hb_buf_rdptr(&rl->in), have,
                                       rl->head_req ? HB_PARSE_HEAD_REQUEST : 0);
            if (rc == HB_PARSE_DONE && rl->resp.status < 200 && rl->resp.status != 101) {
                hb_buf_consume(&rl->in, rl->resp.head_len);
                continue;
            }
            hb_response_reset(&rl->resp);
            if (rc != HB_PARSE_MORE)
                return 1; /* a final head, or a malformed one: st_head says which */
        }
        if (hb_buf_reserve(&rl->in, HEAD_READ_COPY) != 0)
            return 0;
        ssize_t n;
        do
            n = rl->up.tp->read(&rl->up, hb_buf_wrptr(&rl->in), HEAD_READ_COPY);
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
            /* Nothing yet; or the end, or an error, that the send meets. */
            rl->up_eof = n == 0 || !would_block();
            return 0;
        }
        hb_buf_commit(&rl->in, (size_t)n);
        *moved = 1;
    }
    return 0;
}

/* The request and its body out to the upstream; an early answer ends it
 * (what is left of the body is not sent, and the client's connection
 * closes after the answer, its body drained). */
static int st_send(hb_relay *rl, int64_t now, int *moved, const char **why)
{
    for (;;) {
        int rc = flow_run(&rl->c2u, rl->c.sock, &rl->up, rl->zero_copy, moved);
        if (rc != 1 && rl->answered == 0 && early_answer(rl, moved)) {
            rl->w.close_after = 1;
            rl->w.body_left = 1;
            rl->reqbody.kind = HB_BODY_NONE;
            relay_enter(rl, R_HEAD);
            return -1;
        }
        if (rc < 0) {
            if (rl->c2u.failed == 2 && send_again(rl, now) == 0)
                return -1;
            if (rl->c2u.failed == 2) {
                *why = "the upstream closed the connection before taking the request\n";
                return 502;
            }
            return HB_RELAY_CLOSE; /* the client went, mid-body */
        }
        if (rc == 0) {
            rl->w.io_client = rl->c2u.wait_src ? HB_SOCK_WANT_READ : 0;
            /* And readable, for an early answer. */
            rl->w.io_up =
                (rl->c2u.wait_dst ? HB_SOCK_WANT_WRITE : 0) | (rl->up_eof ? 0 : HB_SOCK_WANT_READ);
            rl->up_waiting = rl->c2u.wait_dst;
            return HB_RELAY_WAIT;
        }
        if (rl->reqbody.kind != HB_BODY_CHUNKED)
            break;
        /* A chunked body, through its decoder: the client's next bytes. */
        if (hb_buf_reserve(rl->c.rx, 16384) != 0) {
            *why = "out of memory\n";
            return 503;
        }
        ssize_t n = rl->c.sock->tp->read(rl->c.sock, hb_buf_wrptr(rl->c.rx), 16384);
        if (n == 0 || (n < 0 && !would_block() && errno != EINTR))
            return HB_RELAY_CLOSE;
        if (n < 0) {
            rl->w.io_client = errno == EINTR ? 0 : HB_SOCK_WANT_READ;
            rl->w.io_up = 0;
            rl->up_waiting = 0;
            if (errno == EINTR)
                continue;
            return HB_RELAY_WAIT;
        }
        *moved = 1;
        hb_buf_commit(rl->c.rx, (size_t)n);
        if (relay_take_body(rl, why) != 0) {
            up_close(rl, 1);
            return 400;
        }
    }
    relay_enter(rl, R_HEAD);
    return -1;
}

/* Queues the client's response head for the upstream's head in rl->in,
 * by the server's own head writer (head.h). Returns 0, -1 when memory ran
 * out, or -2 when the head would pass the parsers' limits. */
static int relay_queue_head(hb_relay *rl)
{
    const hb_response *p = &rl->resp;
    const char *base = hb_buf_rdptr(&rl->in);
    int fields;
    hb_buf_clear(rl->c.tx);
    if (hb_buf_reserve(rl->c.tx, FIELDS_ROOM(p->head_len, p->num_headers) + rl->cfg->via_len +
                                     HB_HEAD_END_MAX + 16) != 0)
        return -1;
    char *w = hb_buf_wrptr(rl->c.tx), *start = w;
    w = hb_head_status(w, p->status, base + p->reason_off, p->reason_len);
    w = put_fields(w, base, p->headers, p->num_headers,
                   (rl->dechunk ? SKIP_TE : 0) |
                       (has_transfer_encoding(base, p->headers, p->num_headers) ? SKIP_LENGTH : 0),
                   &fields);
    w = hb_head_put(w, rl->cfg->via, rl->cfg->via_len);
    w = hb_head_end(w, rl->w.close_after, rl->c.req->minor_version);
    hb_buf_commit(rl->c.tx, (size_t)(w - start));
    return within_limits(fields + 2, hb_buf_size(rl->c.tx)) ? 0 : -2;
}

/* Waits for, reads and parses the upstream's response head. */
/* await_head's return when the final head is in: none of st_head's own
 * (a status, HB_RELAY_WAIT which is 0, or -1). */
#define HEAD_READY 1

/* Reads the upstream until its final response head parses in rl->in (its
 * interim ones skipped). Returns HEAD_READY then, else st_head's value: a
 * status (502, 503) with *why, HB_RELAY_WAIT, or -1 when the request went
 * again on a new connection. */
static int await_head(hb_relay *rl, int64_t now, int *moved, const char **why)
{
    for (;;) {
        size_t have = hb_buf_size(&rl->in);
        int rc = have == 0 ? HB_PARSE_MORE
                           : hb_parse_response(&rl->resp, hb_buf_rdptr(&rl->in), have,
                                               rl->head_req ? HB_PARSE_HEAD_REQUEST : 0);
        if (rc == HB_PARSE_ERROR) {
            *why = "the upstream's response is malformed\n";
            up_close(rl, 1);
            return 502;
        }
        if (rc == HB_PARSE_DONE && rl->resp.status < 200 && rl->resp.status != 101) {
            /* Interim responses end here: the relay answered any
             * 100-continue itself. */
            hb_buf_consume(&rl->in, rl->resp.head_len);
            hb_response_reset(&rl->resp);
            continue;
        }
        if (rc == HB_PARSE_DONE && rl->resp.status == 101) {
            *why = "the upstream switched protocols, which the relay does not carry\n";
            up_close(rl, 1);
            return 502;
        }
        if (rc == HB_PARSE_DONE)
            return HEAD_READY;
        size_t want = rl->zero_copy ? RELAY_HEAD_READ : HEAD_READ_COPY;
        if (hb_buf_reserve(&rl->in, want) != 0) {
            *why = "out of memory\n";
            return 503;
        }
        ssize_t n;
        do
            n = rl->up.tp->read(&rl->up, hb_buf_wrptr(&rl->in), want);
        while (n < 0 && errno == EINTR);
        if (n < 0 && would_block()) {
            rl->w.io_client = 0;
            rl->w.io_up = HB_SOCK_WANT_READ;
            rl->up_waiting = 1;
            return HB_RELAY_WAIT;
        }
        if (n <= 0) {
            if (have == 0 && send_again(rl, now) == 0)
                return -1;
            *why = n == 0 ? "the upstream closed the connection before a complete response\n"
                          : "the upstream reset the connection\n";
            up_close(rl, 1);
            return 502;
        }
        hb_buf_commit(&rl->in, (size_t)n);
        *moved = 1;
    }
}

static int st_head(hb_relay *rl, int64_t now, int *moved, const char **why)
{
    int waited = await_head(rl, now, moved, why);
    if (waited != HEAD_READY)
        return waited;
    const hb_response *p = &rl->resp;
    rl->dechunk = p->body == HB_BODY_CHUNKED && rl->c.req->minor_version == 0;
    if (p->body == HB_BODY_CLOSE || rl->dechunk)
        rl->w.close_after = 1; /* the client's end of the body is the close */
    rl->up_keep = p->keep_alive && p->body != HB_BODY_CLOSE;
    int queued = relay_queue_head(rl);
    if (queued != 0) {
        hb_buf_clear(rl->c.tx);
        *why = queued == -2 ? "with the relay's Via the upstream's response head would pass "
                              "100 fields or 64 KiB\n"
                            : "out of memory\n";
        up_close(rl, 1);
        return queued == -2 ? 502 : 503;
    }
    hb_buf_consume(&rl->in, p->head_len);
    hb_body_init(&rl->respbody, p->body, p->content_length);
    uint64_t left = p->body == HB_BODY_LENGTH  ? p->content_length
                    : p->body == HB_BODY_CLOSE ? UNTIL_END
                                               : 0;
    /* Body bytes that came with the head go after it. */
    if (p->body == HB_BODY_LENGTH || p->body == HB_BODY_CLOSE) {
        size_t take = hb_buf_size(&rl->in);
        if (left != UNTIL_END && take > left) {
            take = (size_t)left;
            rl->up_keep = 0; /* bytes past the body: the upstream is out of step */
        }
        if (hb_buf_append(rl->c.tx, hb_buf_rdptr(&rl->in), take) != 0) {
            *why = "out of memory\n";
            up_close(rl, 1);
            return 503;
        }
        if (left != UNTIL_END)
            left -= take;
        hb_buf_consume(&rl->in, take);
    }
    if (p->body != HB_BODY_CHUNKED && hb_buf_size(&rl->in) > 0)
        rl->up_keep = 0;
    flow_init(&rl->u2c, rl->c.tx, left);
    RELAY_COUNT(rl, relayed);
    relay_enter(rl, R_RESP);
    rl->answered = 1; /* from here a failure can only cut the client off */
    return -1;
}

/* Feeds the chunked body bytes in rl->in through the decoder into the client's tx:
 * as they came, or (dechunk) their data only. Returns 1 at the body's end,
 * 0 for more, -1 on a bad chunk. */
static int feed_chunked(hb_relay *rl)
{
    while (hb_buf_size(&rl->in) > 0) {
        const char *p = hb_buf_rdptr(&rl->in);
        size_t used, off, n;
        int rc = hb_body_feed(&rl->respbody, p, hb_buf_size(&rl->in), &used, &off, &n);
        if (rc == HB_PARSE_ERROR)
            return -1;
        if ((rl->dechunk ? hb_buf_append(rl->c.tx, p + off, n)
                         : hb_buf_append(rl->c.tx, p, used)) != 0)
            return -1;
        hb_buf_consume(&rl->in, used);
        if (rc == HB_PARSE_DONE) {
            if (hb_buf_size(&rl->in) > 0)
                rl->up_keep = 0;
            hb_buf_clear(&rl->in);
            return 1;
        }
    }
    return 0;
}

/* The response out to the client. */
static int st_resp(hb_relay *rl, int *moved)
{
    int chunked = rl->resp.body == HB_BODY_CHUNKED;
    int body_done = !chunked;
    if (chunked) {
        int rc = feed_chunked(rl);
        if (rc < 0)
            goto upstream_failed;
        body_done = rc == 1;
    }
    for (;;) {
        int rc = flow_run(&rl->u2c, &rl->up, rl->c.sock, rl->zero_copy && !chunked, moved);
        if (rc < 0) {
            if (rl->u2c.failed == 1)
                goto upstream_failed;
            up_close(rl, 1);
            return HB_RELAY_CLOSE; /* the client went */
        }
        if (rc == 0 || !chunked || body_done) {
            if (rc == 1 && body_done)
                break;
            rl->w.io_client = rl->u2c.wait_dst ? HB_SOCK_WANT_WRITE : 0;
            rl->w.io_up = rl->u2c.wait_src ? HB_SOCK_WANT_READ : 0;
            if (chunked && !body_done && hb_buf_size(rl->c.tx) < HB_RELAY_WINDOW)
                rl->w.io_up = 0; /* (read below) */
            else {
                rl->up_waiting = rl->u2c.wait_src && !rl->u2c.wait_dst;
                return HB_RELAY_WAIT;
            }
        }
        /* Chunked: more from the upstream once the window has room. */
        if (hb_buf_reserve(&rl->in, CHUNKED_READ) != 0)
            goto upstream_failed;
        ssize_t n;
        do
            n = rl->up.tp->read(&rl->up, hb_buf_wrptr(&rl->in), CHUNKED_READ);
        while (n < 0 && errno == EINTR);
        if (n < 0 && would_block()) {
            rl->w.io_up = HB_SOCK_WANT_READ;
            rl->up_waiting = !rl->w.io_client;
            return HB_RELAY_WAIT;
        }
        if (n <= 0)
            goto upstream_failed;
        *moved = 1;
        hb_buf_commit(&rl->in, (size_t)n);
        rc = feed_chunked(rl);
        if (rc < 0)
            goto upstream_failed;
        body_done = rc == 1;
    }
    if (!rl->up_keep)
        up_close(rl, 0);
    return HB_RELAY_DONE;

upstream_failed:
    /* The client has the head (or part of the body): all it can be told
     * is a reset, which says the response is incomplete. */
    up_close(rl, 1);
    hb_sock_abort_on_close(rl->c.sock);
    return HB_RELAY_CLOSE;
}

/* Both directions of a tunnel, until both have ended. */
static int st_tunnel(hb_relay *rl, int *moved)
{
    int zc = rl->zero_copy;
    int a = flow_run(&rl->c2u, rl->c.sock, &rl->up, zc, moved);
    int b = flow_run(&rl->u2c, &rl->up, rl->c.sock, zc, moved);
    if (a < 0 || b < 0) {
        up_close(rl, 1);
        hb_sock_abort_on_close(rl->c.sock);
        return HB_RELAY_CLOSE;
    }
    /* An end of stream goes on as a half close (a client may send all,
     * shut its side, and still read the answer). */
    if (a == 1 && !rl->u_shut) {
        rl->up.tp->shutdown_write(&rl->up);
        rl->u_shut = 1;
    }
    if (b == 1 && !rl->c_shut) {
        rl->c.sock->tp->shutdown_write(rl->c.sock);
        rl->c_shut = 1;
    }
    if (a == 1 && b == 1) {
        up_close(rl, 0);
        return HB_RELAY_CLOSE;
    }
    rl->w.io_client = (a == 0 && rl->c2u.wait_src ? HB_SOCK_WANT_READ : 0) |
                      (b == 0 && rl->u2c.wait_dst ? HB_SOCK_WANT_WRITE : 0);
    rl->w.io_up = (b == 0 && rl->u2c.wait_src ? HB_SOCK_WANT_READ : 0) |
                  (a == 0 && rl->c2u.wait_dst ? HB_SOCK_WANT_WRITE : 0);
    rl->up_waiting = 0;
    return HB_RELAY_WAIT;
}

int hb_relay_expired(hb_relay *rl)
{
    if (rl == NULL || rl->tunnel || !rl->up_waiting || rl->answered)
        return 0;
    rl->timed_out = 1;
    return 1;
}

int hb_relay_advance(hb_relay *rl, int64_t now, const char **why)
{
    int moved = 0, rc = -1;
    if (rl->timed_out) {
        up_close(rl, 1);
        *why = "the upstream did not answer within the relay's upstream_timeout\n";
        return 504;
    }
    rl->w.io_client = rl->w.io_up = 0;
    while (rc == -1) {
        switch (rl->state) {
        case R_CONNECT: rc = st_connect(rl, why); break;
        case R_SEND: rc = st_send(rl, now, &moved, why); break;
        case R_HEAD: rc = st_head(rl, now, &moved, why); break;
        case R_RESP: rc = st_resp(rl, &moved); break;
        default: rc = st_tunnel(rl, &moved); break; /* R_TUNNEL */
        }
        if (rc == -1)
            moved = 1; /* a state done is progress */
    }
    if (rc >= 400 && rl->answered) {
        up_close(rl, 1);
        return HB_RELAY_CLOSE;
    }
    if (rc != HB_RELAY_WAIT)
        return rc;
    /* Progress restarts the wait's clock; what it waits for sets its
     * length: an upstream gets upstream_timeout, a client reading or
     * sending a body the server's own limits, a tunnel the idle time. */
    if (moved)
        rl->w.since = hb_now_ns();
    rl->w.waits = rl->tunnel && rl->state == R_TUNNEL        ? HB_RELAY_WAITS_IDLE
                  : rl->up_waiting || rl->state == R_CONNECT ? HB_RELAY_WAITS_UPSTREAM
                  : rl->w.io_client & HB_SOCK_WANT_WRITE     ? HB_RELAY_WAITS_SEND
                                                             : HB_RELAY_WAITS_CLIENT;
    if (rl->state == R_CONNECT)
        rl->up_waiting = 1;
    return HB_RELAY_WAIT;
}
