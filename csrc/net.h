/* net.h: hb_net_* and hb_sock_*, sockets with deadlines and a swappable
 * transport: the one way to a socket for the client, the loop and the
 * server.
 *
 * A transport (wrk's struct sock) is a table of functions over an hb_sock;
 * plain TCP is hb_net_tcp. TLS or a Unix socket is another table. Every
 * read and write of a stream goes through it; only net.c (and the
 * transports beside it) call recv, send and the like on a socket.
 *
 * A transport serves two modes, by how its socket was made:
 * - Blocking (Connection): hb_sock_open runs the non-blocking steps below
 *   (connect, then the transport's handshake) with waits by a deadline,
 *   and leaves a blocking socket; hb_sock_read / hb_sock_writev wait in the kernel under
 *   SO_RCVTIMEO / SO_SNDTIMEO rather than in poll(), so a request costs one
 *   write and one read, as in the floor; the timeouts are moved only when a
 *   deadline comes nearer than they are, which a fast request never does.
 * - Non-blocking (the loop, the server): `connect_start` / `connect_done`
 *   or `attach`, then `read` / `writev` / `sendfile` until they fail with
 *   EAGAIN, when s->wants says what to wait for: HB_SOCK_WANT_READ or
 *   HB_SOCK_WANT_WRITE. Plain TCP wants what the call was (read wants
 *   readable); a transport that does its own I/O (TLS) may want the other,
 *   and the caller must wait for what it says.
 * A deadline is a CLOCK_MONOTONIC instant in nanoseconds.
 */
#ifndef HB_NET_H
#define HB_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

/* Outcomes of the network and connection layers. Only the glue turns them
 * into exceptions. */
typedef enum {
    HB_OK = 0,
    HB_ERR_CONNECT,    /* could not resolve or connect */
    HB_ERR_TIMEOUT,    /* a deadline passed */
    HB_ERR_PROTOCOL,   /* the peer sent invalid or unsupported HTTP */
    HB_ERR_INCOMPLETE, /* the peer closed or reset before the response was complete */
    HB_ERR_IO,         /* some other system error */
    HB_ERR_NOMEM,
    HB_ERR_INTERRUPTED, /* the interrupt callback asked to stop */
    HB_ERR_TLS,         /* the TLS handshake or a record failed */
    HB_ERR_RESET,       /* the server reset the HTTP/2 stream (RST_STREAM) */
} hb_status;

/* One resolved address. */
typedef struct {
    struct sockaddr_storage sa;
    socklen_t len;
} hb_addr;

typedef struct hb_sock hb_sock;

/* What a transport's opening agreed on (a TLS handshake), for reports. */
typedef struct {
    char protocol[128];   /* as ab prints it: "TLSv1.3,TLS_AES_256_GCM_SHA384,256,256" */
    char temp_key[64];    /* the key exchange: "X25519 253 bits" */
    char server_name[96]; /* the name sent (SNI), empty when none */
} hb_sock_info;

/* Flags for a transport's writev. */
#define HB_SOCK_MORE 1     /* more follows at once (a head before a file): cork */
#define HB_SOCK_DONTWAIT 2 /* do not block, even on a blocking socket */

/* What a non-blocking call that failed with EAGAIN waits for (s->wants). */
#define HB_SOCK_WANT_READ 1
#define HB_SOCK_WANT_WRITE 2

typedef struct {
    const char *name;
    /* Starts connecting s to a (s->fd is -1 before).
     * Returns 0 when connected at once, 1 when under way (wait until
     * writable, then connect_done), or -1 with errno and s->fd -1. */
    int (*connect_start)(hb_sock *s, const hb_addr *a);
    /* How the connect under way ended: 0, or -1 with its errno. */
    int (*connect_done)(hb_sock *s);
    /* Server side: takes an accepted socket fd (blocking or not, as the
     * driver made it). Returns 0, or -1 with errno (fd not taken). */
    int (*attach)(hb_sock *s, int fd);
    /* As recv(2) and sendmsg(2): one call, -1 with errno (EAGAIN: on a
     * blocking socket the timeout expired; on a non-blocking one, see
     * s->wants). writev takes HB_SOCK_* flags. */
    ssize_t (*read)(hb_sock *s, void *buf, size_t len);
    ssize_t (*writev)(hb_sock *s, const struct iovec *iov, int iovcnt, int flags);
    /* Sends up to n bytes of file_fd from *off (advanced) without copying
     * through user space, as sendfile(2). NULL for a transport that must
     * see every byte (TLS): the caller reads and writes instead. */
    ssize_t (*sendfile)(hb_sock *s, int file_fd, off_t *off, size_t n);
    /* Moves up to n bytes between the socket and a pipe without copying
     * through user space, as splice(2): from the socket into pipe_fd (a
     * pipe's write end) when `in`, else from pipe_fd (its read end) out to
     * the socket. Non-blocking on both. NULL as sendfile is. */
    ssize_t (*splice)(hb_sock *s, int pipe_fd, size_t n, int in);
    /* Whether an idle open socket can carry another request: nothing to
     * read and no end of stream waiting on it. Never blocks. */
    int (*idle_ok)(hb_sock *s);
    /* Ends the sending side; reading goes on (a lingering close). */
    void (*shutdown_write)(hb_sock *s);
    /* Releases what open, connect_start or attach made; s->fd is -1 after. */
    void (*close)(hb_sock *s);
    /* The rest may be NULL (plain TCP has none of them). */
    /* Non-blocking mode, client side: after connect_done, the transport's
     * own opening (the TLS handshake), called again until it returns 0;
     * -1 with errno: EAGAIN (wait for s->wants), EPROTO (the transport
     * refused: `error` says why) or the socket's error. NULL: none. A
     * server side opens inside its first read. */
    int (*handshake)(hb_sock *s);
    /* Whether bytes already read from the socket wait inside the transport
     * (a waiter for readable would not hear of them): read again first. */
    int (*pending)(hb_sock *s);
    /* After a read that returned less than it asked for: whether the
     * socket was found empty and nothing waits inside the transport, so
     * that another read could only fail with EAGAIN. NULL: a short read
     * says so itself (plain TCP). A transport that reads records (TLS)
     * hands out one a call, short whatever the socket holds. */
    int (*drained)(hb_sock *s);
    /* After a call failed with EPROTO: why, as text (valid until the next
     * call on s). */
    const char *(*error)(hb_sock *s);
    /* Whether the opening resumed a session (1) or made a new one (0), or
     * -1 when nothing was opened; out (when not NULL) gets what it agreed
     * on, which costs some formatting. */
    int (*describe)(hb_sock *s, hb_sock_info *out);
    /* Frees s->keep, what the transport keeps across reconnects. */
    void (*release)(hb_sock *s);
    /* The protocol the opening agreed on by ALPN (RFC 7301: "h2",
     * "http/1.1"), "" when none, NULL-able for a transport with no such
     * thing (plain TCP: then the caller's own choice stands). */
    const char *(*alpn)(hb_sock *s);
} hb_transport;

/* Whether s's transport agreed on ALPN protocol `proto` ("h2"): 0 for a
 * transport without ALPN. */
int hb_sock_alpn_is(hb_sock *s, const char *proto);

struct hb_sock {
    int fd; /* -1 when closed */
    const hb_transport *tp;
    void *ctx;                  /* the transport's own state, per socket */
    void *shared;               /* the transport's settings, shared by many
                                 * sockets (TLS: an hb_tls); set before opening */
    void *keep;                 /* kept across reconnects (TLS: the session to
                                 * resume, the last SSL); freed by hb_sock_release */
    int wants;                  /* after EAGAIN: HB_SOCK_WANT_READ or _WRITE */
    int buffer;                 /* SO_SNDBUF and SO_RCVBUF set before connecting, bytes
                                 * (0: the kernel's autotuning, which a set size ends) */
    int64_t timeout;            /* the per-request timeout, ns */
    int64_t rcvtimeo, sndtimeo; /* what the kernel has been told, ns */
    /* Called (when set) each time a wait is cut short by a signal: returns
     * nonzero to give up with EINTR, zero to go on waiting. */
    int (*interrupted)(void *arg);
    void *interrupt_arg;
    /* Called (when set) by hb_sock_open between connecting and the
     * transport's handshake, on the non-blocking socket: a step of opening
     * (a proxy's CONNECT). Returns 0 when done, 1 to wait for s->wants and
     * be called again, -1 with errno (EACCES: refused; no other address is
     * tried then). */
    int (*before_handshake)(hb_sock *s, void *arg);
    void *before_arg;
};

/* Whether bytes already read from s's socket wait inside its transport
 * (tp->pending; none for a transport without it). Inline: a reader asks
 * after each short read. */
static inline int hb_sock_pending(hb_sock *s)
{
    return s->tp->pending != NULL && s->tp->pending(s);
}

/* Plain TCP: TCP_NODELAY, close-on-exec, no SIGPIPE. */
extern const hb_transport hb_net_tcp;

/* CLOCK_MONOTONIC now, in nanoseconds. Inline, so that code without the
 * rest of net.c (the session and its fuzz driver) reads the same clock. */
static inline int64_t hb_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Bounds the next blocking call on fd by `left` nanoseconds through its
 * timeout `opt` (SO_RCVTIMEO or SO_SNDTIMEO), whose setting the caller keeps
 * in *cur (ns; 0 when never set). The timeout is moved only when it would
 * end more than a slack (2 ms) after `left`, or before half of it: a run of
 * fast waits never pays a setsockopt, and a wait never ends more than the
 * slack late (an early end costs the caller one more call). Returns 0, or -1
 * with errno (ETIMEDOUT when left <= 0). */
int hb_net_bound_wait(int fd, int opt, int64_t *cur, int64_t left);

/* Resolves host and port (a name or a number) into at most `max` stream
 * addresses. Returns how many, or -1 with a message in err. Blocks in
 * getaddrinfo(3). */
int hb_net_resolve(const char *host, const char *port, hb_addr *out, int max, char *err,
                   size_t errlen);

/* The address of the Unix socket at path (its length checked: 1 to 107
 * bytes). Returns 1 (one address, as hb_net_resolve counts), or -1 with a
 * message in err. The TCP transport connects to it as to any address. */
int hb_net_unix(const char *path, hb_addr *out, char *err, size_t errlen);

/* Sets s up closed, on transport tp, with the per-request timeout. */
void hb_sock_init(hb_sock *s, const hb_transport *tp, int64_t timeout);

/* Waits by the deadline until s->fd is ready for `events` (poll(2) flags).
 * Returns 0, or -1 with errno ETIMEDOUT or EINTR (interrupted). For
 * transports' use while connecting. */
int hb_sock_wait(hb_sock *s, short events, int64_t deadline);

/* Tries each address in turn until one connects (and its transport's
 * handshake is done) by the deadline, leaving s->fd a blocking socket.
 * Returns the index of the one that did, or -1 with errno from the last
 * attempt (ETIMEDOUT when the deadline passed, EINTR when interrupted,
 * EPROTO when the transport refused) and s->fd -1. */
int hb_sock_open(hb_sock *s, const hb_addr *addrs, int n, int64_t deadline);

/* Reads at most len bytes by the deadline. Returns the count (0 at end of
 * stream), or -1 with errno: ETIMEDOUT, EINTR (interrupted) or the
 * socket's error. */
ssize_t hb_sock_read(hb_sock *s, void *buf, size_t len, int64_t deadline);

/* Writes all of iov by the deadline; iov is used up in the process.
 * Returns 0, or -1 with errno as for hb_sock_read. */
int hb_sock_writev(hb_sock *s, struct iovec *iov, int iovcnt, int64_t deadline);

/* Closes s if open. */
void hb_sock_close(hb_sock *s);

/* Closes s and frees what its transport kept across reconnects. */
void hb_sock_release(hb_sock *s);

/* Text for a failure of a call on s with errno err: the transport's own
 * reason for EPROTO, else strerror's. Valid until the next call on s. */
const char *hb_sock_strerror(hb_sock *s, int err);

/* Makes an open non-blocking socket blocking, each call returning after at
 * most tick_ns (the loop's lone connection waits in recv so). Returns 0, or
 * -1 with errno. */
int hb_sock_set_blocking(hb_sock *s, int64_t tick_ns);

/* Has the next close reset the connection (SO_LINGER 0): a peer that does
 * not read is not trickled the rest. */
void hb_sock_abort_on_close(hb_sock *s);

/* Shuts both sides down, from any thread: a thread blocked on s returns at
 * once (the server's stop). The socket stays open until closed. */
void hb_sock_shutdown(hb_sock *s);

#endif
