/* fuzz_relay.c: libFuzzer driver for the relay's request path: any bytes a
 * client may send to the embedded server as a forward proxy, fed through a
 * socket pair to one hb_sess in proxy mode, with a real upstream listening
 * on loopback that answers whatever it is sent with a fixed response. The
 * session must end in answers and a close, never a crash, a hang or
 * unbounded memory; every answer must start with a status line; and what
 * the relay forwards upstream (a tunnel's bytes aside) must parse as a
 * request head, without both Content-Length and Transfer-Encoding.
 *
 * The upstream's port is random: the five bytes "@@@@@" in an input stand
 * for it (seeds name http://127.0.0.1:@@@@@/...).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_relay tests/c/fuzz_relay.c \
 *       csrc/session.c csrc/relay.c csrc/route.c csrc/parser.c csrc/buf.c csrc/net.c
 *   ./fuzz_relay -max_total_time=60 tests/c/corpus_relay
 *
 * Built with -DHB_FUZZ_MAIN instead, it replays the files it is given.
 */
#define _GNU_SOURCE
#include "harness.h"

#include "../../csrc/relay.h"
#include "fuzz_sess.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define OUT_MAX (4u << 20)
#define UP_MAX 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

static int listener = -1;
static char port_text[6];

static hb_relay_config relay_cfg;

static hb_srv_shared *relay_shared(void)
{
    static hb_srv_shared sh;
    static int made;
    if (!made) {
        sh = *fuzz_shared(NULL, NULL);
        sh.relay = &relay_cfg;
        relay_cfg.upstream_timeout = 1000000000;
        relay_cfg.via_len = (size_t)snprintf(relay_cfg.via, sizeof relay_cfg.via,
                                             "Via: 1.1 httpbench-fuzz0000\r\n");
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) != 0 ||
            listen(listener, 64) != 0 || getsockname(listener, (struct sockaddr *)&a, &len) != 0)
            abort();
        snprintf(port_text, sizeof port_text, "%05u", ntohs(a.sin_port));
        made = 1;
    }
    return &sh;
}

/* The upstream's side of one input: the connections it accepted. */
typedef struct {
    int fd[8];
    int n;
    char got[UP_MAX]; /* what the first connection was sent */
    size_t got_len;
} upstream;

static void upstream_step(upstream *u)
{
    int fd;
    while (u->n < 8 && (fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0)
        u->fd[u->n++] = fd;
    for (int i = 0; i < u->n; i++) {
        char buf[65536];
        ssize_t r;
        while (u->fd[i] >= 0 && (r = read(u->fd[i], buf, sizeof buf)) != 0) {
            if (r < 0)
                break;
            if (i == 0) {
                size_t take = (size_t)r < UP_MAX - u->got_len ? (size_t)r : UP_MAX - u->got_len;
                memcpy(u->got + u->got_len, buf, take);
                u->got_len += take;
            }
            /* Each read is answered (a kept connection's next request
             * too); a tunnel's peer gets the same bytes back. */
            if (write(u->fd[i], answer, sizeof answer - 1) < 0 && errno != EAGAIN)
                break;
        }
        if (u->fd[i] >= 0 && r == 0) {
            close(u->fd[i]); /* the relay shut its side: so do we */
            u->fd[i] = -1;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char in[60000];
    int sv[2];
    hb_srv_shared *sh = relay_shared();
    if (size > sizeof in || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    memcpy(in, data, size);
    /* Both ways of moving bytes: splice for inputs of even length, the
     * buffer for odd. */
    relay_cfg.zero_copy = size % 2 == 0;
    for (char *p = in; (p = memmem(p, size - (size_t)(p - in), "@@@@@", 5)) != NULL; p += 5)
        memcpy(p, port_text, 5);
    if (size > 0 && write(sv[1], in, size) != (ssize_t)size)
        abort();
    shutdown(sv[1], SHUT_WR);

    static upstream u;
    u.n = 0;
    u.got_len = 0;
    uint64_t tunnels = relay_cfg.tunnels;
    hb_sess s;
    int64_t now = 1;
    size_t got = 0;
    if (hb_sess_init(&s, sv[0], sh, now, 0) != 0)
        abort();
    for (int round = 0; round < 20000; round++) {
        hb_want w = hb_sess_advance(&s, now);
        if (w == HB_WANT_CLOSE)
            break;
        if (w == HB_WANT_TIMER)
            now = s.wake_at;
        upstream_step(&u);
        fuzz_read_answers(sv[1], &got);
        if (got > OUT_MAX)
            break;
        now += 1000;
        if (w == HB_WANT_READ && round > 2000)
            break; /* waiting on a client that has said all it will */
    }
    hb_sock_close(&s.sock);
    close(sv[1]);
    hb_sess_free(&s);
    for (int i = 0; i < u.n; i++)
        if (u.fd[i] >= 0)
            close(u.fd[i]);
    if (sh->buffered != 0)
        abort();
    /* What went upstream (a tunnel carries anything) is a request head. */
    if (relay_cfg.tunnels == tunnels && u.got_len > 0) {
        static hb_request r;
        hb_request_reset(&r);
        if (hb_parse_request(&r, u.got, u.got_len) == HB_PARSE_ERROR) {
            fprintf(stderr, "the relay forwarded a bad head: %s\n", r.error);
            abort();
        }
    }
    return 0;
}
