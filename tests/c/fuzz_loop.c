/* fuzz_loop.c: libFuzzer driver for the timing loop's connection machine
 * (bench_sock.c, bench_h1.c, bench_h2.c): any bytes a server may send, on
 * each socket a short run opens, over HTTP/1.1 (one at a time or
 * pipelined, kept alive or not) or HTTP/2 (one stream or several), must
 * end the run, never crash or hang, and keep the accounting rule:
 *
 *     issued == the tickets == complete + failed + cancelled
 *     failed == the sum of the failure classes
 *
 * The socket is one end of a socket pair the driver's transport hands the
 * loop in place of a connect (as fuzz_session's pair feeds a server
 * session): the server's bytes are all in it, then its sending side shut,
 * as a server that said its piece and closed. The input: a byte of
 * settings, then up to four pieces (a 2-byte big-endian length, then the
 * bytes), one per socket opened in turn; later sockets get nothing.
 * Built with -DHB_CHECK_STATES (as tests/package/test_c.py and .ci/run build it),
 * every state change is also held to its machine's table.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DHB_CHECK_STATES -o fuzz_loop \
 *       tests/c/fuzz_loop.c <the sources tests/c/drivers.txt lists>
 *   ./fuzz_loop -max_total_time=60 tests/c/corpus_loop
 *
 * Built with -DHB_FUZZ_MAIN instead, it replays the files it is given.
 */
#define _GNU_SOURCE
#include "harness.h"

#include "../../csrc/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PIECES 4
#define MAX_SOCKETS 64

static struct {
    const uint8_t *piece[PIECES];
    size_t len[PIECES];
    int served[MAX_SOCKETS]; /* the server's ends, closed after the run */
    int nsockets;
} feed;

static hb_transport fuzz_tp;

/* In place of a connect: one end of a pair, the server's bytes already in
 * the other, its sending side shut. Connected at once. */
static int fuzz_connect(hb_sock *s, const hb_addr *a)
{
    (void)a;
    int sv[2];
    if (feed.nsockets == MAX_SOCKETS) {
        errno = ECONNREFUSED;
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    int k = feed.nsockets;
    if (k < PIECES && feed.len[k] > 0 &&
        write(sv[1], feed.piece[k], feed.len[k]) != (ssize_t)feed.len[k])
        abort(); /* (a piece is at most 60,000 bytes: it fits the pair's buffer) */
    shutdown(sv[1], SHUT_WR);
    feed.served[feed.nsockets++] = sv[1];
    s->fd = sv[0];
    return 0;
}

static void check(int ok, const char *what, const hb_bench_result *r)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz_loop: %s: issued %llu complete %llu failed %llu cancelled %llu\n", what,
            (unsigned long long)r->issued, (unsigned long long)r->complete,
            (unsigned long long)r->failed, (unsigned long long)r->cancelled);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static hb_bench_result res;
    static const char get[] = "GET /x HTTP/1.1\r\nHost: fuzz\r\n\r\n";
    static const char head[] = "HEAD /x HTTP/1.1\r\nHost: fuzz\r\n\r\n";
    if (size < 1 || size > 60000)
        return 0;
    uint8_t opt = data[0];
    memset(&feed, 0, sizeof feed);
    size_t at = 1;
    for (int k = 0; k < PIECES && at + 2 <= size; k++) {
        size_t n = (size_t)data[at] << 8 | data[at + 1];
        at += 2;
        if (n > size - at)
            n = size - at;
        feed.piece[k] = data + at;
        feed.len[k] = n;
        at += n;
    }
    fuzz_tp = hb_net_tcp;
    fuzz_tp.connect_start = fuzz_connect;

    hb_bench_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.naddrs = 1;
    cfg.transport = &fuzz_tp;
    int is_head = (opt & 0x80) != 0;
    cfg.request = is_head ? head : get;
    cfg.request_len = is_head ? sizeof head - 1 : sizeof get - 1;
    cfg.head = is_head;
    cfg.threads = 1;
    cfg.concurrency = (opt & 0x10) ? 2 : 1; /* one: the lone connection's blocking waits */
    cfg.keepalive = (opt & 0x08) != 0;
    cfg.requests = 1 + (uint64_t)((opt >> 5) & 3) * 2;
    cfg.timeout = 1.0;
    cfg.protocol = opt & 1 ? HB_PROTO_HTTP2 : HB_PROTO_HTTP1;
    if (cfg.protocol == HB_PROTO_HTTP2)
        cfg.streams = 1 << ((opt >> 1) & 3);
    else
        cfg.pipeline = 1 + ((opt >> 1) & 3);
    cfg.idempotent = 1;
    char err[160];
    if (hb_bench_check(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_loop: %s\n", err);
        abort();
    }
    hb_bench *b = hb_bench_start(&cfg);
    if (b == NULL)
        abort();
    /* Every wait is bounded (a second's timeout, a drain's tick): a run
     * not over in a minute hangs. */
    if (!hb_bench_wait(b, 60000000000LL)) {
        fprintf(stderr, "fuzz_loop: the run hangs\n");
        abort();
    }
    hb_bench_collect(b, &res);
    hb_bench_free(b);
    for (int i = 0; i < feed.nsockets; i++)
        close(feed.served[i]);
    uint64_t classes = res.fail_connect + res.fail_receive + res.fail_length + res.fail_exceptions +
                       res.fail_timeout + res.fail_tls + res.fail_check + res.fail_reset;
    check(res.issued == cfg.requests, "a ticket lost or made", &res);
    check(res.issued == res.complete + res.failed + res.cancelled, "the accounting rule", &res);
    check(res.failed == classes, "failures outside their classes", &res);
    check(res.non_2xx <= res.complete, "more non-2xx than complete", &res);
    hb_bench_result_free(&res);
    return 0;
}
