"""The saved result: the JSON's layout and schema versions (every one from
OLDEST_SCHEMA to SCHEMA reads back, others refused by name) and --hgrm."""

from __future__ import annotations

import json
import re

import pytest

import httpbench
from helpers import exact, hb


# What each schema added, so a file of schema k lacks what came after it.
ADDED_BY = {3: ("tls_protocol", "tls_temp_key", "tls_server_name", "tls_full_handshakes",
                "tls_resumed_handshakes", "tls_handshake"),
            4: ("unix_socket", "pipeline", "proxy"), 5: ("stages", "concurrency_stages"),
            6: (), 7: ("not_run",), 8: (), 9: ("counts",),
            11: ("kind", "interrupted_at", "cpus", "hostname"), 12: ("streams_unlimited",),
            15: ("conn_first_byte",), 16: ("conn_rps_within",), 17: ("tls_failed_handshakes",),
            18: ("conn_connect",)}


def test_json_has_a_schema_a_start_time_named_seconds_and_plain_histograms(server):
    r = httpbench.run(server.url("/rnd?c=10"), duration=1.2, concurrency=2, progress=False)
    d = json.loads(r.to_json())
    # 3: the tls class and tls_* figures; 4 unix_socket; 5 stages; 6 the check
    # class and by_name; 7 workers and not_run; 8 time_taken and non_2xx anew
    assert d["schema"] == httpbench.result.SCHEMA
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", d["start_time"])
    sec = d["timeline"][0]
    assert set(sec) == {"t", "complete", "failed", "rps", "p50", "p99", "non_2xx"}
    assert sec["t"] == 0 and sec["non_2xx"] == 0 and d["kind"] == "run"
    assert 0 < sec["p50"] <= sec["p99"] < 1  # seconds
    pairs = d["latency"]["histogram"]
    assert sum(n for _, n in pairs) == r.complete
    assert all(0 < v < 1 for v, _ in pairs) and pairs == sorted(pairs)
    assert json.loads(httpbench.Result.from_json(r.to_json()).to_json()) == d


def test_json_saved_by_the_previous_layout_still_loads(server):
    r = httpbench.run(server.url("/rnd?c=10"), requests=100, progress=False)
    old = r.to_dict()
    for name in ("schema", "start_time", "cancelled", "tls_protocol", "tls_temp_key",
                 "tls_server_name", "tls_full_handshakes", "tls_resumed_handshakes",
                 "tls_handshake", "unix_socket", "pipeline", "proxy"):
        del old[name]
    del old["failures"]["tls"]
    old["timeline"] = [[x["t"], x["complete"], x["failed"], x["p99"]] for x in old["timeline"]]
    back = httpbench.Result.from_dict(old)
    assert back.complete == 100 and back.cancelled == 0 and back.start_time is None
    assert back.timeline[0].p50 is None
    assert back.failures["tls"] == 0 and back.tls_handshake.count == 0
    assert "Failed requests:        0" in back.report() and "SSL/TLS" not in back.report()


@pytest.mark.parametrize("schema", range(httpbench.result.OLDEST_SCHEMA,
                                         httpbench.result.SCHEMA + 1))
def test_every_schema_from_2_to_the_current_one_reads_back(server, schema):
    r = httpbench.run(server.url("/rnd?c=10"), requests=50, progress=False)
    d = r.to_dict()
    d["schema"] = schema
    for later in range(schema + 1, httpbench.result.SCHEMA + 1):
        for name in ADDED_BY.get(later, ()):
            d.pop(name, None)
    back = httpbench.Result.from_dict(d)
    assert (back.complete, back.issued, back.body_bytes) == (50, 50, 500)
    assert back.latency.count == 50 and back.report().startswith("Server Software:")
    if schema < 3:
        assert back.tls_handshake.count == 0 and back.tls_protocol == ""


@pytest.mark.parametrize("schema", [1, 0, httpbench.result.SCHEMA + 1, "8", None, True])
def test_a_schema_this_version_cannot_read_is_refused_by_name(server, schema):
    d = httpbench.run(server.url("/rnd?c=10"), requests=1, progress=False).to_dict()
    d["schema"] = schema
    with pytest.raises(ValueError, match=f"schema {schema!r}: this httpbench reads schemas 2 to"):
        httpbench.Result.from_dict(d)


def test_hgrm_is_hdrhistograms_percentile_distribution(tmp_path, server):
    r = hb("-n", "2000", "-c", "2", "-q", "--hgrm", "out.hgrm", server.url("/rnd?c=10"),
           cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "out.hgrm").read_text().splitlines()
    assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    rows = [line.split() for line in lines[2:] if line and not line.startswith("#")]
    values = [float(x[0]) for x in rows]
    percentiles = [float(x[1]) for x in rows]
    counts = [int(x[2]) for x in rows]
    assert values == sorted(values) and percentiles == sorted(percentiles)
    assert percentiles[0] == 0.0 and percentiles[-1] == 1.0 and counts[-1] == 2000
    assert percentiles[1:6] == [0.1, 0.2, 0.3, 0.4, 0.5] and percentiles[6] == 0.55
    assert lines[-3].startswith("#[Mean    =") and lines[-2].startswith("#[Max     =")
    assert "Total count    =         2000]" in lines[-2]
    assert values[-1] < 100  # milliseconds, as wrk2 prints


def test_the_compact_layout_reads_back_exactly_and_refuses_a_hostile_state(server):
    """Schema 14's compact latencies (a pytest baseline's): `state_z` only,
    the same figures back; a state that is not base64, not zlib, not a
    state, or unpacks past its bound is refused naming the field."""
    import base64
    import zlib
    r = httpbench.run(server.url("/rnd?c=10"), requests=300, concurrency=2, progress=False)
    d = json.loads(json.dumps(r.to_dict(compact=True)))
    assert set(d["latency"]) == {"count", "min", "max", "mean", "stdev", "percentiles",
                                 "state_z"}
    back = httpbench.Result.from_dict(d)
    assert back.to_dict() == r.to_dict()
    for bad in ("***", base64.b64encode(b"not zlib").decode(),
                base64.b64encode(zlib.compress(b'"a string"')).decode(),
                base64.b64encode(zlib.compress(b"[" + b"0," * (9 << 20) + b"0]")).decode(), 7):
        d["latency"]["state_z"] = bad
        with pytest.raises(ValueError, match="latency.state"):
            httpbench.Result.from_dict(d)


def test_a_result_that_knows_little_is_built_from_what_it_knows():
    """Result._known: every field not given takes its defined empty value
    (so an agent's, a lost worker's or a run that measured nothing is not
    a hand-written call of every field), and it reads back from its JSON
    whole. Outside the model only the two that turn a whole set of figures
    into one (the loop's, local.py; the merge, distributed.py) call Result
    with its fields."""
    import dataclasses
    from pathlib import Path
    r = httpbench.Result._known(url="http://x/", issued=3, complete=1, failed=1, cancelled=1,
                                failures={"worker": 1})
    exact(r)
    assert r.url == "http://x/"
    assert r.failures["worker"] == 1 and r.failures["connect"] == 0
    assert r.start_time is None and r.requests is None and r.rate is None
    assert r.status_counts == {} and r.first_error == "" and r.latency.count == 0
    assert r.interrupted is False and r.time_taken == 0.0
    back = httpbench.Result.from_dict(json.loads(r.to_json()))
    for f in dataclasses.fields(httpbench.Result):
        if f.type == "Latency":  # (compared as objects: by their counts)
            assert getattr(back, f.name).count == getattr(r, f.name).count == 0, f.name
        else:
            assert getattr(back, f.name) == getattr(r, f.name), f.name
    pkg = Path(httpbench.__file__).parent
    callers = sorted(str(p.relative_to(pkg)) for p in pkg.rglob("*.py")
                     if re.search(r"(?<![\w.])Result\(", p.read_text()))
    assert callers == ["distributed.py", "local.py"], callers


def test_the_merge_of_parts_follows_the_rules_beside_the_fields():
    """result.MERGE_RULES, applied by distributed.merge: counts, classes,
    statuses and CPU summed, the longest time, the lowest stream limit told,
    the most streams used, histograms merged exactly, the first measuring
    part's document length."""
    from httpbench._core import Histogram
    from httpbench.distributed import merge
    from httpbench.result import MERGE_RULES, Latency

    def part(n: int, took: float, allowed: int | None, ns: int, doc: int | None,
             started: str | None) -> httpbench.Result:
        h = Histogram()
        h.record(ns)
        return httpbench.Result._known(
            url="http://x/", start_time=started, issued=n, complete=n, threads=1,
            concurrency=2, cpu_user=0.25, time_taken=took, streams_allowed=allowed,
            streams_max_used=n, status_counts={200: n}, failures={"timeout": 1},
            counts={"retries": n}, latency=Latency(h), document_length=doc)

    parts = [part(3, 1.5, None, 1_000_000, None, None),  # (a lost worker's: not measuring)
             part(5, 2.0, 100, 3_000_000, 2048, "2026-12-02T00:00:00+00:00"),
             part(7, 1.0, 10, 2_000_000, 99, "2026-12-02T00:00:00+00:00")]
    m = merge(parts)
    assert (m.issued, m.complete, m.threads, m.concurrency) == (15, 15, 3, 6)
    assert m.cpu_user == 0.75 and m.time_taken == 2.0
    assert m.streams_allowed == 10 and m.streams_unlimited is False and m.streams_max_used == 7
    assert m.status_counts == {200: 15} and m.failures["timeout"] == 3
    assert m.counts == {"retries": 15} and m.document_length == 2048
    assert m.latency.count == 3 and m.latency.max == pytest.approx(0.003, rel=0.01)
    assert {"failures", "status_counts", "latency", "time_taken"} <= set(MERGE_RULES)
