"""One event to many HTTP/2 event streams: opens CONNECTIONS connections (prior knowledge, h2c)
with STREAMS `GET /notes/events` streams each, waits until every stream has its 200, then
creates a note over HTTP/1.1 and measures how long until every stream has received its event.

Usage: h2_events.py PORT [CONNECTIONS] [STREAMS]   (default 10 × 100)
Prints one JSON line: streams, opened_s, latency_ms (p50, p99, max of the event's arrival).
Runs with PyPI's `h2` (scripts/test-venv installs it in .venv-test).
"""
import http.client
import json
import selectors
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def main():
    port = int(sys.argv[1])
    connections = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    streams = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    selector = selectors.DefaultSelector()
    peers = []
    started = time.monotonic()
    for _ in range(connections):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setblocking(False)
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000})
        ids = []
        for _ in range(streams):
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, [(":method", "GET"), (":scheme", "http"), (":authority", f"127.0.0.1:{port}"),
                                       (":path", "/notes/events")], end_stream=True)
            ids.append(stream)
        peer = {"sock": sock, "conn": conn, "out": bytearray(conn.data_to_send())}
        peers.append(peer)
        selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, peer)

    state = {}  # (peer index, stream) -> {"status": int, "data": bytes, "at": float}
    for index, peer in enumerate(peers):
        for stream in range(1, 2 * streams, 2):
            state[(index, stream)] = {"status": None, "data": b"", "at": None}
    marker = None

    def pump(until, timeout):
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise SystemExit(json.dumps({"error": "timed out", "opened": sum(s["status"] == 200 for s in state.values()),
                                             "received": sum(s["at"] is not None for s in state.values())}))
            for key, mask in selector.select(timeout=0.5):
                peer = key.data
                index = peers.index(peer)
                if mask & selectors.EVENT_WRITE and peer["out"]:
                    sent = peer["sock"].send(peer["out"])
                    del peer["out"][:sent]
                if mask & selectors.EVENT_READ:
                    data = peer["sock"].recv(1 << 20)
                    if not data:
                        raise SystemExit(json.dumps({"error": "connection closed"}))
                    now = time.monotonic()
                    for event in peer["conn"].receive_data(data):
                        if isinstance(event, h2.events.ResponseReceived):
                            state[(index, event.stream_id)]["status"] = int(dict(event.headers)[":status"])
                        elif isinstance(event, h2.events.DataReceived):
                            entry = state[(index, event.stream_id)]
                            entry["data"] += event.data
                            peer["conn"].acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                            if marker and entry["at"] is None and marker in entry["data"]:
                                entry["at"] = now
                    peer["out"] += peer["conn"].data_to_send()
                if not peer["out"]:
                    selector.modify(peer["sock"], selectors.EVENT_READ, peer)
                else:
                    selector.modify(peer["sock"], selectors.EVENT_READ | selectors.EVENT_WRITE, peer)

    pump(lambda: all(s["status"] == 200 for s in state.values()), 60)
    opened = time.monotonic() - started
    marker = f"one event to all {time.time_ns()}".encode()
    body = json.dumps({"body": marker.decode()})
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sent_at = time.monotonic()
    client.request("POST", "/notes", body=body, headers={"Content-Type": "application/json"})
    if client.getresponse().status != 201:
        raise SystemExit(json.dumps({"error": "POST /notes failed"}))
    pump(lambda: all(s["at"] is not None for s in state.values()), 30)
    latencies = sorted((s["at"] - sent_at) * 1000 for s in state.values())
    print(json.dumps({"streams": len(latencies), "opened_s": round(opened, 3),
                      "latency_ms": {"p50": round(latencies[len(latencies) // 2], 1),
                                     "p99": round(latencies[int(len(latencies) * 0.99) - 1], 1),
                                     "max": round(latencies[-1], 1)}}))


if __name__ == "__main__":
    main()
