"""How ``bench api`` times a call: p50/p99 of wall and CPU time, and the garbage collector's share."""

from __future__ import annotations

import gc
import statistics
import time


class _Collections:
    """Milliseconds spent in the cyclic garbage collector, per generation, while it is entered."""

    def __init__(self):
        self.ms = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.ms[info["generation"]] += (time.perf_counter() - self._started) * 1000

    def __enter__(self):
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self)


def _p99(samples: list[float]) -> float:
    return samples[min(len(samples) - 1, int(0.99 * len(samples)))]


def timed(call, repeat: int) -> dict:
    """p50/p99 over ``repeat`` warm calls; the first (cold: imports, template loading) is reported apart.
    Beside the wall-clock figures: the thread's CPU time per call (what a busy machine's other
    processes do not add) and the milliseconds the garbage collector took in all the calls together,
    by generation (a full collection, generation 2, walks the whole heap)."""
    started = time.perf_counter()
    call()
    first = (time.perf_counter() - started) * 1000
    samples, cpu, size = [], [], 0
    with _Collections() as collections:
        for _ in range(repeat):
            started, cpu_started = time.perf_counter(), time.thread_time()
            response = call()
            samples.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - cpu_started) * 1000)
            if response.status_code >= 400:
                raise SystemExit(f"error: {response.status_code} {response.content[:300]!r}")
            size = len(response.content)
    samples.sort()
    cpu.sort()
    return {
        "first_ms": round(first, 1),
        "p50_ms": round(statistics.median(samples), 1),
        "p99_ms": round(_p99(samples), 1),
        "cpu_p50_ms": round(statistics.median(cpu), 1),
        "cpu_p99_ms": round(_p99(cpu), 1),
        "gc_ms": [round(ms, 1) for ms in collections.ms],
        "bytes": size,
    }
