"""The names of a result's figures that the model, the renderers and the
loop's glue share: the failure classes, the percentiles ab prints, and the
JSON layout's version."""

__all__ = ["FAILURE_CLASSES", "PERCENTILES", "SCHEMA", "OLDEST_SCHEMA"]

FAILURE_CLASSES = ("connect", "receive", "length", "exceptions", "timeout", "tls", "check",
                   "reset", "worker")
# The JSON layout's version: 2 added schema, start_time, named timeline
# fields and each latency's histogram as (value, count) pairs; 3 the tls
# failure class and the TLS figures (tls_*); 4 unix_socket, pipeline, proxy;
# 5 stages and concurrency_stages (load shapes); 6 the check failure class
# and a scenario's by_name (each request's figures, in this same layout); 7
# a run over a cluster's workers (workers, not_run, the worker class); 8
# time_taken under a rate or a shape is the schedule's length at least, and
# non_2xx counts complete responses only (one failing a check is failed); 9
# counts (the loop's counters without a field of their own, by name); 10
# HTTP/2: the reset class, http_version, streams, streams_allowed,
# streams_max_used, refused, reset_codes, header_bytes_wire and
# header_bytes_decoded, and per-connection req/s (conn_rps_*); 11 `kind`
# ("run"), cpus, hostname, interrupted_at, the timeline's non_2xx per
# second, a worker's lost_at, and the per-request log's log, log_records,
# log_dropped and log_error; 12 streams_unlimited (the server's SETTINGS
# set no SETTINGS_MAX_CONCURRENT_STREAMS) and the `retries` count; 13 the
# client's own figures (`client`: busy, lateness, unsent, bound and why)
# and the `late_busy` count; 14 a latency's `state_z` (its state compressed,
# without `histogram` and `state`), as a pytest baseline keeps it; 15
# conn_first_byte (each connection's connect to its first response byte);
# 16 conn_rps_within (h2load's +/- sd of the connections' req/s); 17 the
# `unopened` count (requests failed while their connection opened) and
# tls_failed_handshakes; 18 conn_connect (each connect's start to its
# connection made: h2load's time for connect); 19 a capacity search's
# and a comparison's `interrupted`; 20 a capacity step's `timed` (how many
# responses its p50 and p99 are of).
SCHEMA = 20
# The oldest layout from_dict reads (1 had no `schema` and other names).
OLDEST_SCHEMA = 2
# ab's percentiles, with the tail it rounds away.
PERCENTILES = (50, 66, 75, 80, 90, 95, 98, 99, 99.9, 99.99, 100)
