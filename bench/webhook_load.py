"""The webhook benchmark's load generator: closed-loop keep-alive TLS connections in their own
processes, taking turns between targets in short slices (``Schedule``). ``bench/webhook.py`` starts the
server and reports; this module only sends requests and times the answers."""

from __future__ import annotations

import array
import asyncio
import multiprocessing
import os
import ssl
import time
from typing import Any

SERVICE, NAMESPACE = "gangweb-webhook", "gangweb-system"
SERVER_NAME = f"{SERVICE}.{NAMESPACE}.svc"  # what the benchmark's certificates name


def http_requests(path: str, bodies: list[bytes]) -> list[bytes]:
    head = f"POST {path}?timeout=5s HTTP/1.1\r\nHost: {SERVER_NAME}:443\r\nContent-Type: application/json\r\n"
    return [f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body for body in bodies]


class Schedule:
    """Which target every connection sends to, by time: the targets take turns in short slices.

    Slices are short (default 0.2 s) so that the echo view and each webhook path run under the same
    machine conditions; on a shared 2-core machine the speed drifts by tens of percent within seconds,
    which longer per-target phases turned into noise larger than the differences measured. The order
    rotates every cycle, so no target always follows another.
    """

    def __init__(self, names: list[str], start_at: float, slice_seconds: float, cycles: int) -> None:
        self.names, self.start_at, self.slice, self.cycles = names, start_at, slice_seconds, cycles
        self.stop_at = start_at + slice_seconds * len(names) * cycles

    def at(self, now: float) -> tuple[int, int]:
        """(target index, cycle) of the slice ``now`` falls in; cycle -1 during the warm-up."""
        step = int((now - self.start_at) // self.slice)
        cycle, position = divmod(step, len(self.names))
        return (position + cycle) % len(self.names), cycle if now >= self.start_at else -1


class Connection(asyncio.Protocol):
    """One keep-alive connection of the closed loop: send, wait for the whole answer, send again."""

    def __init__(self, requests: list[list[bytes]], offset: int, run: Run) -> None:
        self.requests, self.next, self.run = requests, offset, run
        self.buffer = b""
        self.sent_at = 0.0
        self.sent_slice = (0, -1)
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self._send(time.monotonic())

    def _send(self, now: float) -> None:
        self.sent_slice = target, _ = self.run.schedule.at(now)
        bodies = self.requests[target]
        request = bodies[self.next % len(bodies)]
        self.next += 1
        self.sent_at = now
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buffer[:end].lower()
        start = head.find(b"content-length:")
        line_end = head.find(b"\r\n", start)
        length = int(head[start + 15 : line_end if line_end >= 0 else len(head)])
        if len(self.buffer) < end + 4 + length:
            return
        now = time.monotonic()
        ok = self.buffer[9:12] == b"200"
        self.buffer = self.buffer[end + 4 + length :]
        self.run.record(self.sent_slice, now - self.sent_at, ok)
        if now < self.run.schedule.stop_at:
            self._send(now)
        else:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class Run:
    """What one load-generator process saw: per target, its latencies and answers per cycle."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        targets = len(schedule.names)
        self.latencies = [array.array("d") for _ in range(targets)]
        self.answered = [[0] * schedule.cycles for _ in range(targets)]
        self.errors = [0] * targets

    def record(self, sent_slice: tuple[int, int], latency: float, ok: bool) -> None:
        target, cycle = sent_slice
        if not 0 <= cycle < self.schedule.cycles:
            return  # warm-up
        if ok:
            self.latencies[target].append(latency)
            self.answered[target][cycle] += 1
        else:
            self.errors[target] += 1

    def wire(self) -> tuple[list[bytes], list[list[int]], list[int]]:
        """What a load-generator process sends back to the parent (``add`` takes it)."""
        return [latencies.tobytes() for latencies in self.latencies], self.answered, self.errors

    def add(self, wired: tuple[list[bytes], list[list[int]], list[int]]) -> None:
        raw, answered, errors = wired
        for target in range(len(self.schedule.names)):
            self.latencies[target].frombytes(raw[target])
            self.answered[target] = [
                a + b for a, b in zip(self.answered[target], answered[target], strict=True)
            ]
            self.errors[target] += errors[target]


async def drive(
    port: int, ca_pem: str, requests: list[list[bytes]], connections: int, schedule: Schedule
) -> Run:
    loop = asyncio.get_running_loop()
    context = ssl.create_default_context(cadata=ca_pem)
    run = Run(schedule)
    protocols = []
    for index in range(connections):
        _, protocol = await loop.create_connection(
            lambda index=index: Connection(requests, index * 7, run),
            "127.0.0.1",
            port,
            ssl=context,
            server_hostname=SERVER_NAME,
        )
        protocols.append(protocol)
    timeout = schedule.stop_at - time.monotonic() + 30
    await asyncio.wait_for(asyncio.gather(*(p.closed for p in protocols)), timeout=timeout)
    return run


def client_process(
    pipe: Any,
    port: int,
    ca_pem: str,
    requests: list[list[bytes]],
    connections: int,
    schedule: Schedule,
    cpus: set[int] | None,
) -> None:
    import uvloop

    if cpus:
        os.sched_setaffinity(0, cpus)

    run = uvloop.run(drive(port, ca_pem, requests, connections, schedule))
    pipe.send(run.wire())
    pipe.close()


def load(
    port: int,
    ca_pem: str,
    requests: list[list[bytes]],
    connections: int,
    clients: int,
    schedule: Schedule,
    client_cpus: list[set[int]] | None = None,
) -> Run:
    """Run the load generator processes through ``schedule``; their results, summed."""
    context = multiprocessing.get_context("fork")
    workers = []
    for index in range(clients):
        receiver, sender = context.Pipe(duplex=False)
        share = connections // clients + (1 if index < connections % clients else 0)
        cpus = client_cpus[index] if client_cpus else None
        process = context.Process(
            target=client_process, args=(sender, port, ca_pem, requests, share, schedule, cpus)
        )
        process.start()
        workers.append((process, receiver))
    total = Run(schedule)
    for process, receiver in workers:
        try:
            total.add(receiver.recv())
        except EOFError:
            raise RuntimeError("a load generator process failed (see its traceback above)") from None
        finally:
            process.join()
    return total


def cpu_plan(workers: int, clients: int) -> tuple[set[int], list[set[int]]] | None:
    """CPUs for the server's workers and for each load generator, when there are enough to give each
    its own: else None and the kernel schedules them. Pinned, the server and the load generator never
    share a core by chance, which otherwise halves the throughput of whole fractions of a second."""
    available = sorted(os.sched_getaffinity(0))
    if workers + clients > len(available):
        return None
    return set(available[:workers]), [{cpu} for cpu in available[workers : workers + clients]]
