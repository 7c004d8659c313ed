/* server.c: the embedded target server's lifecycle and its two drivers. */
#define _GNU_SOURCE
#include "server.h"

#include "net.h"
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SRV_EVENTS 256
#define ACCEPT_BATCH 64
/* How often an event loop looks for connections past their deadlines. */
#define SWEEP_NS 100000000LL
/* How long the acceptor waits when out of descriptors before trying again. */
#define ACCEPT_PAUSE_NS 100000000LL
#define THREAD_STACK (256 * 1024)

typedef struct hb_loop hb_loop;

struct hb_loop {
    hb_srv *srv;
    pthread_t thread;
    int started;
    int ep;            /* epoll */
    int timer_fd;      /* armed for the earliest /delay */
    int64_t timer_at;  /* what it is armed for; 0: disarmed */
    hb_sess *sessions; /* every open session, for the deadline sweep */
    hb_sess **heap;    /* sessions waiting out a delay, by wake_at */
    int nheap, heap_cap;
    int accept_paused; /* out of descriptors: accepting again at the next sweep */
    /* The batch of events being handled: a session closed part way through
     * has its later events in it struck out (a relay has two sockets). */
    struct epoll_event *batch;
    int batch_n, batch_i;
};

struct hb_srv {
    hb_srv_config cfg;
    char *host, *static_dir, *unix_path;
    hb_relay_allow *allow;
    hb_relay_config relay; /* the proxy mode's, when on */
    int listen_fd, stop_fd, port;
    dev_t unix_dev; /* the socket file made, removed at stop if still ours */
    ino_t unix_ino;
    hb_srv_shared sh;
    char *rnd;
    int nloops;
    hb_loop *loops;
    /* HB_SRV_THREADS */
    pthread_t acceptor;
    int acceptor_started;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    hb_sess *live; /* sessions with a thread */
    int nlive;
    int stopping; /* atomic: set once by hb_srv_stop */
    uint64_t connections;
};

/* Whether hb_srv_stop has begun. */
static int srv_stopping(hb_srv *srv)
{
    return __atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE);
}

/* Distinct addresses tag the listening socket and the stop and timer fds
 * among the sessions in epoll's data. */
static char TAG_LISTEN, TAG_STOP, TAG_TIMER;

static void list_add(hb_sess **head, hb_sess *s)
{
    s->prev = NULL;
    s->next = *head;
    if (*head)
        (*head)->prev = s;
    *head = s;
}

static void list_remove(hb_sess **head, hb_sess *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        *head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* ------------------------------------------------------ the delay heap */

static void heap_swap(hb_loop *l, int i, int j)
{
    hb_sess *t = l->heap[i];
    l->heap[i] = l->heap[j];
    l->heap[j] = t;
    l->heap[i]->heap_index = i;
    l->heap[j]->heap_index = j;
}

static void heap_sift(hb_loop *l, int i)
{
    while (i > 0 && l->heap[(i - 1) / 2]->wake_at > l->heap[i]->wake_at) {
        heap_swap(l, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        int c = 2 * i + 1, m = i;
        if (c < l->nheap && l->heap[c]->wake_at < l->heap[m]->wake_at)
            m = c;
        if (c + 1 < l->nheap && l->heap[c + 1]->wake_at < l->heap[m]->wake_at)
            m = c + 1;
        if (m == i)
            return;
        heap_swap(l, i, m);
        i = m;
    }
}

static int heap_push(hb_loop *l, hb_sess *s)
{
    if (l->nheap == l->heap_cap) {
        int cap = l->heap_cap ? l->heap_cap * 2 : 64;
        hb_sess **h = realloc(l->heap, (size_t)cap * sizeof *h);
        if (h == NULL)
            return -1;
        l->heap = h;
        l->heap_cap = cap;
    }
    s->heap_index = l->nheap;
    l->heap[l->nheap++] = s;
    heap_sift(l, s->heap_index);
    return 0;
}

static void heap_remove(hb_loop *l, hb_sess *s)
{
    int i = s->heap_index;
    if (i < 0)
        return;
    l->nheap--;
    if (i != l->nheap) {
        l->heap[i] = l->heap[l->nheap];
        l->heap[i]->heap_index = i;
        heap_sift(l, i);
    }
    s->heap_index = -1;
}

/* Arms the timer for the earliest delay, when that changed. */
static void arm_timer(hb_loop *l)
{
    int64_t at = l->nheap ? l->heap[0]->wake_at : 0;
    if (at == l->timer_at)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (at) {
        its.it_value.tv_sec = at / 1000000000;
        its.it_value.tv_nsec = at % 1000000000;
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1; /* zero would disarm it */
    }
    timerfd_settime(l->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
    l->timer_at = at;
}

/* ----------------------------------------------------- the epoll driver */

/* The epoll tag of a session's upstream socket: the session's address with
 * the low bit set (sessions are aligned). */
#define UP_TAG(s) ((uintptr_t)(s) | 1u)

static void close_session(hb_loop *l, hb_sess *s)
{
    for (int i = l->batch_i + 1; i < l->batch_n; i++) {
        uintptr_t tag = (uintptr_t)l->batch[i].data.ptr;
        if (tag == (uintptr_t)s || tag == UP_TAG(s))
            l->batch[i].data.ptr = NULL;
    }
    heap_remove(l, s);
    list_remove(&l->sessions, s);
    /* Out of the epoll set before the close: a child forked meanwhile (by
     * the process that runs the server) holds the socket open until it
     * execs, and the set would go on naming this session, soon freed. */
    epoll_ctl(l->ep, EPOLL_CTL_DEL, s->sock.fd, NULL);
    hb_sock_close(&s->sock);
    hb_sess_free(s); /* (the upstream's unwatch takes it out likewise) */
    free(s);
}

static void loop_events(hb_loop *l, hb_sess *s, unsigned events)
{
    if (s->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = s};
    epoll_ctl(l->ep, EPOLL_CTL_MOD, s->sock.fd, &ev);
    s->events = events;
}

/* Watches a relay's new upstream socket, edge-triggered for both
 * directions: the relay tries both sides whenever it runs, and waits on
 * the upstream only after it would block, so each edge is one it awaits
 * (or a spurious wake-up), and a direction it does not want now costs no
 * wake-ups. */
static void watch_upstream(hb_loop *l, hb_sess *s)
{
    if (s->up_fd < 0 || s->up_gen == s->up_gen_seen)
        return;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.ptr = (void *)UP_TAG(s)};
    epoll_ctl(l->ep, EPOLL_CTL_ADD, s->up_fd, &ev);
    s->up_gen_seen = s->up_gen;
}

static void unwatch_upstream(hb_sess *s, int fd)
{
    hb_loop *l = s->driver;
    epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
}

static unsigned epoll_bits(int wants)
{
    return (wants & HB_SOCK_WANT_READ ? EPOLLIN : 0) | (wants & HB_SOCK_WANT_WRITE ? EPOLLOUT : 0);
}

static void drive(hb_loop *l, hb_sess *s, int64_t now)
{
    hb_want want = hb_sess_advance(s, now);
    if (want != HB_WANT_CLOSE)
        watch_upstream(l, s);
    /* A session waiting on readable and a timer both is in the heap and
     * the set; once it waits for something else it leaves the heap. */
    s->read_timer = want == HB_WANT_READ_TIMER;
    if (want != HB_WANT_READ_TIMER && want != HB_WANT_TIMER && want != HB_WANT_CLOSE)
        heap_remove(l, s);
    switch (want) {
    case HB_WANT_READ_TIMER:
        loop_events(l, s, EPOLLIN);
        if (s->heap_index >= 0)
            heap_sift(l, s->heap_index); /* its wake_at may have moved */
        else if (heap_push(l, s) != 0)
            close_session(l, s);
        break;
    case HB_WANT_READ: loop_events(l, s, EPOLLIN); break;
    case HB_WANT_WRITE: loop_events(l, s, EPOLLOUT); break;
    case HB_WANT_IO: loop_events(l, s, epoll_bits(s->io_client)); break;
    case HB_WANT_TIMER:
        /* Nothing is read while a delay runs: pipelined requests wait. */
        loop_events(l, s, 0);
        if (s->heap_index < 0 && heap_push(l, s) != 0)
            close_session(l, s);
        break;
    case HB_WANT_CLOSE: close_session(l, s); break;
    }
}

static void accept_some(hb_loop *l, int64_t now)
{
    hb_srv *srv = l->srv;
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* The listening socket would stay readable: stop watching it
                 * until the next sweep rather than spin. */
                epoll_ctl(l->ep, EPOLL_CTL_DEL, srv->listen_fd, NULL);
                l->accept_paused = 1;
            }
            return;
        }
        hb_sess *s = malloc(sizeof *s);
        if (s == NULL) {
            close(fd);
            continue;
        }
        if (hb_sess_init(s, fd, &srv->sh, now, 0) != 0) {
            close(fd);
            free(s);
            continue;
        }
        s->events = EPOLLIN;
        s->driver = l;
        s->unwatch = unwatch_upstream;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
        if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            hb_sock_close(&s->sock);
            hb_sess_free(s);
            free(s);
            continue;
        }
        list_add(&l->sessions, s);
        __atomic_add_fetch(&srv->connections, 1, __ATOMIC_RELAXED);
    }
}

static void watch_listener(hb_loop *l)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &TAG_LISTEN};
    epoll_ctl(l->ep, EPOLL_CTL_ADD, l->srv->listen_fd, &ev);
}

static void sweep(hb_loop *l, int64_t now)
{
    hb_sess *s = l->sessions;
    while (s != NULL) {
        hb_sess *next = s->next;
        int expired = hb_sess_expired(s, now);
        if (expired == 1)
            close_session(l, s);
        else if (expired == 2)
            drive(l, s, now); /* it answers for the timeout */
        s = next;
    }
    if (l->accept_paused) {
        l->accept_paused = 0;
        watch_listener(l);
    }
}

static void *loop_main(void *arg)
{
    hb_loop *l = arg;
    struct epoll_event events[SRV_EVENTS];
    int64_t next_sweep = hb_now_ns() + SWEEP_NS;

    for (;;) {
        int n = epoll_wait(l->ep, events, SRV_EVENTS, (int)(SWEEP_NS / 1000000));
        int64_t now = hb_now_ns();
        /* The round goes from the last socket returned to the first. Epoll
         * queues a level-triggered socket it returns behind those already
         * queued, and one that became readable since behind those: the
         * socket a round served last, whose requests came just after the
         * wait, came last in the next round again and missed the round
         * after, round after round (one connection of ten served at 0.6 of
         * the others' rate by a client quick to answer). From the end, the
         * latecomers go first and the one served last changes each round. */
        for (int i = 0, j = n - 1; i < j; i++, j--) {
            struct epoll_event e = events[i];
            events[i] = events[j];
            events[j] = e;
        }
        l->batch = events;
        l->batch_n = n;
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            l->batch_i = i;
            if (tag == NULL)
                continue; /* its session closed earlier in the batch */
            if (tag == &TAG_STOP)
                return NULL;
            if (tag == &TAG_LISTEN) {
                accept_some(l, now);
            } else if (tag == &TAG_TIMER) {
                uint64_t ticks;
                if (read(l->timer_fd, &ticks, sizeof ticks) < 0)
                    (void)0; /* nothing to do: the heap says what is due */
                l->timer_at = 0;
            } else if ((uintptr_t)tag & 1u) {
                /* (the tags above are chars: tested first, as their
                 * addresses may be odd) */
                hb_sess *s = (hb_sess *)((uintptr_t)tag & ~(uintptr_t)1);
                if (s->heap_index < 0 || s->read_timer)
                    drive(l, s, now);
            } else {
                hb_sess *s = tag;
                if ((s->heap_index >= 0 || s->events == 0) &&
                    (events[i].events & (EPOLLHUP | EPOLLERR))) {
                    /* Gone while a delay ran, or while a relay waited on
                     * its upstream alone: nothing is to be sent it. */
                    close_session(l, s);
                    continue;
                }
                if (s->heap_index < 0 || s->read_timer)
                    drive(l, s, now);
            }
        }
        while (l->nheap > 0 && l->heap[0]->wake_at <= now) {
            hb_sess *s = l->heap[0];
            heap_remove(l, s);
            drive(l, s, now);
        }
        l->batch_n = 0;
        arm_timer(l);
        if (now >= next_sweep) {
            sweep(l, now);
            next_sweep = now + SWEEP_NS;
        }
    }
}

static int loop_open(hb_loop *l, hb_srv *srv)
{
    l->srv = srv;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    if (l->ep < 0)
        return -1;
    l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (l->timer_fd < 0)
        return -1;
    struct epoll_event stop = {.events = EPOLLIN, .data.ptr = &TAG_STOP};
    struct epoll_event timer = {.events = EPOLLIN, .data.ptr = &TAG_TIMER};
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, srv->stop_fd, &stop) != 0 ||
        epoll_ctl(l->ep, EPOLL_CTL_ADD, l->timer_fd, &timer) != 0)
        return -1;
    watch_listener(l);
    return 0;
}

static void loop_close(hb_loop *l)
{
    while (l->sessions != NULL)
        close_session(l, l->sessions);
    free(l->heap);
    if (l->timer_fd >= 0)
        close(l->timer_fd);
    if (l->ep >= 0)
        close(l->ep);
}

/* ------------------------------------------- the thread-per-connection driver */

/* On a non-blocking socket (a proxy's): waits in poll(2) for what the
 * session wants, its deadline, or the stop. Returns 0, or -1 when the
 * client went while nothing was asked of it (nothing can reach it now). */
static int wait_poll(hb_srv *srv, hb_sess *s, hb_want want)
{
    struct pollfd p[3];
    int n = 0;
    int client = want == HB_WANT_READ || want == HB_WANT_READ_TIMER ? HB_SOCK_WANT_READ
                 : want == HB_WANT_WRITE                            ? HB_SOCK_WANT_WRITE
                                                                    : s->io_client;
    p[n++] = (struct pollfd){.fd = s->sock.fd,
                             .events = (short)((client & HB_SOCK_WANT_READ ? POLLIN : 0) |
                                               (client & HB_SOCK_WANT_WRITE ? POLLOUT : 0))};
    if (want == HB_WANT_IO && s->up_fd >= 0 && s->io_up != 0)
        p[n++] = (struct pollfd){.fd = s->up_fd,
                                 .events = (short)((s->io_up & HB_SOCK_WANT_READ ? POLLIN : 0) |
                                                   (s->io_up & HB_SOCK_WANT_WRITE ? POLLOUT : 0))};
    p[n++] = (struct pollfd){.fd = srv->stop_fd, .events = POLLIN};
    struct timespec ts, *tsp = NULL;
    if (s->deadline != 0) {
        int64_t left = s->deadline - hb_now_ns();
        if (left < 0)
            left = 0;
        ts = (struct timespec){.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
        tsp = &ts;
    }
    if (ppoll(p, (nfds_t)n, tsp, NULL) > 0 && client == 0 && (p[0].revents & (POLLHUP | POLLERR)))
        return -1;
    return 0;
}

static void *conn_main(void *arg)
{
    hb_sess *s = arg;
    hb_srv *srv = s->driver;

    while (!srv_stopping(srv)) {
        int64_t now = hb_now_ns();
        int expired = hb_sess_expired(s, now);
        if (expired == 1)
            break;
        hb_want want = hb_sess_advance(s, now);
        if (want == HB_WANT_CLOSE)
            break;
        if ((want == HB_WANT_READ || want == HB_WANT_READ_TIMER || want == HB_WANT_WRITE ||
             want == HB_WANT_IO) &&
            !s->blocking && wait_poll(srv, s, want) != 0)
            break;
        if (want == HB_WANT_TIMER) {
            /* Sleep out the delay, waking early only to stop. */
            int64_t left;
            while (!srv_stopping(srv) && (left = s->wake_at - hb_now_ns()) > 0) {
                struct pollfd p = {.fd = srv->stop_fd, .events = POLLIN};
                struct timespec ts = {.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
                ppoll(&p, 1, &ts, NULL);
            }
        }
        /* HB_WANT_READ / WRITE: the blocking call ended at the session's
         * deadline (the session bounds every wait by it), or early, cut
         * short by a shutdown from hb_srv_stop: look at both, then block
         * again. No periodic wake-up: an idle connection costs nothing. */
    }
    pthread_mutex_lock(&srv->mu);
    list_remove(&srv->live, s);
    hb_sock_close(&s->sock);
    if (--srv->nlive == 0)
        pthread_cond_broadcast(&srv->idle);
    pthread_mutex_unlock(&srv->mu);
    hb_sess_free(s);
    free(s);
    return NULL;
}

static void *acceptor_main(void *arg)
{
    hb_srv *srv = arg;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, THREAD_STACK);

    while (!srv_stopping(srv)) {
        /* A proxy's sessions wait in poll, on non-blocking sockets. */
        int fd = accept4(srv->listen_fd, NULL, NULL,
                         SOCK_CLOEXEC | (srv->cfg.proxy ? SOCK_NONBLOCK : 0));
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                struct timespec pause = {0, ACCEPT_PAUSE_NS};
                nanosleep(&pause, NULL);
            }
            continue;
        }
        hb_sess *s = malloc(sizeof *s);
        if (s == NULL || hb_sess_init(s, fd, &srv->sh, hb_now_ns(), !srv->cfg.proxy) != 0) {
            close(fd);
            free(s);
            continue;
        }
        s->driver = srv;
        pthread_mutex_lock(&srv->mu);
        list_add(&srv->live, s);
        srv->nlive++;
        /* Counted before the thread can answer anything on it. */
        __atomic_add_fetch(&srv->connections, 1, __ATOMIC_RELAXED);
        pthread_t t;
        int rc = srv_stopping(srv) ? -1 : pthread_create(&t, &attr, conn_main, s);
        if (rc != 0) {
            list_remove(&srv->live, s);
            srv->nlive--;
            __atomic_sub_fetch(&srv->connections, 1, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&srv->mu);
        if (rc != 0) {
            hb_sock_close(&s->sock);
            hb_sess_free(s);
            free(s);
            continue;
        }
    }
    pthread_attr_destroy(&attr);
    return NULL;
}

/* ---------------------------------------------------------- lifecycle */

/* Clears the way for a Unix socket at path: nothing there, or a socket no
 * one listens on (a server that died without removing it), which goes.
 * Returns 0, or -1 with the reason in err. */
static int unix_clear(const hb_addr *a, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(sb.st_mode)) {
        snprintf(err, errlen, "cannot listen on %s: it exists and is not a socket", path);
        return -1;
    }
    /* A probe that cannot block: a live server whose backlog is full makes
     * a blocking connect(2) wait for it, and makes this one fail with
     * EAGAIN, which says as much as a connection does. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = connect(fd, (const struct sockaddr *)&a->sa, a->len), cerr = errno;
    close(fd);
    int live = rc == 0 || cerr == EAGAIN || cerr == EINPROGRESS;
    if (live || cerr != ECONNREFUSED) {
        snprintf(err, errlen, "cannot listen on %s: %s", path,
                 live ? "a server is listening there" : strerror(cerr));
        return -1;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove the stale socket %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int listen_unix(hb_srv *srv, char *err, size_t errlen)
{
    hb_addr a;
    if (hb_net_unix(srv->unix_path, &a, err, errlen) < 0 ||
        unix_clear(&a, srv->unix_path, err, errlen) != 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct stat sb;
    if (fd < 0 || bind(fd, (const struct sockaddr *)&a.sa, a.len) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", srv->unix_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* Made now: ours to remove at stop, unless replaced meanwhile. */
    if (stat(srv->unix_path, &sb) == 0) {
        srv->unix_dev = sb.st_dev;
        srv->unix_ino = sb.st_ino;
    }
    srv->listen_fd = fd;
    if (listen(fd, 4096) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", srv->unix_path, strerror(errno));
        return -1;
    }
    srv->port = 0;
    return 0;
}

static int listen_on(hb_srv *srv, char *err, size_t errlen)
{
    if (srv->unix_path != NULL) {
        if (listen_unix(srv, err, errlen) != 0)
            return -1;
        if (srv->cfg.mode == HB_SRV_EPOLL)
            fcntl(srv->listen_fd, F_SETFL, fcntl(srv->listen_fd, F_GETFL) | O_NONBLOCK);
        return 0;
    }
    struct addrinfo hints, *res = NULL;
    char port[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port, sizeof port, "%d", srv->cfg.port);
    int rc = getaddrinfo(srv->host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", srv->host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", srv->host, srv->cfg.port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    memcpy(&srv->relay.self.sa, &ss, sizeof ss);
    srv->relay.self.len = sl;
    srv->relay.has_self = 1;
    if (srv->cfg.mode == HB_SRV_EPOLL)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    srv->listen_fd = fd;
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* What every session of srv shares, from its config: the limits, the
 * Server field and, for a forward proxy, the destinations it allows and a
 * Via name of its own. Returns 0, or -1 when memory ran out. */
static int share_settings(hb_srv *srv)
{
    const hb_srv_config *cfg = &srv->cfg;
    hb_srv_shared *sh = &srv->sh;
    sh->rnd = srv->rnd;
    sh->transport = cfg->transport;
    sh->transport_shared = cfg->transport_shared;
    sh->zero_copy = cfg->zero_copy;
    sh->max_body = cfg->max_body;
    sh->max_buffered = cfg->max_buffered;
    sh->header_timeout = (int64_t)(cfg->header_timeout * 1e9);
    sh->send_timeout = (int64_t)(cfg->send_timeout * 1e9);
    sh->idle_timeout = (int64_t)(cfg->idle_timeout * 1e9);
    sh->http2 = cfg->http2;
    sh->h2_max_streams = cfg->max_streams > 0 ? cfg->max_streams : 100;
    sh->server_field_len = (size_t)snprintf(sh->server_field, sizeof sh->server_field,
                                            "Server: httpbench/%s\r\n", cfg->version);
    if (cfg->proxy) {
        if (cfg->nallow > 0) {
            srv->allow = malloc(cfg->nallow * sizeof *srv->allow);
            if (srv->allow == NULL)
                return -1;
            memcpy(srv->allow, cfg->allow, cfg->nallow * sizeof *srv->allow);
        }
        hb_relay_config *rc = &srv->relay;
        sh->relay = rc;
        rc->allow = srv->allow;
        rc->nallow = cfg->nallow;
        rc->upstream_timeout = (int64_t)(cfg->upstream_timeout * 1e9);
        rc->zero_copy = cfg->zero_copy;
        /* A name of this server's own, so a request sent round to it again
         * is seen (508) rather than relayed until descriptors run out. */
        uint64_t id = (uint64_t)hb_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)srv;
        rc->via_len = (size_t)snprintf(rc->via, sizeof rc->via, "Via: 1.1 httpbench-%08x\r\n",
                                       (unsigned)(id ^ (id >> 32)));
    }
    return 0;
}

/* Starts srv's threads: the event loops, or the acceptor of the
 * thread-per-connection mode. Returns 0, or -1 with a message in err. */
static int start_threads(hb_srv *srv, char *err, size_t errlen)
{
    const hb_srv_config *cfg = &srv->cfg;
    if (cfg->mode == HB_SRV_EPOLL) {
        int n = cfg->threads;
        srv->loops = calloc((size_t)n, sizeof *srv->loops);
        if (srv->loops == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        /* Counted only once they exist, each with its descriptors at -1, so
         * that hb_srv_stop can undo any part of this. */
        for (int i = 0; i < n; i++)
            srv->loops[i].ep = srv->loops[i].timer_fd = -1;
        srv->nloops = n;
        for (int i = 0; i < srv->nloops; i++) {
            hb_loop *l = &srv->loops[i];
            if (loop_open(l, srv) != 0 || pthread_create(&l->thread, NULL, loop_main, l) != 0) {
                snprintf(err, errlen, "cannot start an event loop: %s", strerror(errno));
                return -1;
            }
            l->started = 1;
        }
    } else {
        if (pthread_create(&srv->acceptor, NULL, acceptor_main, srv) != 0) {
            snprintf(err, errlen, "cannot start the acceptor: %s", strerror(errno));
            return -1;
        }
        srv->acceptor_started = 1;
    }
    return 0;
}

hb_srv *hb_srv_start(const hb_srv_config *cfg, char *err, size_t errlen)
{
    sigset_t all, old;
    int masked = 0;

    if (cfg->mode == HB_SRV_EPOLL && (cfg->threads < 1 || cfg->threads > HB_SRV_MAX_THREADS)) {
        snprintf(err, errlen, "threads must be from 1 to %d, not %d", HB_SRV_MAX_THREADS,
                 cfg->threads);
        return NULL;
    }
    hb_srv *srv = calloc(1, sizeof *srv);
    if (srv == NULL)
        goto nomem;
    srv->cfg = *cfg;
    srv->listen_fd = srv->stop_fd = -1;
    srv->sh.st.dir_fd = -1;
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->idle, NULL);
    srv->host = strdup(cfg->host);
    srv->static_dir = dup_or_null(cfg->static_dir);
    srv->unix_path = dup_or_null(cfg->unix_path);
    srv->rnd = malloc(HB_RND_BLOCK);
    if (srv->host == NULL || (cfg->static_dir && srv->static_dir == NULL) ||
        (cfg->unix_path && srv->unix_path == NULL) || srv->rnd == NULL)
        goto nomem;
    hb_srv_fill_random(srv->rnd, HB_RND_BLOCK, (uint64_t)hb_now_ns());

    hb_srv_shared *sh = &srv->sh;
    if (hb_route_static_open(&sh->st, srv->static_dir) != 0) {
        snprintf(err, errlen, "cannot serve %s: %s", srv->static_dir, strerror(errno));
        goto error;
    }
    if (share_settings(srv) != 0)
        goto nomem;

    if (listen_on(srv, err, errlen) != 0)
        goto error;
    srv->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (srv->stop_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        goto error;
    }

    /* Threads inherit a mask with every signal blocked. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    masked = 1;
    if (start_threads(srv, err, errlen) != 0)
        goto error;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return srv;

nomem:
    snprintf(err, errlen, "out of memory");
error:
    if (masked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (srv != NULL)
        hb_srv_stop(srv);
    return NULL;
}

int hb_srv_port(const hb_srv *srv)
{
    return srv->port;
}

void hb_srv_get_stats(hb_srv *srv, hb_srv_stats *out)
{
#define LOAD(field, source, what) out->field = __atomic_load_n(&(source), __ATOMIC_RELAXED);
    HB_SRV_COUNTS(LOAD)
#undef LOAD
}

void hb_srv_stop(hb_srv *srv)
{
    __atomic_store_n(&srv->stopping, 1, __ATOMIC_RELEASE);
    if (srv->stop_fd >= 0) {
        uint64_t one = 1;
        if (write(srv->stop_fd, &one, sizeof one) < 0)
            (void)0; /* a counter at its maximum is still readable */
    }
    for (int i = 0; i < srv->nloops; i++) {
        if (srv->loops[i].started)
            pthread_join(srv->loops[i].thread, NULL);
        loop_close(&srv->loops[i]);
    }
    if (srv->acceptor_started) {
        /* Wake the acceptor from accept(2) and every connection thread
         * from its read or write; they see the stop flag and end. */
        shutdown(srv->listen_fd, SHUT_RDWR);
        pthread_join(srv->acceptor, NULL);
        pthread_mutex_lock(&srv->mu);
        for (hb_sess *s = srv->live; s != NULL; s = s->next)
            hb_sock_shutdown(&s->sock);
        while (srv->nlive > 0)
            pthread_cond_wait(&srv->idle, &srv->mu);
        pthread_mutex_unlock(&srv->mu);
    }
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    struct stat sb;
    if (srv->unix_ino != 0 && stat(srv->unix_path, &sb) == 0 && sb.st_dev == srv->unix_dev &&
        sb.st_ino == srv->unix_ino)
        unlink(srv->unix_path);
    if (srv->stop_fd >= 0)
        close(srv->stop_fd);
    hb_route_static_close(&srv->sh.st);
    pthread_mutex_destroy(&srv->mu);
    pthread_cond_destroy(&srv->idle);
    free(srv->loops);
    free(srv->allow);
    free(srv->rnd);
    free(srv->host);
    free(srv->static_dir);
    free(srv->unix_path);
    free(srv);
}
