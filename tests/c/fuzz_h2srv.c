/* fuzz_h2srv.c: libFuzzer driver for the embedded server's HTTP/2 session:
 * the preface, then any bytes a client may send, fed through a socket pair
 * to one hb_sess serving HTTP/2, must end in frames and a close, never a
 * crash, a hang or unbounded memory. The server's first frame must be its
 * SETTINGS (RFC 9113 section 3.4).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_h2srv tests/c/fuzz_h2srv.c \
 *       csrc/session.c csrc/h2srv.c csrc/h2mem.c csrc/head.c csrc/relay.c csrc/route.c csrc/parser.c \
 *       csrc/buf.c csrc/net.c -lnghttp2
 *   ./fuzz_h2srv -max_total_time=60 tests/c/corpus_h2srv
 *
 * Built with -DHB_FUZZ_MAIN instead, it replays the files it is given.
 */
#define _GNU_SOURCE
#include "harness.h"

#include "../../csrc/h2.h"
#include "fuzz_sess.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Output read back at most per input: /rnd?c=1073741824 is a valid request. */
#define OUT_MAX (4u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads what the session sent, so it never waits on a full buffer; the
 * first frame must be SETTINGS on stream 0. */
static ssize_t read_frames(int fd, size_t *got)
{
    static char out[65536];
    ssize_t n;
    while ((n = read(fd, out, sizeof out)) > 0) {
        if (*got == 0 && (n < 9 || out[3] != 0x4 || out[5] | out[6] | out[7] | out[8]))
            abort();
        *got += (size_t)n;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (size > 60000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    hb_srv_shared *sh = fuzz_shared(NULL, NULL);
    sh->http2 = 1;
    sh->h2_max_streams = 8;
    if (write(sv[1], HB_H2_PREFACE, HB_H2_PREFACE_LEN) != HB_H2_PREFACE_LEN ||
        (size > 0 && write(sv[1], data, size) != (ssize_t)size))
        abort();
    shutdown(sv[1], SHUT_WR);

    hb_sess s;
    int64_t now = 1;
    size_t got = 0;
    if (hb_sess_init(&s, sv[0], sh, now, 0) != 0)
        abort();
    for (int round = 0; round < 100000; round++) {
        hb_want w = hb_sess_advance(&s, now);
        if (w == HB_WANT_CLOSE)
            break;
        if (w == HB_WANT_READ_TIMER || w == HB_WANT_TIMER)
            now = s.wake_at; /* a /delay: let it be over */
        ssize_t n = read_frames(sv[1], &got);
        if (got > OUT_MAX)
            break;
        now += 1000;
        if (w == HB_WANT_READ && (round > 1000 || (got > 0 && n == 0)))
            break; /* waiting on a client that has said all it will */
    }
    hb_sock_close(&s.sock);
    close(sv[1]);
    hb_sess_free(&s);
    /* Every byte of body budget a stream took is given back. */
    if (sh->buffered != 0)
        abort();
    return 0;
}
