/* fuzz_tls.c: libFuzzer driver for the embedded server's TLS side. The
 * first byte of an input says how the rest reaches one hb_sess on the TLS
 * transport through a socket pair:
 *   even: as they are, where a ClientHello belongs (garbage, a plain HTTP
 *         request, a record cut short, a hello of any shape);
 *   odd:  as the plaintext of a real TLS client (hb_net_tls, its handshake
 *         done first), which the session reads as requests.
 * Either way the session must end in a close, never a crash, a hang or
 * unbounded memory; over TLS every answer must start with a status line.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_tls tests/c/fuzz_tls.c \
 *       csrc/session.c csrc/relay.c csrc/route.c csrc/parser.c csrc/buf.c csrc/net.c csrc/tls.c \
 *       -lssl -lcrypto
 *   ./fuzz_tls -max_total_time=60 tests/c/corpus_tls
 *
 * Built with -DHB_FUZZ_MAIN instead, it replays the files it is given.
 */
#define _GNU_SOURCE
#include "harness.h"

#include "../../csrc/tls.h"
#include "fuzz_sess.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Plaintext read back at most per input. */
#define OUT_MAX (4u << 20)
/* Advances of the pair before giving up on an input: a session waiting on
 * a client that has said all it will. */
#define ROUNDS 4000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hb_tls *context(int server)
{
    static hb_tls *t[2];
    if (t[server] == NULL) {
        char err[256];
        hb_tls_config cfg = {.server = server, .cert_host = "localhost"};
        /* OpenSSL writes with write(2): a closed peer must not kill us. */
        signal(SIGPIPE, SIG_IGN);
        t[server] = hb_tls_new(&cfg, err, sizeof err);
        if (t[server] == NULL) {
            fprintf(stderr, "%s\n", err);
            abort();
        }
    }
    return t[server];
}

static hb_srv_shared *shared(void)
{
    return fuzz_shared(&hb_net_tls, context(1));
}

/* One step of the server side; 1 once it has closed. */
static int serve(hb_sess *s, int64_t *now)
{
    hb_want w = hb_sess_advance(s, *now);
    if (w == HB_WANT_TIMER)
        *now = s->wake_at;
    *now += 1000;
    return w == HB_WANT_CLOSE;
}

/* The raw bytes as what comes first on the TLS port. */
static void as_hello(int fd_server, int fd_client, const uint8_t *data, size_t size)
{
    if (size > 0 && write(fd_client, data, size) != (ssize_t)size)
        abort();
    shutdown(fd_client, SHUT_WR);
    hb_sess s;
    int64_t now = 1;
    char sink[65536];
    if (hb_sess_init(&s, fd_server, shared(), now, 0) != 0)
        abort();
    for (int round = 0; round < ROUNDS && !serve(&s, &now); round++)
        while (read(fd_client, sink, sizeof sink) > 0)
            ;
    hb_sock_close(&s.sock);
    hb_sess_free(&s);
    close(fd_client);
}

/* The bytes as a TLS client's requests. */
static void as_plaintext(int fd_server, int fd_client, const uint8_t *data, size_t size)
{
    hb_sess s;
    hb_sock c;
    int64_t now = 1;
    int closed = 0, round = 0;
    size_t sent = 0, got = 0;
    static char out[65536];
    if (hb_sess_init(&s, fd_server, shared(), now, 0) != 0)
        abort();
    hb_sock_init(&c, &hb_net_tls, 0);
    c.shared = context(0);
    if (hb_net_tls.attach(&c, fd_client) != 0)
        abort();
    /* The handshake, each side stepping in turn. */
    while (hb_net_tls.handshake(&c) != 0) {
        if (errno != EAGAIN || (closed = serve(&s, &now)) != 0 || ++round > ROUNDS)
            abort(); /* a sound client the server will not take */
    }
    for (round = 0; round < ROUNDS && !closed; round++) {
        if (sent < size) {
            struct iovec iov = {(void *)(data + sent), size - sent};
            ssize_t n = hb_net_tls.writev(&c, &iov, 1, 0);
            if (n > 0)
                sent += (size_t)n;
            else if (errno != EAGAIN)
                break; /* the server closed: it may, after a bad request */
            if (sent == size)
                hb_net_tls.shutdown_write(&c);
        }
        closed = serve(&s, &now);
        ssize_t n;
        while ((n = hb_net_tls.read(&c, out, sizeof out)) > 0) {
            if (got == 0 && memcmp(out, "HTTP/1.1 ", (size_t)(n < 9 ? n : 9)) != 0)
                abort();
            got += (size_t)n;
        }
        if (got > OUT_MAX || n == 0)
            break;
    }
    hb_sock_close(&c);
    hb_sock_release(&c); /* the SSL a sound close kept for a next connection */
    hb_sock_close(&s.sock);
    hb_sess_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (size < 1 || size > 60000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    if (data[0] & 1)
        as_plaintext(sv[0], sv[1], data + 1, size - 1);
    else
        as_hello(sv[0], sv[1], data + 1, size - 1);
    /* Every byte of body budget a session took is given back. */
    if (shared()->buffered != 0)
        abort();
    return 0;
}
