"""The scenario objects: their checks, names, variants zipped, and the
one-origin rule (tests/loop/test_scenarios.py runs them)."""

from __future__ import annotations

import math

import pytest

from httpbench.scenario import Request, Scenario, join_target


def test_a_request_of_one_value_and_of_variants():
    r = Request("GET", "/api/items")
    assert (r.name, r.nvariants, r.targets, r.weight) == ("GET /api/items", 1, ["/api/items"], 1)
    v = Request("POST", [f"/i/{i}" for i in range(3)], body=[b"a", b"b", b"c"],
                headers=[{"X": "1"}, {"X": "2"}, {"X": "3"}], weight=4, expect_status=[200, 201])
    assert v.name == "POST 3 variants" and v.nvariants == 3 and v.expect_status == {200, 201}
    assert v.header_sets[2] == {"X": "3"} and v.bodies[1] == b"b"
    # A list of (name, value) pairs is one set of headers, not variants.
    assert Request("GET", "/", headers=[("A", "1"), ("B", "2")]).nvariants == 1


@pytest.mark.parametrize("kwargs, what", [
    (dict(method="G T"), "method"),
    (dict(target=[]), "target"),
    (dict(target=["/a", "/b"], body=[b"x"]), "zipped"),
    (dict(weight=0), "weight"), (dict(weight=math.nan), "weight"),
    (dict(weight=math.inf), "weight"), (dict(weight=True), "weight"),
    (dict(expect_status=99), "expect_status"), (dict(expect_status=[]), "expect_status"),
    (dict(expect_status="200"), "expect_status"),
    (dict(expect_body=b""), "expect_body"), (dict(expect_body="text"), "expect_body"),
    (dict(expect_length=-1), "expect_length"),
    (dict(variants="shuffled"), "variants"),
    (dict(name=""), "name"),
])
def test_a_request_is_checked(kwargs, what):
    with pytest.raises(ValueError, match=what):
        Request(**kwargs)


def test_a_scenario_is_checked():
    a, b = Request("GET", "/a"), Request("GET", "/b")
    assert Scenario([a, b], order="sequence", seed=7).order == "sequence"
    for args, what in (([], "1 to"), ([a, a], "names must differ"), (["/a"], "Request"),
                       ([a] * 300, "1 to")):
        with pytest.raises(ValueError, match=what):
            Scenario(args)
    with pytest.raises(ValueError, match="order"):
        Scenario([a], order="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        Scenario([a], seed=-1)


def test_targets_join_one_origin():
    base = "http://127.0.0.1:8080/x"
    assert join_target(base, "/api?q=1") == "/api?q=1"
    assert join_target(base, "http://127.0.0.1:8080/b") == "/b"
    for other in ("http://127.0.0.1:8081/b", "https://127.0.0.1:8080/b", "http://example.test/"):
        with pytest.raises(ValueError, match="one origin"):
            join_target(base, other)
    with pytest.raises(ValueError, match="path"):
        join_target(base, "api")


def test_variants_are_built_once_and_a_server_takes_them():
    import socket

    from helpers import read_message

    import httpbench
    from httpbench.runner import host_field
    from httpbench.scenario import build_variants, merged_headers

    assert merged_headers({"Accept": "*/*", "X-A": "1"}, [("x-a", "2")]) == [
        ("Accept", "*/*"), ("x-a", "2")]
    r = Request("GET", [f"/rnd?c={n}" for n in (1, 2, 3)], headers=[{"X-V": str(n)} for n in
                                                                   (1, 2, 3)])
    with httpbench.Server() as srv:
        variants, head = build_variants(r, srv.url("/"), {"Accept": "*/*"},
                                        host_field("127.0.0.1", srv.port))
        assert len(variants) == 3 and not head and b"X-V: 2\r\n" in variants[1]
        assert variants[2].startswith(b"GET /rnd?c=3 HTTP/1.1\r\n")
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            for n, data in enumerate(variants, 1):
                s.sendall(data)
                answer = read_message(s)
                assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"\r\n\r\n" +
                                                                               answer[-n:])
    with pytest.raises(ValueError, match="one origin"):
        build_variants(Request("GET", "http://elsewhere.test/"), "http://127.0.0.1:1/", None,
                       b"127.0.0.1:1")
