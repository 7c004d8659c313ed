/* fuzz_session.c: libFuzzer driver for the embedded server's session: any
 * bytes a client may send, fed through a socket pair to one hb_sess, must
 * end in answers and a close, never a crash, a hang or unbounded memory.
 * Every answer must start with a status line.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -o fuzz_session \
 *       tests/c/fuzz_session.c csrc/session.c csrc/relay.c csrc/route.c csrc/parser.c csrc/buf.c csrc/net.c
 *   ./fuzz_session -max_total_time=60 tests/c/corpus_session
 *
 * Built with -DHB_FUZZ_MAIN instead, it replays the files it is given.
 */
#define _GNU_SOURCE
#include "harness.h"

#include "fuzz_sess.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Output read back at most per input: /rnd?c=1073741824 is a valid request. */
#define OUT_MAX (4u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hb_srv_shared *shared(void)
{
    return fuzz_shared(NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (size > 60000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 0;
    /* The whole input fits in the pair's buffer: the client has sent it all
     * and then closed its side, as a client that is done would. */
    if (size > 0 && write(sv[1], data, size) != (ssize_t)size)
        abort();
    shutdown(sv[1], SHUT_WR);

    hb_sess s;
    int64_t now = 1;
    size_t got = 0, first = 0;
    if (hb_sess_init(&s, sv[0], shared(), now, 0) != 0)
        abort();
    for (int round = 0; round < 100000; round++) {
        hb_want w = hb_sess_advance(&s, now);
        if (w == HB_WANT_CLOSE)
            break;
        if (w == HB_WANT_TIMER)
            now = s.wake_at; /* a /delay: let it be over */
        ssize_t n = fuzz_read_answers(sv[1], &got);
        first = got > 0;
        if (got > OUT_MAX)
            break;
        if (w == HB_WANT_READ && s.state == 0 && first && n == 0)
            break;
        now += 1000;
        if (w == HB_WANT_READ && round > 1000)
            break; /* waiting on a client that has said all it will */
    }
    hb_sock_close(&s.sock);
    close(sv[1]);
    hb_sess_free(&s);
    /* Every byte of body budget a session took is given back. */
    if (shared()->buffered != 0)
        abort();
    return 0;
}
