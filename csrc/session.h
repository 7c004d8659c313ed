/* session.h: hb_sess_*, one server-side connection as a state machine.
 *
 * A session reads requests, plans each with hb_route, reads its body, waits
 * out a /delay, and sends the response, then goes round again (pipelined
 * requests are answered in order). It does the socket calls itself and stops
 * when one would block, saying what it waits for; the driver (an epoll loop,
 * or a thread per connection on a blocking socket) waits and calls again.
 * Both server modes thus share every line of HTTP.
 */
#ifndef HB_SESSION_H
#define HB_SESSION_H

#include "buf.h"
#include "net.h"
#include "parser.h"
#include "route.h"
#include "srvshare.h"

/* What a session waits for. */
typedef enum {
    HB_WANT_READ = 1,
    HB_WANT_READ_TIMER, /* readable, or wake_at, whichever is first (an HTTP/2
                         * stream's /delay runs while the others are read) */
    HB_WANT_WRITE,
    HB_WANT_TIMER, /* call again at wake_at */
    HB_WANT_CLOSE, /* done: the driver closes fd and frees the session */
    HB_WANT_IO,    /* relaying: wait for io_client on fd and io_up on up_fd
                    * (HB_SOCK_WANT_* bits, either may be 0) or the deadline */
} hb_want;

typedef struct hb_sess {
    hb_sock sock; /* the connection, through the transport */
    hb_srv_shared *sh;
    int state;
    int drained;                /* the last read found the socket empty */
    int blocking;               /* fd is a blocking socket: each wait is bounded by
                           * SO_RCVTIMEO / SO_SNDTIMEO, set from the deadline */
    int64_t rcvtimeo, sndtimeo; /* what the kernel has been told, ns; 0: unset */
    int head_begun;             /* a byte of the next request (an empty line too) came */
    int h2_looked;              /* the first bytes said HTTP/1.1, not HTTP/2 */
    uint64_t reserved;          /* bytes of sh->buffered this session holds */
    hb_buf rx, tx, body;
    hb_request req;
    hb_body reqbody;   /* the request body's framing and bytes so far */
    uint64_t lingered; /* bytes drained while closing */
    hb_plan plan;
    uint64_t sent;   /* body bytes sent (or, chunked, framed) so far */
    int final_chunk; /* chunked: the last chunk is queued */
    int close_after;
    /* The request body was not all read (a relayed early answer): linger,
     * draining it, before the close. */
    int body_left;
    char content_type[256]; /* echoed by /echo */
    struct hb_relay *relay; /* the relay (relay.h), from the first request relayed */
    struct hb_h2s *h2s;     /* HTTP/2 (h2srv.h), once the connection speaks it */
    /* With HB_WANT_IO, the relay's wait as hb_relay_waits said it last. */
    int io_client, io_up;
    int up_fd;        /* the upstream socket, -1 when none */
    unsigned up_gen;  /* counts upstream sockets: a new one is a new
                      * generation though its number may repeat */
    int64_t since;    /* when the current wait began, or its last progress */
    int64_t deadline; /* when it gives up; 0: never. Kept current in every
                           * state, so a blocking wait can be bounded by it */
    int64_t wake_at;  /* for HB_WANT_TIMER */
    /* The driver's own fields. */
    void *driver;
    struct hb_sess *prev, *next;
    int heap_index;
    unsigned events;
    unsigned up_gen_seen; /* the upstream generation the driver watches */
    int read_timer;       /* it waits for HB_WANT_READ_TIMER: in the heap and the set */
    /* Called (when set) just before up_fd is closed: an epoll set must drop
     * it first, as a forked child may hold the socket open past the close,
     * and its events would name a session that is gone. */
    void (*unwatch)(struct hb_sess *s, int fd);
} hb_sess;

/* Sets s up for an accepted socket fd, handed to the shared transport
 * (which then owns it: hb_sock_close closes it). Returns 0, or -1 with
 * errno when the transport would not take it (fd is then the caller's to
 * close). The socket is non-blocking for an event loop, or
 * blocking (`blocking` nonzero) for a thread of its own, whose every wait
 * then ends at the session's deadline (the session sets the socket's
 * timeouts from it) or when the socket is shut down. */
int hb_sess_init(hb_sess *s, int fd, hb_srv_shared *sh, int64_t now, int blocking);

/* Does all it can without blocking (or, on a blocking socket, until a
 * socket timeout) and says what it waits for. After HB_WANT_CLOSE the
 * session must not be advanced again. */
hb_want hb_sess_advance(hb_sess *s, int64_t now);

/* Whether the current wait has outlived its deadline: 0 when not; 1 when
 * the driver is to close the session, which resets the connection (unsent
 * data is dropped); 2 when it is to advance it, which answers for the
 * timeout (a relay's upstream that stalled: 504). Counts the timeout. */
int hb_sess_expired(hb_sess *s, int64_t now);

/* Frees what s holds (its share of sh->buffered too), the socket excepted. */
void hb_sess_free(hb_sess *s);

#endif
