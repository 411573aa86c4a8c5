"""bookkit.measure.portability: each job runs under its environment's numeric settings
with a torch.compile cache of its own (a shared one crashed Chapter 11, see job_env)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bookkit.measure import portability


def test_job_env_sets_the_environment_and_nothing_inherited(monkeypatch, tmp_path):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/shared-cache")
    native = portability.job_env("native", tmp_path / "a")
    assert "ATEN_CPU_CAPABILITY" not in native and "OMP_NUM_THREADS" not in native
    assert native["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "a")
    avx2 = portability.job_env("avx2-aten-1thread", tmp_path / "b")
    assert (avx2["ATEN_CPU_CAPABILITY"], avx2["MKL_ENABLE_INSTRUCTIONS"]) == (
        "avx2",
        "AVX2",
    )
    assert avx2["OMP_NUM_THREADS"] == "1"
    assert avx2["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "b")


def test_every_job_compiles_into_an_empty_cache_of_its_own(monkeypatch):
    """Two jobs (notebooks and unit tests) never see the same compile cache, and each
    starts empty: a kernel compiled under one environment cannot reach another."""
    seen: list[Path] = []

    def fake_run(args, env, **kwargs):
        cache = Path(env["TORCHINDUCTOR_CACHE_DIR"])
        assert not cache.exists() or not any(cache.iterdir())
        seen.append(cache)
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "kernel.so").write_text("compiled")  # what a job would leave behind
        return subprocess.CompletedProcess(args, 0, stdout="", stderr="")

    monkeypatch.setattr(portability.subprocess, "run", fake_run)
    notebook = Path("notebooks/11_rope_at_speed.ipynb")
    for environment in ("native-1thread", "avx2-aten-1thread"):
        portability.run_notebook(environment, notebook)
        portability.run_unit_tests(environment)
    assert len(seen) == 4 and len(set(seen)) == 4
