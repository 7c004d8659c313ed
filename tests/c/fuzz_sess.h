/* fuzz_sess.h: what the session fuzz drivers (fuzz_session.c, fuzz_tls.c)
 * share: one hb_srv_shared with small limits, so the 413 and 503 paths are
 * reached by short inputs, and deadlines far past any input's rounds. */
#ifndef HB_FUZZ_SESS_H
#define HB_FUZZ_SESS_H

#include "../../csrc/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The shared state, made on first use with the transport given (NULL: TCP,
 * as hb_srv_shared's zeros say). */
static hb_srv_shared *fuzz_shared(const hb_transport *tp, void *tp_shared)
{
    static hb_srv_shared sh;
    static char *rnd;
    if (rnd == NULL) {
        rnd = malloc(HB_RND_BLOCK);
        if (rnd == NULL)
            abort();
        hb_srv_fill_random(rnd, HB_RND_BLOCK, 1);
        sh.transport = tp;
        sh.transport_shared = tp_shared;
        sh.st.dir_fd = -1;
        sh.rnd = rnd;
        sh.max_body = 1 << 16;
        sh.max_buffered = 1 << 17; /* two bodies at most: the 503 path is reached too */
        sh.header_timeout = sh.send_timeout = sh.idle_timeout = 1000000000;
        sh.server_field_len =
            (size_t)snprintf(sh.server_field, sizeof sh.server_field, "Server: httpbench/fuzz\r\n");
    }
    return &sh;
}

/* Reads what a session sent to the client's end of its socket pair (fd),
 * so it never waits on a full buffer, adding the count to *got; the first
 * bytes ever read must begin a status line. Returns the last read's
 * result: 0 when the session's side is closed. */
static inline ssize_t fuzz_read_answers(int fd, size_t *got)
{
    static char out[65536];
    ssize_t n;
    while ((n = read(fd, out, sizeof out)) > 0) {
        if (*got == 0 && memcmp(out, "HTTP/1.1 ", (size_t)(n < 9 ? n : 9)) != 0)
            abort();
        *got += (size_t)n;
    }
    return n;
}

#endif
