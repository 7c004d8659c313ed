/* bench.c: the timing loop's run: its setup, threads, start gate, stop,
 * and the figures collected (bench_int.h says which file holds what). */
#define _GNU_SOURCE
#include "bench_int.h"

#include <float.h>

static double cpu_seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* A prepared start: t has warmed up; it waits for hb_bench_go (or a
 * stop), then until the start instant. Returns 0 to run on, 1 when the
 * run was stopped first. */
static int wait_for_go(bthread *t)
{
    hb_bench *b = t->b;
    pthread_mutex_lock(&b->mu);
    b->nprepared++;
    pthread_cond_broadcast(&b->done_cv);
    while (!b->go && !stopped(b))
        pthread_cond_wait(&b->gate_cv, &b->mu);
    int go = b->go;
    pthread_mutex_unlock(&b->mu);
    hb_br_forget(t);
    if (!go)
        return 1;
    /* To the instant, a tick at a time so a stop is heard meanwhile. */
    for (int64_t now = hb_now_ns(); now < b->start && !stopped(b); now = hb_now_ns()) {
        int64_t until = b->start - now > TICK_NS ? now + TICK_NS : b->start;
        struct timespec at = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
    }
    return 0;
}

static void *thread_main(void *arg)
{
    bthread *t = arg;
    hb_bench *b = t->b;

    pthread_mutex_lock(&b->mu);
    while (!b->gate_open)
        pthread_cond_wait(&b->gate_cv, &b->mu);
    int warming = b->warming;
    pthread_mutex_unlock(&b->mu);

    struct rusage ru0, ru;
    memset(&ru0, 0, sizeof ru0);
    int run = 1;
    if (warming) {
        hb_bl_run(t);
        run = wait_for_go(t) == 0;
        getrusage(RUSAGE_THREAD, &ru0);
    }
    /* The measured part alone is logged: a warmup's requests are not. */
    if (b->log != NULL)
        t->log = hb_rlog_ring_at(b->log, t->index);
    int64_t cpu0, wait0, wall0 = hb_now_ns();
    hb_bl_sched_times(&cpu0, &wait0);
    t->load_wall0 = t->load_wall1 = 0;
    t->load_seen = 0;
    if (run)
        hb_bl_run(t);
    int64_t cpu1, wait1, wall1 = hb_now_ns();
    hb_bl_sched_times(&cpu1, &wait1);
    /* Over the part that carried load where the ticks marked one of two
     * ticks or more; else over the whole measured part. */
    if (t->load_wall0 != 0 && t->load_wall1 - t->load_wall0 >= 2 * b->tick_ns)
        t->busy = (double)(t->load_busy1 - t->load_busy0) / (double)(t->load_wall1 - t->load_wall0);
    else
        t->busy =
            wall1 > wall0 ? (double)(cpu1 - cpu0 + wait1 - wait0) / (double)(wall1 - wall0) : 0;
    if (t->busy > 1)
        t->busy = 1; /* (the counters' granularity) */
    int64_t end = schedule_end(b);
    if (run && end != 0) {
        t->due = hb_bp_due_before(t, end);
        t->due_known = 1;
    }
    for (int i = 0; i < t->nconns; i++)
        hb_bs_close(&t->conns[i]);
    if (t->pub != NULL)
        hb_br_publish(t); /* the end: the snapshot is then exact */
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        t->cpu_user = cpu_seconds(&ru.ru_utime) - cpu_seconds(&ru0.ru_utime);
        t->cpu_sys = cpu_seconds(&ru.ru_stime) - cpu_seconds(&ru0.ru_stime);
    }
    pthread_mutex_lock(&b->mu);
    if (b->running == 1 && b->log != NULL) {
        /* The last one out: every record is in a ring, so the log is
         * drained and closed before the run counts as ended (its file is
         * whole when run() returns). Nothing else runs to race with. */
        pthread_mutex_unlock(&b->mu);
        b->log_error = hb_rlog_close(b->log, &b->log_written, &b->log_dropped);
        pthread_mutex_lock(&b->mu);
    }
    if (--b->running == 0)
        pthread_cond_broadcast(&b->done_cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int hb_bench_log_status(hb_bench *b, uint64_t *written, uint64_t *dropped)
{
    *written = b->log_written;
    *dropped = b->log_dropped;
    return b->log_error;
}

/* The per-request log of lc, a ring per thread, its outcomes named here.
 * Returns 0, or -1 with errno (the fd is then the caller's still). */
static int open_log(hb_bench *b, const hb_rlog_config *lc, int nt)
{
    hb_rlog_config c = *lc;
    const char *outcomes[HB_BR_MAX_OUTCOMES];
    c.nrings = nt;
    c.outcomes = outcomes;
    c.noutcomes = hb_br_outcome_names(outcomes);
    b->log = hb_rlog_open(&c);
    return b->log != NULL ? 0 : -1;
}

/* b->reqs from the scenario, or from the run's one request, with every
 * pointer array copied into allocations of b's own. Returns 0, or -1 with
 * errno (ENOMEM; EINVAL for a scenario out of its limits). */
static int setup_requests(hb_bench *b, const hb_bench_config *cfg)
{
    const hb_bench_req one = {.variants = &cfg->request,
                              .lens = &cfg->request_len,
                              .nvariants = 1,
                              .head = cfg->head,
                              .weight = 1,
                              .expect_length = -1};
    const hb_bench_req *src = cfg->nscenario > 0 ? cfg->scenario : &one;
    int n = cfg->nscenario > 0 ? cfg->nscenario : 1;
    size_t nptr = 0, nfail = 0;
    if (n > HB_BENCH_MAX_SCENARIO || (cfg->nscenario > 0 && cfg->pipeline > 1)) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (src[i].nvariants < 1 || !(src[i].weight > 0)) {
            errno = EINVAL;
            return -1;
        }
        nptr += src[i].nvariants;
        nfail += src[i].expect_body_len;
    }
    b->reqs = calloc((size_t)n, sizeof *b->reqs);
    b->cumulative = malloc((size_t)n * sizeof *b->cumulative);
    b->ptrs = malloc(nptr * sizeof *b->ptrs);
    b->lens = malloc(nptr * sizeof *b->lens);
    b->fails = malloc((nfail > 0 ? nfail : 1) * sizeof *b->fails);
    if (b->reqs == NULL || b->cumulative == NULL || b->ptrs == NULL || b->lens == NULL ||
        b->fails == NULL)
        return -1;
    double sum = 0;
    for (int i = 0, at = 0, fat = 0; i < n; i++) {
        breq *q = &b->reqs[i];
        q->r = src[i];
        q->doc_len = -1;
        memcpy(b->ptrs + at, src[i].variants, src[i].nvariants * sizeof *b->ptrs);
        memcpy(b->lens + at, src[i].lens, src[i].nvariants * sizeof *b->lens);
        q->r.variants = b->ptrs + at;
        q->r.lens = b->lens + at;
        at += (int)src[i].nvariants;
        if (q->r.expect_body_len > 0) {
            hb_scen_needle_init(&q->body, q->r.expect_body, q->r.expect_body_len, b->fails + fat);
            fat += (int)q->r.expect_body_len;
        }
        sum += src[i].weight;
        b->cumulative[i] = sum;
    }
    b->nreqs = n;
    b->scen = cfg->nscenario > 0;
    b->cfg.scenario = NULL; /* the copies serve */
    return 0;
}

/* The run's own copies of cfg's shapes. Returns 0, or -1 with errno. */
static int copy_shapes(hb_bench *b, const hb_bench_config *cfg)
{
    if (cfg->shape != NULL) {
        b->shape = malloc(sizeof *b->shape);
        if (b->shape == NULL)
            return -1;
        *b->shape = *cfg->shape;
        b->cfg.shape = b->shape;
    }
    if (cfg->vus != NULL) {
        b->vus = malloc(sizeof *b->vus);
        if (b->vus == NULL)
            return -1;
        *b->vus = *cfg->vus;
        b->cfg.vus = b->vus;
    }
    return 0;
}

/* What each protocol's connections are: the one place that names a
 * carrier (the rest of the loop reaches it through this table). */
static const hb_carrier *const CARRIERS[HB_PROTO_COUNT] = {
    [HB_PROTO_HTTP1] = &hb_carrier_h1, [HB_PROTO_HTTP2] = &hb_carrier_h2};

/* Thread i's share of the connections (from the first-th over all
 * threads), its figures, its epoll set and, for the event loop, its tick.
 * Returns 0, or -1 with errno (hb_bench_free undoes what was done). */
static int setup_thread(hb_bench *b, bthread *t, int i, int first, int conc, int nt)
{
    const hb_bench_config *cfg = &b->cfg;
    t->index = i;
    t->first_conn = first;
    t->nconns = conc / nt + (i < conc % nt);
    t->conns = calloc((size_t)t->nconns, sizeof *t->conns);
    if (t->conns == NULL)
        return -1;
    t->res = calloc((size_t)b->nreqs, sizeof *t->res);
    if (t->res == NULL)
        return -1;
    for (int k = 0; k < b->nreqs; k++)
        hb_br_init(&t->res[k]);
    if (cfg->publish) {
        t->pub = calloc((size_t)b->nreqs, sizeof *t->pub);
        if (t->pub == NULL)
            return -1;
        int rc = pthread_mutex_init(&t->pub_mu, NULL);
        if (rc != 0) {
            errno = rc;
            return -1;
        }
        t->pub_mu_ok = 1;
        for (int k = 0; k < b->nreqs; k++)
            hb_br_init(&t->pub[k]);
    }
    hb_scen_rng_seed(&t->rng, cfg->seed, (uint64_t)i);
    if (b->carrier->thread_setup(t) != 0)
        return -1;
    /* Each connection's exchanges: as many as it may have in flight. */
    int depth = b->carrier->depth(cfg);
    t->exchanges = calloc((size_t)t->nconns * (size_t)depth, sizeof *t->exchanges);
    if (t->exchanges == NULL && t->nconns > 0)
        return -1;
    for (int j = 0; j < t->nconns; j++) {
        bconn *c = &t->conns[j];
        hb_sock_init(&c->sock, cfg->transport ? cfg->transport : &hb_net_tcp, 0);
        c->sock.shared = cfg->transport_shared;
        c->sock.buffer = cfg->socket_buffer;
        c->xs = &t->exchanges[(size_t)j * (size_t)depth];
        for (int k = 0; k < depth; k++) {
            c->xs[k].rq = &b->reqs[0];
            c->xs[k].res = &t->res[0];
            c->xs[k].conn = (uint32_t)(first + j);
        }
        c->thr = t;
        c->wake_slot = -1;
    }
    /* Each connection's protocol, chosen once: what its socket carries
     * (after every socket is set up: a failure here leaves them closable). */
    for (int j = 0; j < t->nconns; j++) {
        t->conns[j].carrier = b->carrier;
        if (t->conns[j].carrier->setup(&t->conns[j], depth) != 0)
            return -1;
    }
    t->ready = calloc((size_t)t->nconns, sizeof *t->ready);
    t->wakes = calloc((size_t)t->nconns, sizeof *t->wakes);
    t->scratch = malloc(SCRATCH);
    if (t->ready == NULL || t->wakes == NULL || t->scratch == NULL)
        return -1;
    t->ep = epoll_create1(EPOLL_CLOEXEC);
    if (t->ep < 0)
        return -1;
    int closed = !(cfg->rate > 0 || cfg->shape != NULL) && cfg->vus == NULL;
    t->blocking = closed && t->nconns == 1 && b->carrier->lone(cfg);
    t->naps = b->carrier->naps && closed;
    if (!t->blocking) {
        struct itimerspec every = {.it_interval = {0, b->tick_ns}, .it_value = {0, b->tick_ns}};
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        t->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (t->tick_fd < 0 || timerfd_settime(t->tick_fd, 0, &every, NULL) != 0 ||
            epoll_ctl(t->ep, EPOLL_CTL_ADD, t->tick_fd, &ev) != 0)
            return -1;
    }
    return 0;
}

/* Starts the threads with every signal blocked (the caller's thread
 * takes them), then opens the start gate: the run's clock starts now, for
 * every thread at once. A thread that cannot be made stops the run. */
static void launch(hb_bench *b, int nt)
{
    const hb_bench_config *cfg = &b->cfg;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    b->running = nt;
    for (int i = 0; i < nt; i++) {
        if (pthread_create(&b->threads[i].thread, NULL, thread_main, &b->threads[i]) != 0) {
            pthread_mutex_lock(&b->mu);
            b->running -= nt - i;
            pthread_mutex_unlock(&b->mu);
            hb_bench_stop(b);
            break;
        }
        b->threads[i].started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* The run starts now, for every thread at once; they read the clock's
     * marks after the gate, under the mutex that set them. */
    pthread_mutex_lock(&b->mu);
    b->start = b->last_outcome = hb_now_ns();
    if (b->end)
        b->end = b->start + secs_ns(cfg->duration);
    if (b->warming) {
        b->end = 0; /* set by hb_bench_go */
        b->warm_end = b->start + secs_ns(cfg->warmup_seconds);
    }
    b->gate_open = 1;
    pthread_cond_broadcast(&b->gate_cv);
    pthread_mutex_unlock(&b->mu);
}

/* The first number of cfg out of its range, said in err; 0 when none. */
static int out_of_range(const hb_bench_config *cfg, char *err, size_t errlen)
{
    const struct {
        const char *name;
        double v, lo, hi;
    } r[] = {
        {"requests", (double)cfg->requests, 0, (double)HB_BENCH_MAX_REQUESTS},
        {"duration", cfg->duration, 0, HB_BENCH_MAX_SECONDS},
        {"concurrency", cfg->concurrency, 1, HB_BENCH_MAX_CONCURRENCY},
        {"threads", cfg->threads, 1, HB_BENCH_MAX_THREADS},
        {"rate", cfg->rate, 0, HB_BENCH_MAX_RATE},
        {"timeout", cfg->timeout, DBL_MIN, HB_BENCH_MAX_SECONDS},
        {"grace", cfg->grace, 0, HB_BENCH_MAX_SECONDS},
        {"pipeline", cfg->pipeline, 0, HB_BENCH_MAX_PIPELINE},
        {"streams", cfg->streams, 0, HB_BENCH_MAX_STREAMS},
        {"window", (double)cfg->window, 0, HB_BENCH_MAX_WINDOW},
        {"warmup_requests", (double)cfg->warmup_requests, 0, (double)HB_BENCH_MAX_REQUESTS},
        {"warmup_seconds", cfg->warmup_seconds, 0, HB_BENCH_MAX_SECONDS},
        {"socket_buffer", cfg->socket_buffer, 0, HB_BENCH_MAX_SOCKET_BUFFER},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (!(r[i].v >= r[i].lo && r[i].v <= r[i].hi)) { /* (NaN fails both) */
            if (r[i].lo == DBL_MIN)
                snprintf(err, errlen, "%s must be above 0 and at most %.17g, not %.17g", r[i].name,
                         r[i].hi, r[i].v);
            else
                snprintf(err, errlen, "%s must be from %.17g to %.17g, not %.17g", r[i].name,
                         r[i].lo, r[i].hi, r[i].v);
            return -1;
        }
    return 0;
}

int hb_bench_check(const hb_bench_config *cfg, char *err, size_t errlen)
{
    if (out_of_range(cfg, err, errlen) != 0)
        return -1;
    const char *broken = NULL;
    if (cfg->protocol < 0 || cfg->protocol >= HB_PROTO_COUNT)
        broken = "no such protocol";
    else if (cfg->rate > 0 && cfg->pipeline > 1)
        broken = "pipeline with rate is not supported";
    else if (cfg->shape != NULL && (cfg->rate > 0 || cfg->pipeline > 1))
        broken = "stages set the rate: no rate or pipeline beside";
    else if (cfg->vus != NULL && (cfg->rate > 0 || cfg->shape != NULL))
        broken = "concurrency_stages run closed loop: no rate";
    else if (cfg->scenario != NULL && cfg->pipeline > 1)
        broken = "pipeline with a scenario is not supported";
    else if (cfg->protocol == HB_PROTO_HTTP2 && cfg->pipeline > 1)
        broken = "pipeline with http2 is not supported: HTTP/2 has streams";
    else if (cfg->protocol != HB_PROTO_HTTP2 && cfg->streams > 1)
        broken = "streams are HTTP/2's: pass http2";
    /* Under a rate a connection starts every concurrency/rate seconds. */
    else if (cfg->rate > 0 && (double)cfg->concurrency / cfg->rate > HB_BENCH_MAX_SECONDS)
        broken = "the rate is too low for the connections";
    if (broken == NULL)
        return 0;
    snprintf(err, errlen, "%s", broken);
    return -1;
}

hb_bench *hb_bench_start(const hb_bench_config *cfg)
{
    hb_bench *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->cfg = *cfg;
    b->doc_len = -1;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->done_cv, NULL);
    pthread_cond_init(&b->gate_cv, NULL);
    if (b->cfg.pipeline < 1)
        b->cfg.pipeline = 1;
    if (copy_shapes(b, cfg) != 0)
        goto error;
    b->paced = cfg->rate > 0 || cfg->shape != NULL;
    if (cfg->prepared) {
        /* The warmup is closed loop on every connection; the measured
         * part's pacing and shape come back with hb_bench_go. */
        b->warming = 1;
        b->paced_measured = b->paced;
        b->vus_measured = b->vus;
        b->paced = 0;
        b->vus = NULL;
    }
    if (setup_requests(b, cfg) != 0)
        goto error;
    char why[160];
    if (cfg->protocol < 0 || cfg->protocol >= HB_PROTO_COUNT) {
        errno = EINVAL;
        goto error;
    }
    b->carrier = CARRIERS[cfg->protocol];
    if (b->carrier->prepare(b, why, sizeof why) != 0)
        goto error;
    int conc = cfg->concurrency > 0 ? cfg->concurrency : 1;
    int nt = cfg->threads > 0 ? cfg->threads : 1;
    if (nt > conc)
        nt = conc;
    b->threads = calloc((size_t)nt, sizeof *b->threads);
    if (b->threads == NULL)
        goto error;
    b->nthreads = nt;
    /* Every descriptor is -1 before anything can fail, so the one cleanup
     * path (hb_bench_free) closes only what was opened: calloc's zeros
     * would close the process's standard input. */
    for (int i = 0; i < nt; i++) {
        b->threads[i].b = b;
        b->threads[i].ep = b->threads[i].tick_fd = -1;
    }
    b->start = hb_now_ns();
    b->last_outcome = b->start;
    b->timeout_ns = secs_ns(cfg->timeout);
    b->grace_ns = secs_ns(cfg->grace);
    b->tick_ns = b->timeout_ns / 4 < TICK_NS ? b->timeout_ns / 4 : TICK_NS;
    if (b->tick_ns < 1000000)
        b->tick_ns = 1000000;
    b->end = cfg->duration > 0 ? b->start + secs_ns(cfg->duration) : 0;
    for (int i = 0, first = 0; i < nt; first += b->threads[i].nconns, i++)
        if (setup_thread(b, &b->threads[i], i, first, conc, nt) != 0)
            goto error;
    if (cfg->log != NULL && open_log(b, cfg->log, nt) != 0)
        goto error;
    b->cfg.log = NULL; /* the caller's: not kept */
    launch(b, nt);
    return b;
error:
    /* Every way here set errno: ENOMEM from an allocation, EMFILE or the
     * like from epoll or timerfd. Freeing must not lose it. */
    {
        int err = errno;
        hb_bench_free(b);
        errno = err;
    }
    return NULL;
}

void hb_bench_progress(hb_bench *b, uint64_t *issued, uint64_t *complete, uint64_t *failed)
{
    uint64_t n = 0, c = 0, f = 0;
    for (int i = 0; i < b->nthreads; i++) {
        n += __atomic_load_n(&b->threads[i].live_issued, __ATOMIC_RELAXED);
        c += __atomic_load_n(&b->threads[i].live_complete, __ATOMIC_RELAXED);
        f += __atomic_load_n(&b->threads[i].live_failed, __ATOMIC_RELAXED);
    }
    *issued = n;
    *complete = c;
    *failed = f;
}

int hb_bench_opened(hb_bench *b, hb_sock_info *tls)
{
    if (!__atomic_load_n(&b->opened, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&b->mu);
    if (b->tls_set)
        *tls = b->tls;
    else
        memset(tls, 0, sizeof *tls);
    pthread_mutex_unlock(&b->mu);
    return 1;
}

int hb_bench_prepared(hb_bench *b)
{
    pthread_mutex_lock(&b->mu);
    int ready = !b->cfg.prepared || b->go || b->nprepared >= b->running;
    pthread_mutex_unlock(&b->mu);
    return ready;
}

void hb_bench_go(hb_bench *b, int64_t start_realtime_ns)
{
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    int64_t now = hb_now_ns();
    int64_t ahead = start_realtime_ns - ((int64_t)real.tv_sec * 1000000000 + real.tv_nsec);
    if (ahead < 0)
        ahead = 0;
    if (ahead > (int64_t)(HB_BENCH_MAX_SECONDS * 1e9))
        ahead = (int64_t)(HB_BENCH_MAX_SECONDS * 1e9);
    pthread_mutex_lock(&b->mu);
    /* Until every thread waits (a thread ends only after it has): what
     * they read is then set here, under the mutex they wait on. */
    while (b->warming && b->nprepared < b->running && !stopped(b))
        pthread_cond_wait(&b->done_cv, &b->mu);
    if (b->warming && !b->go && !stopped(b)) {
        b->warming = 0;
        b->paced = b->paced_measured;
        b->vus = b->vus_measured;
        b->start = b->last_outcome = now + ahead;
        b->end = b->cfg.duration > 0 ? b->start + secs_ns(b->cfg.duration) : 0;
        b->tickets = 0;
        b->doc_len = -1;
        for (int i = 0; i < b->nreqs; i++)
            b->reqs[i].doc_len = -1;
        b->go = 1;
        pthread_cond_broadcast(&b->gate_cv);
    }
    pthread_mutex_unlock(&b->mu);
}

void hb_bench_stop(hb_bench *b)
{
    if (!stopped(b)) {
        b->stop_at = hb_now_ns() + b->grace_ns;
        __atomic_store_n(&b->stopping, 1, __ATOMIC_RELEASE);
    }
    /* Threads waiting for a prepared start's go, and a caller of
     * hb_bench_go waiting for them, hear it. */
    pthread_mutex_lock(&b->mu);
    pthread_cond_broadcast(&b->gate_cv);
    pthread_cond_broadcast(&b->done_cv);
    pthread_mutex_unlock(&b->mu);
}

int hb_bench_wait(hb_bench *b, int64_t timeout_ns)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + timeout_ns;
    until.tv_sec += ns / 1000000000;
    until.tv_nsec = ns % 1000000000;
    pthread_mutex_lock(&b->mu);
    while (b->running > 0) {
        if (pthread_cond_timedwait(&b->done_cv, &b->mu, &until) == ETIMEDOUT)
            break;
    }
    int done = b->running == 0;
    pthread_mutex_unlock(&b->mu);
    return done;
}

void hb_bench_free(hb_bench *b)
{
    hb_bench_stop(b);
    for (int i = 0; i < b->nthreads; i++) {
        bthread *t = &b->threads[i];
        if (t->started)
            pthread_join(t->thread, NULL);
        if (t->conns != NULL) {
            for (int j = 0; j < t->nconns; j++) {
                hb_bs_close(&t->conns[j]);
                hb_sock_release(&t->conns[j].sock);
                if (t->conns[j].carrier != NULL)
                    t->conns[j].carrier->release(&t->conns[j]);
            }
        }
        if (t->ep >= 0)
            close(t->ep);
        if (t->tick_fd >= 0)
            close(t->tick_fd);
        for (int k = 0; t->conns != NULL && k < t->nconns; k++)
            if (t->conns[k].tn != NULL) {
                hb_tunnel_free(t->conns[k].tn);
                free(t->conns[k].tn);
            }
        free(t->conns);
        free(t->exchanges);
        free(t->ready);
        free(t->wakes);
        free(t->scratch);
        free(t->timeline);
        free(t->res);
        free(t->pub);
        if (b->carrier != NULL)
            b->carrier->thread_release(t);
        if (t->pub_mu_ok)
            pthread_mutex_destroy(&t->pub_mu);
    }
    free(b->threads);
    hb_rlog_free(b->log);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->done_cv);
    pthread_cond_destroy(&b->gate_cv);
    free(b->shape);
    free(b->vus);
    free(b->reqs);
    free(b->cumulative);
    free(b->ptrs);
    free(b->lens);
    free(b->fails);
    if (b->carrier != NULL)
        b->carrier->unprepare(b);
    free(b);
}
