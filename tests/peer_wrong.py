#!/usr/bin/env python3
"""A deliberately wrong external peer (docs/peers.md protocol) for test_bench_wrong_peer: it serves
rmsnorm and writes an output of the right shape whose elements are all 0.5, which the fp64 oracle
must refuse. Standard library only."""
import json
import sys

dims = None
for line in sys.stdin:
    req = json.loads(line)
    op = req.get("op")
    if op == "hello":
        ans = {"ok": True, "peer": "wrong", "version": "0", "detail": "writes 0.5 everywhere"}
    elif op == "prepare":
        if req.get("kernel") != "rmsnorm":
            ans = {"ok": False, "error": "only rmsnorm"}
        else:
            dims = (int(req["dims"]["R"]), int(req["dims"]["C"]))
            ans = {"ok": True}
    elif op == "run":
        ans = {"ok": True, "ns": 1000 * int(req.get("n", 1))}
    elif op == "output":
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % dims
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        with open(req["path"], "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
            f.write(b"\x00\x00\x00\x3f" * (dims[0] * dims[1]))
        ans = {"ok": True}
    elif op == "quit":
        break
    else:
        ans = {"ok": False, "error": "unknown op"}
    print(json.dumps(ans), flush=True)
