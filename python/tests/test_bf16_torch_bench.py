"""python/bench/bf16_torch.py (xir's bf16 rmsnorm / layernorm against torch eager): its --check
mode validates every xir output against fp64 NumPy, and its check rejects a wrong output. Runs
without torch (the test environment has none); the torch part is skipped when torch is missing."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "bench" / "bf16_torch.py"


def _load():
    spec = importlib.util.spec_from_file_location("bf16_torch", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_check_mode_validates_outputs():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check", "--shapes", "3,1000;17,65"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    # xir (NumPy) and xir_c (the C launch) for three groups at two shapes, at least
    assert "every xir output within its bound" in r.stdout
    assert r.stdout.count("rmsnorm_bf16 17x65 xir") >= 2 and "layernorm_bf16 3x1000 xir_c" in r.stdout


def test_check_rejects_a_wrong_output():
    b = _load()
    cases, errs = b.check([(5, 130)])
    assert {c.group for c in cases} == {"rmsnorm_bf16", "layernorm_bf16", "rmsnorm_f32"}
    assert all(e <= 1.0 for e in errs.values()), errs
    c = next(c for c in cases if c.group == "rmsnorm_bf16" and c.variant == "xir")
    assert c.last.dtype == c.dtype and c.last.dtype.itemsize == 2  # bf16 result
    wrong = c.last.copy()
    wrong.view(np.uint16)[...] += 1  # every element one bf16 ulp further from zero
    c.last = wrong
    with pytest.raises(AssertionError, match="rmsnorm_bf16 5x130 xir: error"):
        b.check_cases(cases, "(test)")


def test_dlpack_path_matches_numpy_path_if_torch():
    # XIR_REQUIRE_TORCH=1 (scripts/test.sh's torch step): a missing torch fails instead of skipping
    torch = __import__("torch") if os.environ.get("XIR_REQUIRE_TORCH") == "1" else pytest.importorskip("torch")
    b = _load()
    cases, _ = b.check([(3, 1000)], ("rmsnorm_bf16",), torch)
    by = {c.variant: c for c in cases}
    assert isinstance(by["xir_dl"].last, torch.Tensor) and by["xir_dl"].last.dtype == torch.bfloat16
    assert np.array_equal(b.as_numpy(by["xir_dl"].last).view(np.uint16), by["xir"].last.view(np.uint16))
