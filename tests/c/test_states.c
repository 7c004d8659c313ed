/* test_states.c: the state machines' tables, walked. The timing loop's
 * connection (bench_sock.c's socket states, then each carrier's:
 * bench_h1.c, bench_h2.c) and the server's session (session.c) each keep
 * their states and transitions as data; this checks that every table is
 * whole (each state named, handled, going only to states of its machine),
 * that a walk from the start reaches every state (each carrier's own with
 * that carrier; the socket's with one carrier at least: BC_DRAIN is a
 * service a carrier may use or not) and that from every state the
 * machine can come back (to BC_IDLE; to a close for the
 * server), and that HB_CHECK_STATES refuses a change the table does not
 * hold. The code is held to the tables by HB_CHECK_STATES in every test
 * build (the suite, the fuzz drivers). The server's relay (relay.c) is
 * walked too, its table read by states_relay.c.
 *
 *   cc -O1 -g -Wall -Wextra -DHB_CHECK_STATES -o test_states tests/c/test_states.c \
 *       <the loop's and the server's sources, as tests/package/test_c.py lists them> \
 *       -lssl -lcrypto -lnghttp2 -lm -lpthread
 *   ./test_states            prints "N passed, N failed"
 */
#define _GNU_SOURCE
#include "../../csrc/bench_int.h"
#include "../../csrc/session.c" /* (its table is its own: read it in place) */

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

static int passed, failed;

static void expect(int ok, const char *what, const char *name)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s: %s\n", what, name);
    }
}

/* ---- the loop: the socket's table composed with a carrier's */

#define MAXS 32

/* The states loop state s may go to, in `to` (1 each). */
static void loop_next(const hb_carrier *k, int s, int *to)
{
    bconn c = {.carrier = k};
    const hb_bc_state *st = hb_bc_state_of(&c, s);
    int n = BC_CARRIED + k->nstates;
    for (int t = 0; t < n; t++)
        to[t] =
            (st->next & HB_BC_TO(t)) != 0 ||
            (t >= BC_CARRIED && (st->next & HB_BC_TO_CARRIER) && k->states[t - BC_CARRIED].entry);
}

/* Which states a walk from `from` reaches, following next (or, with
 * back, against it). */
static void walk(const hb_carrier *k, int from, int back, int *seen)
{
    int n = BC_CARRIED + k->nstates, stack[MAXS], top = 0;
    memset(seen, 0, MAXS * sizeof *seen);
    seen[from] = 1;
    stack[top++] = from;
    while (top > 0) {
        int s = stack[--top];
        for (int t = 0; t < n; t++) {
            int to[MAXS];
            loop_next(k, back ? t : s, to);
            if (!seen[t] && to[back ? s : t]) {
                seen[t] = 1;
                stack[top++] = t;
            }
        }
    }
}

/* k's machine whole; the socket's states its walk reached marked in
 * socket_seen. */
static void loop_machine(const hb_carrier *k, int *socket_seen)
{
    bconn c = {.carrier = k};
    int n = BC_CARRIED + k->nstates, entries = 0;
    expect(n <= 31, "a machine fits its masks", k->name);
    for (int s = 0; s < n; s++) {
        const hb_bc_state *st = hb_bc_state_of(&c, s);
        char what[96];
        snprintf(what, sizeof what, "%s state %d", k->name, s);
        expect(st->name != NULL && st->on_event != NULL, "named and handled", what);
        expect(st->lone >= LONE_NONE && st->lone <= LONE_WATCHED, "a lone wait", what);
        uint32_t outside = st->next & ~HB_BC_TO_CARRIER & ~((1u << n) - 1);
        expect(outside == 0, "goes only to its machine's states", what);
        expect(s >= BC_CARRIED || !st->entry, "entry marks a carrier's state", what);
        entries += s >= BC_CARRIED && st->entry;
        for (int t = 0; t < s; t++)
            expect(strcmp(hb_bc_state_of(&c, t)->name, st->name) != 0, "names apart", st->name);
    }
    expect(entries > 0, "the socket hands over to some state", k->name);
    int seen[MAXS];
    walk(k, BC_IDLE, 0, seen);
    for (int s = 0; s < BC_CARRIED; s++)
        socket_seen[s] |= seen[s];
    for (int s = BC_CARRIED; s < n; s++)
        expect(seen[s], "reached from idle", hb_bc_state_of(&c, s)->name);
    walk(k, BC_IDLE, 1, seen);
    for (int s = 0; s < n; s++)
        expect(seen[s], "comes back to idle", hb_bc_state_of(&c, s)->name);
}

/* A change the table does not hold aborts, naming it (HB_CHECK_STATES). */
static void loop_refuses(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        bconn c = {.carrier = &hb_carrier_h1, .state = BC_DRAIN};
        hb_bc_enter(&c, BC_TUNNEL);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "an undeclared change aborts",
           "drain -> tunnel");
    bconn c = {.carrier = &hb_carrier_h1, .state = BC_IDLE};
    hb_bc_enter(&c, BC_CONNECTING); /* declared: no abort */
    expect(c.state == BC_CONNECTING, "a declared change is made", "idle -> connecting");
}

/* ---- the server's session and its relay: tables of (name, next) */

int relay_states(const char **names, unsigned *next); /* states_relay.c */

/* A table of n states from `start`: each named, going only to its states,
 * reached from start, and ending (a state with nowhere to go is an end:
 * the connection closes). */
static void table_machine(const char *who, int n, const char *const *names, const unsigned *next,
                          int start)
{
    char what[96];
    for (int s = 0; s < n; s++) {
        snprintf(what, sizeof what, "%s %s", who, names[s] ? names[s] : "?");
        expect(names[s] != NULL, "named", what);
        expect((next[s] & ~((1u << n) - 1)) == 0, "goes only to its states", what);
    }
    for (int s = 0; s < n; s++) {
        int reach[32] = {0}, stack[32], top = 0, ends = 0;
        reach[s] = 1;
        stack[top++] = s;
        while (top > 0) {
            int u = stack[--top];
            ends |= next[u] == 0;
            for (int t = 0; t < n; t++)
                if (!reach[t] && (next[u] & (1u << t))) {
                    reach[t] = 1;
                    stack[top++] = t;
                }
        }
        snprintf(what, sizeof what, "%s %s", who, names[s]);
        expect(ends, "ends in a close", what);
        if (s == start)
            for (int t = 0; t < n; t++) {
                snprintf(what, sizeof what, "%s %s", who, names[t]);
                expect(reach[t], "reached from the start", what);
            }
    }
}

static void server_machines(void)
{
    const char *names[32];
    unsigned next[32];
    for (int s = 0; s < S_COUNT; s++) {
        expect(STATES[s].step != NULL, "stepped", STATES[s].name);
        names[s] = STATES[s].name;
        next[s] = STATES[s].next;
    }
    table_machine("session", S_COUNT, names, next, S_HEAD);
    int n = relay_states(names, next);
    expect(n >= 5, "the relay's table", "relay");
    table_machine("relay", n, names, next, 0);
}

int main(void)
{
    int socket_seen[BC_CARRIED] = {0};
    loop_machine(&hb_carrier_h1, socket_seen);
    loop_machine(&hb_carrier_h2, socket_seen);
    for (int s = 0; s < BC_CARRIED; s++) {
        bconn c = {.carrier = &hb_carrier_h1};
        expect(socket_seen[s], "reached from idle by a carrier", hb_bc_state_of(&c, s)->name);
    }
    loop_refuses();
    server_machines();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
