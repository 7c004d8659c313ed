/* relay.h: hb_relay_*, the embedded server's forward-proxy mode.
 *
 * With the server's `proxy` on, a session hands two kinds of request here
 * instead of to the routes (RFC 9112 section 3.2): an absolute-form one
 * (`GET http://host:port/path HTTP/1.1`), relayed to that origin with its
 * hop-by-hop fields dropped (RFC 9110 section 7.6.1) and a Via added
 * (section 7.6.3), its response relayed back; and a CONNECT (RFC 9110
 * section 9.3.6), which opens a tunnel. Origin-form requests are still the
 * routes' to answer.
 *
 * Destinations: loopback (127.0.0.0/8, ::1, "localhost"), and what the
 * allow list names; anything else is 403 (an open proxy is a hole). No name
 * is looked up while serving: an allow entry's address is resolved when the
 * server starts.
 *
 * Bytes move as the seed's rabbit moved them. With zero_copy, Content-Length
 * bodies, bodies read until close and tunnels go by splice(2) through a pipe
 * of the session's, never entering user space; chunked bodies are copied
 * (their framing must be read to find their end). Without, everything is
 * read into a buffer and written from it. Either way a direction holds at
 * most one window (the pipe, or HB_RELAY_WINDOW bytes): a side that stops reading
 * stops the other side being read, and nothing grows.
 *
 * The relay works on non-blocking sockets only. Its boundary with the
 * session that hands it requests is this header and nothing else: the
 * session lends it the client side (hb_relay_client: the socket, the two
 * buffers, the parsed request) and reads back what it waits for
 * (hb_relay_wait); the relay writes no field of the session's, and the
 * session none of the relay's.
 */
#ifndef HB_RELAY_H
#define HB_RELAY_H

#include "buf.h"
#include "net.h"
#include "parser.h"

#include <stddef.h>
#include <stdint.h>

/* A destination the allow list lets through besides loopback: requests
 * naming `name` (a host name or an address, compared without case) and
 * `port` (0: any) are relayed to addr (its port replaced by the request's). */
typedef struct {
    char name[256];
    int port;
    hb_addr addr;
} hb_relay_allow;

/* The relay's settings, the server's, fixed while it serves; the counters
 * are updated atomically by every session's relay. */
typedef struct hb_relay_config {
    const hb_relay_allow *allow; /* destinations allowed besides loopback */
    size_t nallow;
    int64_t upstream_timeout; /* ns an upstream may stall before 504 */
    char via[64];             /* "Via: 1.1 httpbench-XXXXXXXX\r\n": its name is this
                               * server's own, so a request that loops back is seen */
    size_t via_len;
    hb_addr self; /* the listening address (TCP), so a CONNECT to it is seen (508) */
    int has_self;
    int zero_copy;    /* bodies and tunnels by splice(2) where the transport can */
    uint64_t relayed; /* responses relayed from an upstream (counted at their head) */
    uint64_t tunnels; /* CONNECT tunnels opened */
} hb_relay_config;

/* What the relay is lent of the client connection it serves, for its whole
 * life (the lender outlives it). It reads and writes the buffers and the
 * socket, and reads the request. */
typedef struct {
    hb_sock *sock;         /* the client's connection */
    hb_buf *rx;            /* bytes from the client not yet taken */
    hb_buf *tx;            /* bytes for the client, written by the relay */
    const hb_request *req; /* the request just parsed, over rx */
    /* Called (when set) just before the upstream socket closes, with
     * owner: an event loop must drop it from its set first. */
    void (*unwatch)(void *owner, int fd);
    void *owner;
} hb_relay_client;

/* Which of the server's limits bounds the relay's current wait. */
enum {
    HB_RELAY_WAITS_CLIENT = 0, /* a client sending its body: header_timeout */
    HB_RELAY_WAITS_SEND,       /* a client not reading: send_timeout */
    HB_RELAY_WAITS_UPSTREAM,   /* an upstream connecting or answering: upstream_timeout */
    HB_RELAY_WAITS_IDLE,       /* a tunnel with nothing moving: idle_timeout */
};

/* What the relay waits for, current after each hb_relay_begin and
 * hb_relay_advance; its lender waits so. */
typedef struct {
    int io_client, io_up; /* HB_SOCK_WANT_* bits for either socket (either may be 0) */
    int up_fd;            /* the upstream socket, -1 when none */
    unsigned up_gen;      /* counts upstream sockets: a new one is a new
                           * generation though its number may repeat */
    int64_t since;        /* when the wait began, or last made progress */
    int waits;            /* HB_RELAY_WAITS_*: the limit on it from since */
    int close_after;      /* the client connection closes after this response */
    int body_left;        /* the request body was not all read (an early answer):
                           * linger, draining it, before the close */
} hb_relay_wait;

typedef struct hb_relay hb_relay;

/* Bytes a direction holds at most when copying: what a zero-copy one holds
 * in its pipe, so the two ways compare like with like. */
#define HB_RELAY_WINDOW (256 * 1024)

/* What hb_relay_advance returns besides a status to answer with. */
#define HB_RELAY_WAIT 0 /* wait as hb_relay_waits says */
#define HB_RELAY_DONE 1 /* the response is out: the session goes on as after its own */
#define HB_RELAY_CLOSE                                                                             \
    2 /* close the connection (a tunnel ended, or a failure after
                          * the client began to get the response) */

/* Whether the request whose head was just parsed (req over head) is the
 * relay's: CONNECT, or a target in absolute form. */
int hb_relay_wanted(const hb_request *req, const char *head);

/* A relay for one client connection, over cfg and what client lends; NULL
 * when memory ran out. Free it with hb_relay_free. */
hb_relay *hb_relay_new(hb_relay_config *cfg, const hb_relay_client *client);

/* Starts relaying the request just parsed (client->req over client->rx):
 * checks its destination, writes the request to send upstream, and takes
 * the head (and what of the body is in) from rx. close_after says whether
 * the client's connection ends after this response. Returns 0 (then
 * hb_relay_advance), or a status to answer with, nothing having been sent
 * anywhere, with *why the text body: 400 (a target that is not
 * http://host[:port]/..., or host:port for CONNECT), 403 (a destination
 * not allowed), 431 (the forwarded head would pass the parsers' limits),
 * 508 (the request came through this relay already) or 503 (no memory).
 * The head is taken from rx either way; on a refusal the body is not, and
 * the session closes after. */
int hb_relay_begin(hb_relay *rl, int64_t now, int close_after, const char **why);

/* Moves what can be moved without blocking. Returns HB_RELAY_WAIT,
 * HB_RELAY_DONE, HB_RELAY_CLOSE, or a status to answer with when nothing
 * of a response has reached the client yet: 502 (the upstream refused the
 * connection, closed or reset it, or answered with a malformed response;
 * *why names which) or 504 (the upstream stalled past upstream_timeout). */
int hb_relay_advance(hb_relay *rl, int64_t now, const char **why);

/* What rl waits for now (valid until rl is freed). */
const hb_relay_wait *hb_relay_waits(const hb_relay *rl);

/* The wait's deadline passed. Returns 1 when the next hb_relay_advance
 * answers it (504: the upstream stalled and the client has had nothing
 * yet), 0 when the connection is to be cut off. */
int hb_relay_expired(hb_relay *rl);

/* Closes the upstream connection and the pipes, and frees rl; NULL is
 * ignored. */
void hb_relay_free(hb_relay *rl);

#endif
