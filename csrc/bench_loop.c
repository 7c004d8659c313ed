/* bench_loop.c: the loops that drive a thread's connections: the epoll
 * loop over many, or a lone connection's own blocking waits; the tick
 * that looks at deadlines and the stop; the starts a rate makes due. It
 * knows each connection's state only through the tables (bench_int.h's
 * hb_bc_state) and its protocol only through its carrier. */
#define _GNU_SOURCE
#include "bench_int.h"

static void on_event(bthread *t, bconn *c, unsigned events, int64_t now)
{
    hb_bc_state_of(c, c->state)->on_event(t, c, events, now);
}

/* The connections marked unread read on (a scan of them all: this is the
 * rare wake-up that filled READS_PER_WAKE with bytes still held). One
 * that closed meanwhile has nothing held; a socket opened since in its
 * place takes the call as a level-triggered epoll's spurious one. */
static void read_unread(bthread *t)
{
    for (int i = 0; i < t->nconns && t->unread > 0; i++) {
        bconn *c = &t->conns[i];
        if (!c->unread)
            continue;
        c->unread = 0;
        t->unread--;
        if (c->sock.fd >= 0 && hb_sock_pending(&c->sock))
            on_event(t, c, EPOLLIN, hb_now_ns()); /* (CLOCK below) */
    }
}

/* The next of the ready stack starts. */
static void start_next(bthread *t, int64_t now)
{
    bconn *c = t->ready[--t->nready];
    c->in_ready = 0;
    c->carrier->start(t, c, now);
}

void hb_bl_sched_times(int64_t *on_cpu, int64_t *waiting)
{
    unsigned long long run = 0, delay = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "re");
    if (f != NULL) {
        int got = fscanf(f, "%llu %llu", &run, &delay);
        fclose(f);
        if (got == 2) {
            *on_cpu = (int64_t)run;
            *waiting = (int64_t)delay;
            return;
        }
    }
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    *on_cpu = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    *waiting = 0;
}

/* The part of the run that carried load (bthread's load_*): from the
 * first tick after a send to the last tick after an answer. A read of
 * schedstat a tick at most, none per request. */
static void note_load(bthread *t, int64_t now)
{
    uint64_t seen = __atomic_load_n(&t->live_complete, __ATOMIC_RELAXED) +
                    __atomic_load_n(&t->live_failed, __ATOMIC_RELAXED);
    int started = t->load_wall0 == 0 && __atomic_load_n(&t->live_issued, __ATOMIC_RELAXED) > 0;
    if (!started && seen == t->load_seen)
        return;
    int64_t on_cpu, waiting;
    hb_bl_sched_times(&on_cpu, &waiting);
    int64_t busy = on_cpu + waiting;
    if (started) {
        t->load_wall0 = now;
        t->load_busy0 = busy;
    } else {
        t->load_wall1 = now;
        t->load_busy1 = busy;
    }
    t->load_seen = seen;
}

/* Deadlines, the end of the grace after a stop or a duration, and the
 * part of the run that carried load. */
static void tick(bthread *t, int64_t now)
{
    hb_bench *b = t->b;
    if (!b->warming)
        note_load(t, now);
    int abandon = past_grace(b, now);
    for (int i = 0; i < t->nconns; i++)
        hb_bs_tick(t, &t->conns[i], now, abandon);
}

/* Wakes the connections whose wake-up has come (their turn under a rate
 * or a shape, a retry's connect; at the run's end every pacing wait at
 * once), and returns the earliest wake-up still to come, INT64_MAX if
 * none. The loop waits until then: waiting for the next tick instead would
 * start requests up to a tick late, and that lateness would count in the
 * corrected latency. */
static int64_t wake_due(bthread *t, int64_t now)
{
    hb_bench *b = t->b;
    if (t->paced_wakes > 0 && (stopped(b) || (b->end && now >= b->end)))
        hb_bp_wake_paced_now(t, now);
    bconn *c;
    while ((c = hb_bp_wake_due(t, now)) != NULL)
        hb_bs_wake(t, c, now);
    return hb_bp_wake_next(t);
}

/* epoll_wait for at most `ns` nanoseconds (none if negative): epoll_pwait2
 * keeps the nanoseconds (Linux 5.11), else whole milliseconds, rounded up. */
static int wait_ns(int ep, struct epoll_event *events, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    int n = epoll_pwait2(ep, events, BENCH_EVENTS, &ts, NULL);
    if (n < 0 && errno == ENOSYS)
        n = epoll_wait(ep, events, BENCH_EVENTS, (int)((ns + 999999) / 1000000));
    return n;
}

/* A thread with one connection in closed loop: it waits where its state's
 * table says (in the blocking recv itself: no epoll_wait per request), the
 * socket's timeouts bringing it back every tick for deadlines and the stop
 * flag. */
static void lone_loop(bthread *t)
{
    int64_t now = hb_now_ns(), next_tick = now + t->b->tick_ns;
    for (;;) {
        for (int budget = 16; t->nready > 0 && budget > 0; budget--)
            start_next(t, now);
        if (t->inflight == 0 && t->nready == 0 && t->draining == 0 && !t->b->carrier->working(t))
            return;
        bconn *c = &t->conns[0];
        int lone = hb_bc_state_of(c, c->state)->lone;
        if (lone == LONE_RECV) {
            on_event(t, c, 0, now); /* blocks up to a tick in recv */
        } else if (lone == LONE_SLEEP) {
            int64_t wait = c->next_try - now; /* (its wake-up) */
            if (wait > 0) {
                struct timespec ts = {wait / 1000000000, wait % 1000000000};
                nanosleep(&ts, NULL);
            }
            wake_due(t, hb_now_ns());
        } else if (lone == LONE_WATCHED) {
            if (!(c->events & EPOLLOUT) || hb_sock_pending(&c->sock)) {
                on_event(t, c, EPOLLIN, now); /* blocks up to a tick in its read */
            } else {
                struct pollfd p = {.fd = c->sock.fd, .events = POLLIN | POLLOUT};
                /* (poll's and epoll's bits are the same on Linux) */
                if (poll(&p, 1, (int)(t->b->tick_ns / 1000000)) > 0)
                    on_event(t, c, (unsigned)p.revents, hb_now_ns());
            }
        } else if (lone == LONE_POLL) {
            struct pollfd p = {.fd = c->sock.fd,
                               .events = c->sock.wants == HB_SOCK_WANT_READ ? POLLIN : POLLOUT};
            if (poll(&p, 1, (int)(t->b->tick_ns / 1000000)) > 0)
                on_event(t, c, 0, hb_now_ns());
        }
        now = hb_now_ns();
        if (now >= next_tick) {
            tick(t, now);
            next_tick = now + t->b->tick_ns;
        }
    }
}

/* NAP: a closed loop over HTTP/2 with streams in flight and nothing to
 * read naps briefly before it waits in epoll, so that it wakes to a batch
 * of answers, not to each write the server makes. On a virtual machine a
 * wake-up is dear for both sides: the server's write that wakes a sleeping
 * client pays an inter-processor interrupt (nginx h2c at (50, 100): 22% of
 * nginx's CPU under sock_def_readable's unlock while it served httpbench,
 * 12% while it served h2load, whose busier loop slept 0.07 times a request
 * to httpbench's 0.12-0.17), and the client pays a switch for every answer
 * or two. How long (hb_bp_nap_ns): a share of the answers' own time, so an
 * answer that comes meanwhile is read, and its stream freed, at most 1% of
 * an answer's time later than it would have been; where even a short nap
 * would overrun that (one connection, one stream: answers in tens of
 * microseconds) the loop does not nap. And only where its waits in epoll
 * have lasted less than half a nap, so that a nap takes the place of two
 * wake-ups or more: a loop that already wakes to big batches (the embedded
 * server at (50, 100): a hundred answers a wake-up) would only sleep
 * longer, which cost it 0.92 -> 1.07 us a request (colder caches after).
 * And never while a request body is going out (t->sending): what the loop
 * waits for then is room to write (the socket's, or the server's window),
 * which comes again and again within one answer's time, and each nap left
 * the socket idle (1 MiB bodies echoed by the embedded server at (2, 10):
 * 0.6x h2load's req/s with naps, about its own without).
 * A nap that brings nothing is followed by the wait in epoll, as before. */
static int nap(bthread *t, struct epoll_event *events)
{
    int64_t ask = hb_bp_nap_ns(t->answer_ns, t->nap_late);
    if (ask == 0 || 2 * t->wait_ns > ask)
        return 0;
    int64_t from = hb_now_ns();
    struct timespec ts = {0, (long)ask};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    int64_t late = hb_now_ns() - from - ask;
    late = late < 0 ? 0 : late > NAP_MAX_NS ? NAP_MAX_NS : late;
    t->nap_late += (late - t->nap_late) / 8;
    return epoll_wait(t->ep, events, BENCH_EVENTS, 0);
}

/* Nothing due (a closed loop): a nap first where one is worth it, then
 * the wait in epoll, whose length the next nap goes by. */
static int wait_closed(bthread *t, struct epoll_event *events)
{
    if (!t->naps)
        return epoll_wait(t->ep, events, BENCH_EVENTS, -1);
    int n = t->inflight > 0 && t->sending == 0 ? nap(t, events) : 0;
    if (n > 0)
        return n;
    int64_t from = hb_now_ns();
    n = epoll_wait(t->ep, events, BENCH_EVENTS, -1);
    t->wait_ns += (hb_now_ns() - from - t->wait_ns) / 8;
    return n;
}

/* The event loop over a thread's connections; the tick arrives as an
 * event (data.ptr NULL) of its own, so closed loop waits with no timeout.
 *
 * CLOCK: the clock is read for each connection's event and each start,
 * not once per wake-up: one read shared by every event of a wake-up gave
 * 97% of a log's records at 50 connections the start and the end of
 * another connection's (the exchanges of one event, a pipeline's or a
 * session's streams, still share its read). Measured (docs/benchmarks.md):
 * 3,526 instructions per request in the loop thread against 3,493 with
 * one read per wake-up (callgrind, +0.9%), client CPU per request 1.01x
 * in 9 interleaved rounds (within their spread). */
static void epoll_loop(bthread *t)
{
    struct epoll_event events[BENCH_EVENTS];
    int64_t now = hb_now_ns();
    /* Under a rate the loop wakes for each intended start, and a nap is a
     * few microseconds: with the kernel's default slack (50 us) a timer may
     * fire that much late. */
    if (t->b->paced || t->naps)
        prctl(PR_SET_TIMERSLACK, 1UL);
    for (;;) {
        /* Start the next requests; a bounded number, so a run of instant
         * failures (a server that is down) still lets events through. */
        for (int budget = 4 * t->nconns + 16; t->nready > 0 && budget > 0; budget--)
            start_next(t, hb_now_ns()); /* (CLOCK below) */
        int64_t due = t->nwakes > 0 ? wake_due(t, now) : INT64_MAX;
        if (t->inflight == 0 && t->nready == 0 && t->nwakes == 0 && t->draining == 0 &&
            !t->b->carrier->working(t))
            return;
        int n;
        int64_t slept = now; /* (the last the loop knew: a stall may come before the wait) */
        int timed = 0;
        if (t->nready > 0 || t->unread > 0)
            n = epoll_wait(t->ep, events, BENCH_EVENTS, 0);
        else if (due == INT64_MAX)
            n = wait_closed(t, events);
        else {
            n = wait_ns(t->ep, events, due - hb_now_ns());
            timed = 1;
        }
        now = hb_now_ns();
        if (timed && now - due >= STALL_NS) {
            /* Woken a stall late: what it reads now may have come in the
             * stall, which is taken to have begun as long before the
             * missed wake-up as it ran past it, and after the loop last
             * knew the time. */
            int64_t from = due - (now - due);
            hb_bp_late(t, from > slept ? from : slept, now);
        }
        int ticked = 0;
        for (int i = 0; i < n; i++) {
            if (events[i].data.ptr == NULL)
                ticked = 1;
            else
                on_event(t, events[i].data.ptr, events[i].events, now = hb_now_ns());
        }
        if (ticked) {
            /* Read, so the timerfd is quiet until the next; only EAGAIN
             * (read already) can fail it. */
            uint64_t expirations;
            ssize_t got = read(t->tick_fd, &expirations, sizeof expirations);
            (void)got;
            tick(t, now);
        }
        if (t->unread > 0)
            read_unread(t);
    }
}

void hb_bl_run(bthread *t)
{
    hb_bp_schedule(t);
    if (t->blocking)
        lone_loop(t);
    else
        epoll_loop(t);
}
