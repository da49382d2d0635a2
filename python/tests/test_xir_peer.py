"""python/bench/xir_peer.py, the Python side of `xir bench --suite peers` (docs/bench.md, "The
Python side"): one server answering for xir_python and, with --torch, torch_eager_py; a prepare
says which ("peer"); when xir or torch cannot be imported, hello answers ok false with the reason
(the bench then reports the Python side as not measured, with that reason). No timing."""
import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVER = ROOT / "python" / "bench" / "xir_peer.py"
SMOKE = ROOT / "peers" / "ext" / "smoke.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None
# The server runs in a fresh interpreter that sees only its own sys.path: scripts/test.sh's torch
# step runs these tests with the peers venv's python and build/pyenv's site-packages appended to
# sys.path inside pytest only, so the server is told where this pytest found xir (--xir-site).
_XIR_SPEC = importlib.util.find_spec("xir")
XIR_SITE = (["--xir-site", str(pathlib.Path(_XIR_SPEC.origin).resolve().parents[1])]
            if _XIR_SPEC and _XIR_SPEC.origin else [])


def ask(args, *reqs):
    """Sends the requests to a fresh server; returns its answers (one JSON object per line)."""
    lines = "".join(json.dumps(r) + "\n" for r in reqs) + '{"op":"quit"}\n'
    r = subprocess.run([sys.executable, str(SERVER), *args], input=lines, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_hello_names_the_process_peers():
    (h,) = ask(XIR_SITE, {"op": "hello"})
    assert h["ok"] and h["peers"] == ["xir_python"] and "result allocated per call" in h["detail"]


def test_missing_package_is_a_reason_not_a_dead_pipe(tmp_path):
    h, p = ask(["--xir-pyenv", str(tmp_path)], {"op": "hello"}, {"op": "prepare", "kernel": "rmsnorm"})
    assert h == {"ok": False, "error": f"no xir package in {tmp_path} (lib/python{sys.version_info.major}."
                 f"{sys.version_info.minor}/site-packages/xir): run bash scripts/setup_python.sh BUILD"}
    assert not p["ok"] and "no xir package" in p["error"]
    # a package for another Python version: said so
    (tmp_path / "lib" / "python3.1" / "site-packages" / "xir").mkdir(parents=True)
    (h,) = ask(["--xir-pyenv", str(tmp_path)], {"op": "hello"})
    assert not h["ok"] and "is for python3.1, this Python is" in h["error"]


def test_xir_site_without_the_package_is_a_reason(tmp_path):
    (h,) = ask(["--xir-site", str(tmp_path)], {"op": "hello"})
    assert h == {"ok": False, "error": f"no xir package in {tmp_path} (--xir-site: the directory "
                 "that holds xir/__init__.py)"}


@pytest.mark.skipif(HAVE_TORCH, reason="this Python has torch")
def test_missing_torch_is_a_reason():
    (h,) = ask([*XIR_SITE, "--torch"], {"op": "hello"})
    assert not h["ok"] and h["error"].startswith("torch (peers/ext/torch_peer.py in ")
    assert "No module named 'torch'" in h["error"]


def test_prepare_routes_by_peer(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    w = np.ones(3, np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    prep = {"op": "prepare", "kernel": "rmsnorm", "dims": {"R": 2, "C": 3}, "scalars": {"eps": 1e-5},
            "inputs": {"x": str(tmp_path / "x.npy"), "w": str(tmp_path / "w.npy")}, "output": "y"}
    out = tmp_path / "y.npy"
    a = ask(XIR_SITE, dict(prep, case="a", peer="xir_python"), dict(prep, case="b"),
            dict(prep, case="c", peer="torch_eager_py"), dict(prep, case="d", peer="onednn"),
            {"op": "run", "case": "a", "n": 3}, {"op": "output", "case": "b", "path": str(out)},
            {"op": "run", "case": "c", "n": 1})
    assert a[0] == {"ok": True} and a[1] == {"ok": True}
    assert not a[2]["ok"] and "torch_eager_py needs --torch" in a[2]["error"]
    assert not a[3]["ok"] and "does not answer for peer 'onednn'" in a[3]["error"]
    assert a[4]["ok"] and a[4]["ns"] > 0 and a[5] == {"ok": True}
    assert not a[6]["ok"] and "no prepared case 'c'" in a[6]["error"]
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.load(out), ref, rtol=1e-5, atol=1e-6)


def test_every_kernel_through_the_peer_member():
    """The peers' smoke driver with "peer": "xir_python" and case ids (prepared first, run in
    reverse): every kernel against fp64 NumPy."""
    r = subprocess.run([sys.executable, str(SMOKE), "--kernels", "all", "--n", "2", "--case-ids",
                        "--peer", "xir_python", "--", sys.executable, str(SERVER), *XIR_SITE],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(" ok\n") >= 9


@pytest.mark.skipif(not HAVE_TORCH, reason="no torch in this Python (the peers venv has it)")
def test_torch_eager_in_the_same_process():
    r = subprocess.run([sys.executable, str(SMOKE), "--kernels", "all", "--n", "2", "--case-ids",
                        "--peer", "torch_eager_py", "--", sys.executable, str(SERVER), *XIR_SITE,
                        "--torch", "--threads", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"peers": ["xir_python", "torch_eager_py"]' in r.stdout
